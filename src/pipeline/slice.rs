//! Stage 5, Slice (spec 02 §6): run the slicer on the sorted candidates within the effective
//! budget, re-associate by position in Sort order (decision D2 in docs/decisions.md), and classify
//! every candidate the slicer left out (02 §6.4, decisions D4, D5, D10).
//!
//! With groups (`docs/groups.md`) the slicer receives the candidates' units and selects
//! whole units; the exclusion rule of 02 §6.4 is applied to a unit as one candidate (its
//! tokens, its members' kinds), and the first member of an excluded group (input order)
//! carries that reason while the others name it. With variants (`docs/variants.md`) the
//! units have levels, the slicer chooses one per selected unit, and the cause of every
//! downgrade is recorded for Place.

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::model::{ContextBudget, ContextItem, ContextKind, GroupValue, ScoredItem, Units};
use crate::pipeline::forms::{slice_cause, RunForms};
use crate::pipeline::groups::{exclude_member, RunGroups};
use crate::pipeline::score::{scored_view, Candidate};
use crate::slicer::{greedy_select_columns, GreedySlice, SliceOutcome, Slicer};

/// What the pipeline knows about the pinned items when it explains Slice exclusions.
pub(super) struct PinnedContext<'a> {
    pub tokens: i64,
    pub first_content: Option<&'a str>,
}

impl<'a> PinnedContext<'a> {
    /// The context of the pinned items `pinned` (input positions into `items`) with
    /// `tokens` tokens in all.
    pub(super) fn of(items: &'a [ContextItem], pinned: &[usize], tokens: i64) -> Self {
        Self {
            tokens,
            first_content: pinned.first().map(|&i| items[i].content()),
        }
    }
}

/// What the extensions of a run bring to Slice: its groups and its forms.
pub(super) struct Extensions<'r, 'a> {
    pub groups: Option<&'r mut RunGroups<'a>>,
    pub forms: Option<&'r mut RunForms>,
    /// How group values (and group level values) are computed.
    pub mode: GroupValue,
}

pub(super) fn slice<C: Collector>(
    slicer: &dyn Slicer,
    items: &[ContextItem],
    sorted: &[Candidate],
    budget: &ContextBudget,
    pinned: &PinnedContext<'_>,
    extensions: Extensions<'_, '_>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    collector.begin_stage();
    let effective = budget.effective(pinned.tokens);
    let sliced = slice_within(
        slicer, items, sorted, budget, &effective, pinned, extensions, collector,
    )?;
    collector.end_stage(PipelineStage::Slice, sliced.len());
    Ok(sliced)
}

/// The Slice stage within an effective budget the caller computed (the prefix extension
/// slices within what its kept prefix leaves), without the stage event.
#[allow(clippy::too_many_arguments)]
pub(super) fn slice_within<C: Collector>(
    slicer: &dyn Slicer,
    items: &[ContextItem],
    sorted: &[Candidate],
    budget: &ContextBudget,
    effective: &ContextBudget,
    pinned: &PinnedContext<'_>,
    extensions: Extensions<'_, '_>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    let sliced = match extensions {
        Extensions {
            groups: None,
            forms: None,
            ..
        } => slice_items(slicer, items, sorted, budget, effective, pinned, collector)?,
        Extensions {
            groups,
            forms,
            mode,
        } => {
            let run = SliceRun {
                slicer,
                items,
                sorted,
                view: &scored_view(items, sorted),
                budget,
                effective,
                pinned,
            };
            run.units(groups, forms, mode, collector)?
        }
    };
    Ok(sliced)
}

