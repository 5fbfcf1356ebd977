//! Stage 5, Slice (spec 02 §6): run the slicer on the sorted candidates within the effective
//! budget, re-associate by position in Sort order (decision D2 in docs/decisions.md), and classify
//! every candidate the slicer left out (02 §6.4, decisions D4, D5, D10).
//!
//! With groups (`docs/groups.md`) the slicer receives the candidates' units and selects
//! whole units; the exclusion rule of 02 §6.4 is applied to a unit as one candidate (its
//! tokens, its members' kinds), and the first member of an excluded group (input order)
//! carries that reason while the others name it.

use std::collections::HashMap;

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem, ContextKind, ScoredItem, Units};
use crate::pipeline::groups::{exclude_member, RunGroups};
use crate::pipeline::score::Candidate;
use crate::slicer::{SliceOutcome, Slicer};

/// What the pipeline knows about the pinned items when it explains Slice exclusions.
pub(super) struct PinnedContext<'a> {
    pub tokens: i64,
    pub first_content: Option<&'a str>,
}

pub(super) fn slice<C: Collector>(
    slicer: &dyn Slicer,
    items: &[ContextItem],
    sorted: &[Candidate],
    budget: &ContextBudget,
    pinned: &PinnedContext<'_>,
    groups: Option<&mut RunGroups<'_>>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    collector.begin_stage();
    let effective = budget.effective(pinned.tokens);
    let sliced = slice_within(
        slicer, items, sorted, budget, &effective, pinned, groups, collector,
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
    groups: Option<&mut RunGroups<'_>>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    let view: Vec<ScoredItem<'_>> = sorted
        .iter()
        .map(|c| ScoredItem {
            item: &items[c.index],
            score: c.score,
        })
        .collect();
    let sliced = match groups {
        None => slice_items(
            slicer, items, sorted, &view, budget, effective, pinned, collector,
        )?,
        Some(table) => {
            let run = SliceRun {
                slicer,
                items,
                sorted,
                view: &view,
                budget,
                effective,
                pinned,
            };
            run.units(table, collector)?
        }
    };
    Ok(sliced)
}

/// The Slice stage without groups.
#[allow(clippy::too_many_arguments)]
fn slice_items<C: Collector>(
    slicer: &dyn Slicer,
    items: &[ContextItem],
    sorted: &[Candidate],
    view: &[ScoredItem<'_>],
    budget: &ContextBudget,
    effective: &ContextBudget,
    pinned: &PinnedContext<'_>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    let outcome = if view.is_empty() {
        Default::default()
    } else {
        slicer.slice(view, effective)?
    };
    let selected = selection_mask(&outcome.selected, sorted.len())?;
    let sliced = kept(sorted, &selected);
    if C::ENABLED {
        let explainer = SliceExplainer::new(slicer, items, &sliced, budget, effective, pinned);
        for (candidate, _) in sorted.iter().zip(&selected).filter(|(_, &keep)| !keep) {
            let reason = explainer.reason(&items[candidate.index]);
            collector.exclude(
                PipelineStage::Slice,
                candidate.index,
                candidate.score,
                reason,
            );
        }
        collector.shortfalls(outcome.shortfalls);
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
    /// The Slice stage with groups: the slicer selects whole units; a group it returned in
    /// part is dropped (and noted); every left-out member is explained.
    fn units<C: Collector>(
        &self,
        table: &mut RunGroups<'_>,
        collector: &mut C,
    ) -> Result<Vec<Candidate>> {
        let sorted = self.sorted;
        let units = table.units(
            sorted.len(),
            |p| sorted[p].index,
            |p| sorted[p].score,
            |g| table.value(g),
        );
        let mut outcome = if self.view.is_empty() {
            SliceOutcome::default()
        } else {
            self.slicer
                .slice_grouped(self.view, &units, self.effective)?
        };
        // Whatever the slicer, only whole groups go on.
        let split = units.keep_whole(&mut outcome.selected);
        outcome.partial_groups.extend(split);
        let selected = selection_mask(&outcome.selected, sorted.len())?;
        let mut dropped = vec![false; sorted.len()];
        for &p in &outcome.partial_groups {
            if let Some(flag) = dropped.get_mut(p) {
                *flag = true;
                if let Some(g) = table.group_of(sorted[p].index) {
                    table.set_partial(g);
                }
            }
        }
        let sliced = kept(sorted, &selected);
        if C::ENABLED {
            self.explain(&units, &selected, &dropped, &sliced, table, collector);
            collector.shortfalls(outcome.shortfalls);
        }
        Ok(sliced)
    }

    /// Records a reason for every position not selected, in Sort order. A unit's lead is
    /// its first member in input order, or — for a group the slicer returned in part — its
    /// first member the slicer left out; the lead gets the 02 §6.4 reason (of the unit, or
    /// of that item for a partial group), the other members `GroupExcluded`.
    fn explain<C: Collector>(
        &self,
        units: &Units,
        selected: &[bool],
        dropped: &[bool],
        sliced: &[Candidate],
        table: &mut RunGroups<'_>,
        collector: &mut C,
    ) {
        let items = self.items;
        let explainer = SliceExplainer::new(
            self.slicer,
            items,
            sliced,
            self.budget,
            self.effective,
            self.pinned,
        );
        let mut leads: Vec<Option<(usize, ExclusionReason)>> = vec![None; units.len()];
        for (p, c) in self.sorted.iter().enumerate() {
            if selected[p] {
                continue;
            }
            let u = units.unit_of(p);
            if leads[u].is_none() {
                let members = units.members(u);
                let partial = members.iter().any(|&m| dropped[m as usize]);
                let lead_pos = if partial {
                    let left_out = members.iter().find(|&&m| !dropped[m as usize]);
                    *left_out.unwrap_or(&members[0]) as usize
                } else {
                    members[0] as usize
                };
                let reason = if partial || members.len() == 1 {
                    explainer.reason(&items[self.sorted[lead_pos].index])
                } else {
                    let tokens = members.iter().fold(0i64, |acc, &m| {
                        acc.saturating_add(self.view[m as usize].item.tokens())
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
            exclude_member(
                collector, table, items, stage, c.index, c.score, *lead, reason,
            );
        }
    }
}

/// The candidates whose mask entry is set, in Sort order (decision D2 in docs/decisions.md).
fn kept(sorted: &[Candidate], mask: &[bool]) -> Vec<Candidate> {
    sorted
        .iter()
        .zip(mask)
        .filter_map(|(c, &keep)| keep.then_some(*c))
        .collect()
}

/// Turns the slicer's positions into a membership mask, rejecting positions out of range
/// or repeated (a custom slicer's mistake must not corrupt the run).
fn selection_mask(positions: &[usize], len: usize) -> Result<Vec<bool>> {
    let mut mask = vec![false; len];
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
    Ok(mask)
}

/// The after-the-fact exclusion rule of 02 §6.4: PinnedOverride, then CountCapExceeded,
/// then BudgetExceeded with one `available_tokens` value for the whole run.
struct SliceExplainer<'a> {
    pinned: &'a PinnedContext<'a>,
    effective_target: i64,
    pinned_override_ceiling: i64,
    available: i64,
    caps: &'a [(ContextKind, usize)],
    kind_counts: HashMap<&'a ContextKind, usize>,
}

impl<'a> SliceExplainer<'a> {
    fn new(
        slicer: &'a dyn Slicer,
        items: &'a [ContextItem],
        sliced: &[Candidate],
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
            .fold(0i64, |acc, c| acc.saturating_add(items[c.index].tokens()));
        let caps = slicer.count_caps();
        let mut kind_counts = HashMap::new();
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
