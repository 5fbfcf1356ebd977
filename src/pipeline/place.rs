//! Stage 6, Place (spec 02 §7, seed "Stage 6: Place"): merge pinned items (score 1.0) before the
//! sliced items, handle overflow (Throw / Truncate per decision D3 in docs/decisions.md / Proceed
//! per decision D7), and let the placer order the result.

use crate::diagnostics::{
    Collector, ExclusionReason, InclusionReason, OverflowEvent, PipelineStage,
};
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextItem, OverflowStrategy, ScoredItem};
use crate::pipeline::score::Candidate;
use crate::placer::Placer;

/// The placed window: input positions with their scores and reasons, plus any overflow.
pub(super) struct Placed {
    pub indices: Vec<usize>,
    pub scores: Vec<f64>,
    pub reasons: Vec<InclusionReason>,
    pub overflow: Option<OverflowEvent>,
}

/// What Place takes from the pipeline and the run, besides the candidates.
#[derive(Clone, Copy)]
pub(super) struct PlaceContext<'a> {
    pub placer: &'a dyn Placer,
    pub strategy: OverflowStrategy,
    pub on_overflow: Option<&'a dyn Fn(&OverflowEvent)>,
    pub items: &'a [ContextItem],
    pub budget: &'a ContextBudget,
}

/// Merges the pinned positions (first) and the sliced candidates, applies the overflow
/// strategy and lets the placer order the result.
pub(super) fn place<C: Collector>(
    context: PlaceContext<'_>,
    pinned: &[usize],
    sliced: Vec<Candidate>,
    collector: &mut C,
) -> Result<Placed> {
    let PlaceContext {
        placer,
        strategy,
        on_overflow,
        items,
        budget,
    } = context;
    collector.begin_stage();
    let mut merged: Vec<Candidate> = Vec::with_capacity(pinned.len() + sliced.len());
    merged.extend(pinned.iter().map(|&index| Candidate { index, score: 1.0 }));
    merged.extend(sliced);

    let target = budget.target_tokens();
    let merged_tokens = checked_token_sum(
        merged.iter().map(|c| items[c.index].tokens()),
        "merged tokens",
    )?;
    let mut overflow = None;
    if merged_tokens > target {
        match strategy {
            OverflowStrategy::Throw => {
                return Err(Error::Overflow {
                    merged_tokens,
                    target_tokens: target,
                })
            }
            OverflowStrategy::Truncate => merged = truncate(items, merged, target, collector),
            OverflowStrategy::Proceed => {
                let event = OverflowEvent {
                    tokens_over_budget: merged_tokens - target,
                    overflowing_items: merged.iter().map(|c| c.index).collect(),
                    budget: budget.clone(),
                };
                if let Some(callback) = on_overflow {
                    callback(&event);
                }
                overflow = Some(event);
            }
        }
    }

    let view: Vec<ScoredItem<'_>> = merged
        .iter()
        .map(|c| ScoredItem {
            item: &items[c.index],
            score: c.score,
        })
        .collect();
    let order = if view.is_empty() {
        Vec::new()
    } else {
        placer.place(&view)?
    };
    check_permutation(&order, merged.len())?;

    let mut placed = Placed {
        indices: Vec::with_capacity(order.len()),
        scores: Vec::with_capacity(order.len()),
        reasons: Vec::with_capacity(order.len()),
        overflow,
    };
    for pos in order {
        let Candidate { index, score } = merged[pos];
        let reason = inclusion_reason(&items[index]);
        collector.include(index, score, reason);
        placed.indices.push(index);
        placed.scores.push(score);
        placed.reasons.push(reason);
    }
    collector.end_stage(PipelineStage::Place, placed.indices.len());
    Ok(placed)
}

/// Decision D3 in docs/decisions.md: walk the merged list as it stands; pinned items always stay, a
/// non-pinned item stays when it still fits under `target`, otherwise it is skipped and the walk
/// goes on.
fn truncate<C: Collector>(
    items: &[ContextItem],
    merged: Vec<Candidate>,
    target: i64,
    collector: &mut C,
) -> Vec<Candidate> {
    let mut kept = Vec::with_capacity(merged.len());
    let mut dropped = Vec::new();
    let mut used: i64 = 0;
    for candidate in merged {
        let item = &items[candidate.index];
        // Every token count here is >= 0 and their total fits in i64 (checked by the caller).
        if item.pinned() || used + item.tokens() <= target {
            used += item.tokens();
            kept.push(candidate);
        } else if C::ENABLED {
            dropped.push(candidate);
        }
    }
    let available_tokens = target - used;
    for c in dropped {
        let reason = ExclusionReason::BudgetExceeded {
            item_tokens: items[c.index].tokens(),
            available_tokens,
        };
        collector.exclude(PipelineStage::Place, c.index, c.score, reason);
    }
    kept
}

fn inclusion_reason(item: &ContextItem) -> InclusionReason {
    if item.pinned() {
        InclusionReason::Pinned
    } else if item.tokens() == 0 {
        InclusionReason::ZeroToken
    } else {
        InclusionReason::Scored
    }
}

/// Rejects a placer result that is not a permutation of `0..len` (spec 05 rule P1).
fn check_permutation(order: &[usize], len: usize) -> Result<()> {
    if order.len() != len {
        return Err(Error::Callback(format!(
            "placer returned {} positions for {len} items; expected a permutation",
            order.len()
        )));
    }
    let mut seen = vec![false; len];
    for &pos in order {
        match seen.get_mut(pos) {
            Some(slot) if !*slot => *slot = true,
            _ => {
                return Err(Error::Callback(format!(
                    "placer result is not a permutation of 0..{len} (position {pos})"
                )))
            }
        }
    }
    Ok(())
}