/// The Slice stage without groups. [`GreedySlice`] is run over the candidates' own
/// tokens and scores (the same selection, without reading the items in score order);
/// every other slicer gets the items.
fn slice_items<C: Collector>(
    slicer: &dyn Slicer,
    items: &[ContextItem],
    sorted: &[Candidate],
    budget: &ContextBudget,
    effective: &ContextBudget,
    pinned: &PinnedContext<'_>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    let mut selected = vec![false; sorted.len()];
    let (count, shortfalls) = if slicer.as_any().is::<GreedySlice>() {
        let (tokens, score) = (|p: usize| sorted[p].tokens, |p: usize| sorted[p].score);
        let count = greedy_select_columns(sorted.len(), tokens, score, effective, &mut selected)?;
        (count, Vec::new())
    } else {
        let outcome = if sorted.is_empty() {
            Default::default()
        } else {
            slicer.slice(&scored_view(items, sorted), effective)?
        };
        mark_selection(&outcome.selected, &mut selected)?;
        (outcome.selected.len(), outcome.shortfalls)
    };
    let sliced = kept(sorted, &selected, count);
    if C::ENABLED {
        let tokens = |index: usize| items[index].tokens();
        let explainer =
            SliceExplainer::new(slicer, items, &sliced, tokens, budget, effective, pinned);
        for (candidate, _) in sorted.iter().zip(&selected).filter(|(_, &keep)| !keep) {
            let reason = explainer.reason(&items[candidate.index]);
            collector.exclude(
                PipelineStage::Slice,
                candidate.index,
                candidate.score,
                reason,
            );
        }
        collector.shortfalls(shortfalls);
    }
    Ok(sliced)
}

/// What the grouped Slice stage works with.
struct SliceRun<'r, 'a> {
    slicer: &'r dyn Slicer,
    items: &'a [ContextItem],
    sorted: &'r [Candidate],
    view: &'r [ScoredItem<'a>],
    budget: &'r ContextBudget,
    effective: &'r ContextBudget,
    pinned: &'r PinnedContext<'a>,
}

impl SliceRun<'_, '_> {
    /// The Slice stage with groups or variants: the slicer selects whole units, each at
    /// one of its levels; a group it returned in part is dropped (and noted); every
    /// left-out member is explained, every downgrade's cause recorded.
    fn units<C: Collector>(
        &self,
        mut table: Option<&mut RunGroups<'_>>,
        mut forms: Option<&mut RunForms>,
        mode: GroupValue,
        collector: &mut C,
    ) -> Result<Vec<Candidate>> {
        let sorted = self.sorted;
        let mut units = match table.as_deref() {
            Some(t) => t.units(
                sorted.len(),
                |p| sorted[p].index,
                |p| sorted[p].score,
                |g| t.value(g),
            ),
            None => Units::singles(sorted.len(), |p| sorted[p].score),
        };
        if let Some(f) = forms.as_deref() {
            let (index, score) = (|p: usize| sorted[p].index, |p: usize| sorted[p].score);
            f.set_levels(&mut units, index, score, mode)?;
        }
        let mut outcome = if self.view.is_empty() {
            SliceOutcome::default()
        } else {
            self.slicer
                .slice_grouped(self.view, &units, self.effective)?
        };
        if !outcome.forms.is_empty() && outcome.forms.len() != outcome.selected.len() {
            return Err(Error::Callback(format!(
                "slicer returned {} forms for {} positions",
                outcome.forms.len(),
                outcome.selected.len()
            )));
        }
        // Whatever the slicer, only whole groups go on.
        let split = units.keep_whole(&mut outcome.selected, &mut outcome.forms);
        outcome.partial_groups.extend(split);
        let selected = selection_mask(&outcome.selected, sorted.len())?;
        let mut dropped = vec![false; sorted.len()];
        for &p in &outcome.partial_groups {
            if let Some(flag) = dropped.get_mut(p) {
                *flag = true;
                if let Some(table) = table.as_deref_mut() {
                    if let Some(g) = table.group_of(sorted[p].index) {
                        table.set_partial(g);
                    }
                }
            }
        }
        let sliced = kept(sorted, &selected, outcome.selected.len());
        match forms.as_deref_mut() {
            Some(f) => self.record_forms(&units, &outcome, &sliced, f)?,
            None => reject_forms(&outcome, sorted)?,
        }
        if C::ENABLED {
            let run_forms = forms.as_deref();
            let explain = Explain {
                units: &units,
                selected: &selected,
                dropped: &dropped,
                sliced: &sliced,
                forms: run_forms,
            };
            self.explain(&explain, table, collector);
            collector.shortfalls(outcome.shortfalls);
        }
        Ok(sliced)
    }

