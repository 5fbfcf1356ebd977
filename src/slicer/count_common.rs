//! The parts CountQuotaSlice and CountConstrainedKnapsackSlice share (spec 04 §5–§7, decision D10
//! in docs/decisions.md): the validated entry set, Phase 1 (commit the required counts), the
//! residual hand-off of Phase 2 and Phase 3 (enforce the caps).

use std::collections::HashMap;

use crate::diagnostics::CountRequirementShortfall;
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::shared::{append_mapped, reject_duplicate_kinds, score_desc};
use crate::slicer::{CountQuotaEntry, ScarcityBehavior, SliceOutcome};

/// A validated list of count quotas with distinct kinds and a kind → entry lookup.
#[derive(Debug, Clone)]
pub(crate) struct CountQuotas {
    entries: Vec<CountQuotaEntry>,
    caps: Vec<(ContextKind, usize)>,
    index: HashMap<ContextKind, usize>,
}

/// What Phase 1 produced.
struct Commits {
    /// Committed positions: entries in configuration order, each kind by score.
    selected: Vec<usize>,
    /// Items of each entry's kind in the result so far; seeds Phase 3 (spec 04 §7.1).
    counts: Vec<usize>,
    /// Requirements not met (Degrade).
    shortfalls: Vec<CountRequirementShortfall>,
}

