//! Stage 5, Slice (spec 02 §6): run the slicer on the sorted candidates within the effective
//! budget, re-associate by position in Sort order (decision D2 in docs/decisions.md), and classify
//! every candidate the slicer left out (02 §6.4, decisions D4, D5, D10).

use std::collections::HashMap;

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem, ContextKind, ScoredItem};
use crate::pipeline::score::Candidate;
use crate::slicer::Slicer;

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
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    collector.begin_stage();
    let effective = budget.effective(pinned.tokens);
    let view: Vec<ScoredItem<'_>> = sorted
        .iter()
        .map(|c| ScoredItem {
            item: &items[c.index],
            score: c.score,
        })
        .collect();
    let outcome = if view.is_empty() {
        Default::default()
    } else {
        slicer.slice(&view, &effective)?
    };
    let selected = selection_mask(&outcome.selected, sorted.len())?;
    let sliced: Vec<Candidate> = sorted
        .iter()
        .zip(&selected)
        .filter_map(|(c, &keep)| keep.then_some(*c))
        .collect();
    if C::ENABLED {
        let explainer = SliceExplainer::new(slicer, items, &sliced, budget, &effective, pinned);
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
    collector.end_stage(PipelineStage::Slice, sliced.len());
    Ok(sliced)
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
        let tokens = item.tokens();
        if self.pinned.tokens > 0
            && tokens > self.effective_target
            && tokens <= self.pinned_override_ceiling
        {
            let displaced_by = self.pinned.first_content.unwrap_or_default().to_owned();
            return ExclusionReason::PinnedOverride { displaced_by };
        }
        if tokens <= self.effective_target {
            if let Some(&(_, cap)) = self.caps.iter().find(|(kind, _)| kind == item.kind()) {
                let count = self.kind_counts.get(item.kind()).copied().unwrap_or(0);
                if count >= cap {
                    return ExclusionReason::CountCapExceeded {
                        kind: item.kind().as_str().to_owned(),
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