    /// Checks the forms the slicer chose (each a kept form of its item, the members of a
    /// group at one level), records them, and records the cause of every downgrade.
    fn record_forms(
        &self,
        units: &Units,
        outcome: &SliceOutcome,
        sliced: &[Candidate],
        forms: &mut RunForms,
    ) -> Result<()> {
        let sorted = self.sorted;
        let levels = units
            .levels()
            .expect("units of a run with forms have levels");
        // The index of each selected position's form among its kept forms.
        let kept_index = |i: usize, p: usize| -> Result<usize> {
            let (index, form) = (sorted[p].index, outcome.form(i));
            if let Some(k) = levels.level_of(p, form) {
                return Ok(k);
            }
            let count = self.items[index].form_count();
            Err(Error::Callback(if form >= count {
                format!("slicer chose form {form} of item {index}, which has {count} forms")
            } else {
                format!(
                    "slicer chose form {form} of item {index}, which was pruned (another form \
                     has no more tokens and at least its quality)"
                )
            }))
        };
        if units.all_single() {
            // An item's level is the index of its form.
            for (i, &p) in outcome.selected.iter().enumerate() {
                let level = kept_index(i, p)?;
                forms.choose(sorted[p].index, outcome.form(i), level);
            }
        } else {
            // A unit's level is the highest of its members' indices; each member must then
            // use its form at that level.
            let mut unit_level: Vec<usize> = vec![0; units.len()];
            for (i, &p) in outcome.selected.iter().enumerate() {
                let u = units.unit_of(p);
                unit_level[u] = unit_level[u].max(kept_index(i, p)?);
            }
            for (i, &p) in outcome.selected.iter().enumerate() {
                let level = unit_level[units.unit_of(p)];
                let form = outcome.form(i);
                if units.form_at(p, level) != form {
                    return Err(Error::Callback(format!(
                        "slicer chose forms for the members of item {}'s group that are not \
                         one level (a group degrades as one)",
                        sorted[p].index
                    )));
                }
                forms.choose(sorted[p].index, form, level);
            }
        }
        // One `available` for the run (D5), from the chosen forms' tokens.
        let used = sliced.iter().fold(0i64, |acc, c| {
            acc.saturating_add(forms.tokens(self.items, c.index))
        });
        let available = self.effective.target_tokens().saturating_sub(used);
        forms.set_available(false, available);
        for &p in &outcome.selected {
            let index = sorted[p].index;
            let level = forms.level(index);
            if level > 0 && forms.chosen(index) != 0 {
                let u = units.unit_of(p);
                let (full, chosen) = (levels.tokens(u, 0), levels.tokens(u, level));
                forms.set_downgrade(index, slice_cause(full, chosen, available));
            }
        }
        Ok(())
    }

    /// Records a reason for every position not selected, in Sort order. A unit's lead is
    /// its first member in input order, or — for a group the slicer returned in part — its
    /// first member the slicer left out; the lead gets the 02 §6.4 reason (of the unit, or
    /// of that item for a partial group), the other members `GroupExcluded`. With variants
    /// the rule reads the tokens of the unit's cheapest level: the least it could cost.
    fn explain<C: Collector>(
        &self,
        e: &Explain<'_>,
        mut table: Option<&mut RunGroups<'_>>,
        collector: &mut C,
    ) {
        let items = self.items;
        let tokens = |index: usize| match e.forms {
            Some(f) => f.tokens(items, index),
            None => items[index].tokens(),
        };
        let explainer = SliceExplainer::new(
            self.slicer,
            items,
            e.sliced,
            tokens,
            self.budget,
            self.effective,
            self.pinned,
        );
        let units = e.units;
        let mut leads: Vec<Option<(usize, ExclusionReason)>> = vec![None; units.len()];
        for (p, c) in self.sorted.iter().enumerate() {
            if e.selected[p] {
                continue;
            }
            let u = units.unit_of(p);
            if leads[u].is_none() {
                let members = units.members(u);
                let partial = members.iter().any(|&m| e.dropped[m as usize]);
                let lead_pos = if partial {
                    let left_out = members.iter().find(|&&m| !e.dropped[m as usize]);
                    *left_out.unwrap_or(&members[0]) as usize
                } else {
                    members[0] as usize
                };
                let cheapest = units.level_count(u) - 1;
                let reason = if partial || (members.len() == 1 && cheapest == 0) {
                    explainer.reason(&items[self.sorted[lead_pos].index])
                } else {
                    let tokens = units.level_tokens(u, cheapest).unwrap_or_else(|| {
                        members.iter().fold(0i64, |acc, &m| {
                            acc.saturating_add(self.view[m as usize].item.tokens())
                        })
                    });
                    let kinds: Vec<&ContextKind> = members
                        .iter()
                        .map(|&m| self.view[m as usize].item.kind())
                        .collect();
                    explainer.unit_reason(tokens, &kinds)
                };
                leads[u] = Some((self.sorted[lead_pos].index, reason));
            }
            let (lead, reason) = leads[u].as_ref().expect("set above");
            let stage = PipelineStage::Slice;
            match table.as_deref_mut() {
                Some(table) => exclude_member(
                    collector, table, items, stage, c.index, c.score, *lead, reason,
                ),
                None => collector.exclude(stage, c.index, c.score, reason.clone()),
            }
        }
    }
}

