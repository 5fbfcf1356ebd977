//! Small helpers shared by the slicers.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextKind, Levels, ScoredItem, Units};
use crate::slicer::SliceOutcome;

/// Score order of the count-quota slicers: descending under `f64::total_cmp`.
pub(crate) fn score_desc(a: f64, b: f64) -> Ordering {
    b.total_cmp(&a)
}

/// Fails with `duplicate entry for kind "<k>"` when two kinds are equal under ASCII case
/// folding; `<k>` is the later spelling.
pub(crate) fn reject_duplicate_kinds<'a>(
    kinds: impl Iterator<Item = &'a ContextKind>,
) -> Result<()> {
    let mut seen = HashMap::new();
    for kind in kinds {
        if seen.insert(kind, ()).is_some() {
            return Err(Error::SlicerConfig(format!(
                "duplicate entry for kind {kind:?}"
            )));
        }
    }
    Ok(())
}

/// Appends an inner outcome whose positions index `view_positions` to `out`, translating
/// them to the outer input's positions.
pub(crate) fn append_mapped(out: &mut SliceOutcome, inner: SliceOutcome, view_positions: &[usize]) {
    append_forms(
        &mut out.forms,
        out.selected.len(),
        &inner.forms,
        inner.selected.len(),
    );
    out.selected
        .extend(inner.selected.iter().map(|&p| view_positions[p]));
    out.cap_excluded
        .extend(inner.cap_excluded.iter().map(|&p| view_positions[p]));
    out.partial_groups
        .extend(inner.partial_groups.iter().map(|&p| view_positions[p]));
    out.shortfalls.extend(inner.shortfalls);
}

/// Appends `more` (the forms of `more_len` selected positions: empty or parallel) to
/// `forms` (the forms of `len` positions: empty or parallel), keeping the result empty while
/// every form is 0 and parallel once one is not.
pub(crate) fn append_forms(forms: &mut Vec<usize>, len: usize, more: &[usize], more_len: usize) {
    if more.is_empty() {
        if !forms.is_empty() {
            forms.resize(len + more_len, 0);
        }
        return;
    }
    if forms.is_empty() {
        forms.resize(len, 0);
    }
    forms.extend_from_slice(more);
}

/// The tokens of every unit: the sum of its members' tokens (checked). The items are read
/// once, in list order, as the item slicers read them.
pub(crate) fn unit_tokens(items: &[ScoredItem<'_>], units: &Units) -> Result<Vec<i64>> {
    let tokens: Vec<i64> = items.iter().map(|s| s.item.tokens()).collect();
    if units.all_single() {
        return Ok(tokens);
    }
    (0..units.len())
        .map(|u| match units.members(u) {
            [only] => Ok(tokens[*only as usize]),
            members => {
                checked_token_sum(members.iter().map(|&m| tokens[m as usize]), "group tokens")
            }
        })
        .collect()
}

/// The grouped entry point of a slicer that selects among candidates: nothing for an empty
/// input or a target `<= 0`; otherwise `select(unit tokens, target)` picks units (indices,
/// in output order), and each picked unit contributes all its members, in input order.
/// Units with levels go to `select_levels(levels, target)` instead, which picks
/// (unit, level) pairs; each contributes its members at that level's forms.
pub(crate) fn select_units(
    items: &[ScoredItem<'_>],
    units: &Units,
    budget: &ContextBudget,
    select: impl FnOnce(&[i64], i64) -> Result<Vec<usize>>,
    select_levels: impl FnOnce(&Levels, i64) -> Result<Vec<(usize, usize)>>,
) -> Result<SliceOutcome> {
    let target = budget.target_tokens();
    if items.is_empty() || target <= 0 {
        return Ok(SliceOutcome::default());
    }
    if let Some(levels) = units.levels() {
        let picks = select_levels(levels, target)?;
        let (selected, forms) = units.expand_levels(picks);
        let forms = if forms.iter().all(|&f| f == 0) {
            Vec::new()
        } else {
            forms
        };
        return Ok(SliceOutcome {
            selected,
            forms,
            ..SliceOutcome::default()
        });
    }
    let tokens = unit_tokens(items, units)?;
    let picked = select(&tokens, target)?;
    Ok(SliceOutcome {
        selected: units.expand(picked),
        ..SliceOutcome::default()
    })
}