impl CountQuotas {
    /// Validates that the kinds are distinct under ASCII case folding (decision D10 in
    /// docs/decisions.md).
    pub(crate) fn new(entries: Vec<CountQuotaEntry>) -> Result<Self> {
        reject_duplicate_kinds(entries.iter().map(CountQuotaEntry::kind))?;
        let caps = entries
            .iter()
            .map(|e| (e.kind().clone(), e.cap_count()))
            .collect();
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.kind().clone(), i))
            .collect();
        Ok(Self {
            entries,
            caps,
            index,
        })
    }

    /// The entries in configuration order.
    pub(crate) fn entries(&self) -> &[CountQuotaEntry] {
        &self.entries
    }

    /// `(kind, cap_count)` for every entry, in configuration order.
    pub(crate) fn caps(&self) -> &[(ContextKind, usize)] {
        &self.caps
    }

    /// Runs the three phases. `phase2` selects from the residual items (input order) under
    /// `Budget(room, room)`; it is not called when the room is 0 or nothing is left.
    /// `slicer` names the slicer in the Throw error.
    pub(crate) fn slice<F>(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
        budget: &ContextBudget,
        phase2: F,
    ) -> Result<SliceOutcome>
    where
        F: FnOnce(&[ScoredItem<'_>], &ContextBudget) -> Result<SliceOutcome>,
    {
        let target = budget.target_tokens();
        if items.is_empty() || target <= 0 {
            return Ok(SliceOutcome::default());
        }
        let mut commits = self.commit(slicer, scarcity, items)?;
        let inner = delegate(items, &commits.selected, target, phase2)?;
        let mut out = SliceOutcome {
            selected: std::mem::take(&mut commits.selected),
            shortfalls: std::mem::take(&mut commits.shortfalls),
            cap_excluded: inner.cap_excluded,
        };
        out.shortfalls.extend(inner.shortfalls);
        self.enforce_caps(items, &inner.selected, &mut commits.counts, &mut out);
        Ok(out)
    }

    /// Phase 1: walks the entries in configuration order and commits the top
    /// `require_count` items of each kind by score (ties in input order).
    fn commit(
        &self,
        slicer: &'static str,
        scarcity: ScarcityBehavior,
        items: &[ScoredItem<'_>],
    ) -> Result<Commits> {
        let mut members = self.required_members(items);
        let mut commits = Commits {
            selected: Vec::new(),
            counts: vec![0; self.entries.len()],
            shortfalls: Vec::new(),
        };
        for (e, entry) in self.entries.iter().enumerate() {
            let required = entry.require_count();
            if required == 0 {
                continue;
            }
            let got = top_by_score(items, &mut members[e], required);
            commits.counts[e] = got.len();
            commits.selected.extend_from_slice(got);
            if got.len() < required {
                let kind = entry.kind().as_str().to_string();
                let (satisfied, required) = (got.len() as u64, required as u64);
                if scarcity == ScarcityBehavior::Throw {
                    return Err(Error::CountRequirementUnmet {
                        slicer,
                        kind,
                        satisfied,
                        required,
                    });
                }
                commits.shortfalls.push(CountRequirementShortfall {
                    kind,
                    required_count: required,
                    satisfied_count: satisfied,
                });
            }
        }
        Ok(commits)
    }

    /// For each entry with `require_count > 0`, the positions of its kind in input order.
    fn required_members(&self, items: &[ScoredItem<'_>]) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); self.entries.len()];
        for (pos, scored) in items.iter().enumerate() {
            if let Some(&e) = self.index.get(scored.item.kind()) {
                if self.entries[e].require_count() > 0 {
                    members[e].push(pos);
                }
            }
        }
        members
    }

    /// Phase 3: appends `phase2` (inner output order) to `out.selected`, moving each item
    /// whose kind has reached its cap to `out.cap_excluded` instead.
    fn enforce_caps(
        &self,
        items: &[ScoredItem<'_>],
        phase2: &[usize],
        counts: &mut [usize],
        out: &mut SliceOutcome,
    ) {
        for &pos in phase2 {
            match self.index.get(items[pos].item.kind()) {
                Some(&e) if counts[e] >= self.entries[e].cap_count() => out.cap_excluded.push(pos),
                Some(&e) => {
                    counts[e] += 1;
                    out.selected.push(pos);
                }
                None => out.selected.push(pos),
            }
        }
    }
}

/// The first `r` of `members` (input order, `r >= 1`) by score descending, ties by position:
/// a stable top-r selection. Reorders `members` and returns its prefix.
fn top_by_score<'m>(items: &[ScoredItem<'_>], members: &'m mut [usize], r: usize) -> &'m [usize] {
    // Positions are distinct, so this order is total and an unstable sort is deterministic.
    let order = |a: &usize, b: &usize| score_desc(items[*a].score, items[*b].score).then(a.cmp(b));
    let keep = r.min(members.len());
    if keep < members.len() {
        members.select_nth_unstable_by(keep, order);
    }
    let top = &mut members[..keep];
    top.sort_unstable_by(order);
    top
}

/// Phase 2: runs `phase2` on the items not `committed` (input order) with
/// `Budget(room, room)`, `room = max(0, target − committed tokens)`, unless the room is 0 or
/// nothing is left. The returned positions index `items`.
fn delegate<F>(
    items: &[ScoredItem<'_>],
    committed: &[usize],
    target: i64,
    phase2: F,
) -> Result<SliceOutcome>
where
    F: FnOnce(&[ScoredItem<'_>], &ContextBudget) -> Result<SliceOutcome>,
{
    let committed_tokens = checked_token_sum(
        committed.iter().map(|&p| items[p].item.tokens()),
        "count-quota committed tokens",
    )?;
    let room = target
        .checked_sub(committed_tokens)
        .ok_or_else(|| {
            Error::TokenOverflow("count-quota remaining budget does not fit in 64 bits".into())
        })?
        .max(0);
    let rest = residual(items.len(), committed);
    let mut mapped = SliceOutcome::default();
    if room > 0 && !rest.is_empty() {
        let view: Vec<ScoredItem<'_>> = rest.iter().map(|&p| items[p]).collect();
        let outcome = phase2(&view, &ContextBudget::new(room, room)?)?;
        append_mapped(&mut mapped, outcome, &rest);
    }
    Ok(mapped)
}

/// Positions `0..len` not in `used`, in input order.
fn residual(len: usize, used: &[usize]) -> Vec<usize> {
    let mut taken = vec![false; len];
    for &p in used {
        taken[p] = true;
    }
    (0..len).filter(|&p| !taken[p]).collect()
}