/// What [`SliceRun::explain`] reads about the slicer's outcome.
struct Explain<'e> {
    units: &'e Units,
    /// Per Sort position: selected, and dropped as part of a partial group.
    selected: &'e [bool],
    dropped: &'e [bool],
    sliced: &'e [Candidate],
    forms: Option<&'e RunForms>,
}

/// Without forms in the run, a slicer may only choose full forms.
fn reject_forms(outcome: &SliceOutcome, sorted: &[Candidate]) -> Result<()> {
    match outcome
        .forms
        .iter()
        .zip(&outcome.selected)
        .find(|(&f, _)| f != 0)
    {
        None => Ok(()),
        Some((&form, &p)) => Err(Error::Callback(format!(
            "slicer chose form {form} of item {}, but this run uses every item in full",
            sorted[p].index
        ))),
    }
}

/// The candidates whose mask entry is set, in Sort order (decision D2 in docs/decisions.md).
/// `count` is the number of set entries (the slicer's distinct positions), so the list is
/// allocated once.
///
/// Without a branch on the mask (a selection mixes kept and left-out candidates
/// unpredictably): every candidate is copied to the next free slot, and only a kept one
/// moves the slot on. The list has one spare slot for the copies after the last kept
/// candidate, cut off at the end.
pub(super) fn kept(sorted: &[Candidate], mask: &[bool], count: usize) -> Vec<Candidate> {
    let mut kept = Vec::new();
    append_kept(sorted, mask, count, &mut kept);
    kept
}

/// [`kept`], appended to `out`.
pub(super) fn append_kept(
    sorted: &[Candidate],
    mask: &[bool],
    count: usize,
    out: &mut Vec<Candidate>,
) {
    debug_assert_eq!(mask.iter().filter(|&&keep| keep).count(), count);
    let Some(&first) = sorted.first() else {
        return;
    };
    let start = out.len();
    out.resize(start + count + 1, first);
    let kept = &mut out[start..];
    let mut next = 0;
    for (candidate, &keep) in sorted.iter().zip(mask) {
        kept[next] = *candidate;
        next = (next + usize::from(keep)).min(count);
    }
    out.truncate(start + count);
}

/// Turns the slicer's positions into a membership mask, rejecting positions out of range
/// or repeated (a custom slicer's mistake must not corrupt the run).
fn selection_mask(positions: &[usize], len: usize) -> Result<Vec<bool>> {
    let mut mask = vec![false; len];
    mark_selection(positions, &mut mask)?;
    Ok(mask)
}

/// Sets the slicer's positions in `mask` (all false on entry), rejecting positions out of
/// range or repeated.
fn mark_selection(positions: &[usize], mask: &mut [bool]) -> Result<()> {
    let len = mask.len();
    for &pos in positions {
        match mask.get_mut(pos) {
            None => {
                return Err(Error::Callback(format!(
                    "slicer returned position {pos}, but only {len} items were offered"
                )))
            }
            Some(seen) if *seen => {
                return Err(Error::Callback(format!(
                    "slicer returned position {pos} twice"
                )))
            }
            Some(seen) => *seen = true,
        }
    }
    Ok(())
}

/// The after-the-fact exclusion rule of 02 §6.4: PinnedOverride, then CountCapExceeded,
/// then BudgetExceeded with one `available_tokens` value for the whole run.
struct SliceExplainer<'a> {
    pinned: &'a PinnedContext<'a>,
    effective_target: i64,
    pinned_override_ceiling: i64,
    available: i64,
    caps: &'a [(ContextKind, usize)],
    kind_counts: FastMap<&'a ContextKind, usize>,
}

impl<'a> SliceExplainer<'a> {
    /// `tokens(index)` is the tokens of the form selected for input position `index`.
    fn new(
        slicer: &'a dyn Slicer,
        items: &'a [ContextItem],
        sliced: &[Candidate],
        tokens: impl Fn(usize) -> i64,
        budget: &ContextBudget,
        effective: &ContextBudget,
        pinned: &'a PinnedContext<'a>,
    ) -> Self {
        let effective_target = effective.target_tokens();
        // Saturating, not checked: when this sum does not fit, Place fails with
        // TokenOverflow on the merged sum (a superset of non-negative tokens), exactly as
        // an untraced run does; diagnostics must not fail the run first with another error.
        let sliced_tokens = sliced
            .iter()
            .fold(0i64, |acc, c| acc.saturating_add(tokens(c.index)));
        let caps = slicer.count_caps();
        let mut kind_counts = FastMap::default();
        if !caps.is_empty() {
            for c in sliced {
                *kind_counts.entry(items[c.index].kind()).or_insert(0) += 1;
            }
        }
        Self {
            pinned,
            effective_target,
            pinned_override_ceiling: budget.target_tokens() - budget.output_reserve(),
            available: effective_target - sliced_tokens,
            caps,
            kind_counts,
        }
    }

    fn reason(&self, item: &ContextItem) -> ExclusionReason {
        self.unit_reason(item.tokens(), &[item.kind()])
    }

    /// The rule for a candidate of `tokens` tokens whose members have `kinds` (one kind for
    /// an item): a cap is reached when the selected count of a member's kind plus the
    /// candidate's members of that kind would exceed the cap (for one item: the count is
    /// at or over the cap); the first such member's kind is reported.
    fn unit_reason(&self, tokens: i64, kinds: &[&ContextKind]) -> ExclusionReason {
        if self.pinned.tokens > 0
            && tokens > self.effective_target
            && tokens <= self.pinned_override_ceiling
        {
            let displaced_by = self.pinned.first_content.unwrap_or_default().to_owned();
            return ExclusionReason::PinnedOverride { displaced_by };
        }
        if tokens <= self.effective_target {
            for kind in kinds {
                let Some(&(_, cap)) = self.caps.iter().find(|(k, _)| k == *kind) else {
                    continue;
                };
                let count = self.kind_counts.get(*kind).copied().unwrap_or(0);
                let adding = kinds.iter().filter(|k| **k == *kind).count();
                if count + adding > cap {
                    return ExclusionReason::CountCapExceeded {
                        kind: kind.as_str().to_owned(),
                        cap: cap as u64,
                        count: count as u64,
                    };
                }
            }
        }
        ExclusionReason::BudgetExceeded {
            item_tokens: tokens,
            available_tokens: self.available,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Rng;

    #[test]
    fn kept_is_the_filter_of_the_mask() {
        for seed in 0..300u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(if seed % 3 == 0 { 5000 } else { 20 });
            let sorted: Vec<Candidate> = (0..n)
                .map(|i| Candidate {
                    index: rng.below(n.max(1)),
                    score: i as f64,
                    tokens: rng.range(0, 100),
                })
                .collect();
            let share = rng.unit();
            let mask: Vec<bool> = (0..n).map(|_| rng.chance(share)).collect();
            let want: Vec<(usize, i64)> = sorted
                .iter()
                .zip(&mask)
                .filter(|(_, &keep)| keep)
                .map(|(c, _)| (c.index, c.tokens))
                .collect();
            let got = kept(&sorted, &mask, want.len());
            let got: Vec<(usize, i64)> = got.iter().map(|c| (c.index, c.tokens)).collect();
            assert_eq!(got, want, "seed {seed}");
        }
    }
}
