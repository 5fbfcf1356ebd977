//! Stage 1, Classify (spec 02 §2): drop negative-token items, set pinned items aside,
//! check pinned tokens against `max_tokens - output_reserve`.

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::error::{checked_token_sum, Error, Result};
use crate::model::{ContextBudget, ContextItem};

/// The partitions of the input, as input positions in input order.
pub(super) struct Classified {
    pub pinned: Vec<usize>,
    pub scoreable: Vec<usize>,
    pub pinned_tokens: i64,
}

pub(super) fn classify<C: Collector>(
    items: &[ContextItem],
    budget: &ContextBudget,
    collector: &mut C,
) -> Result<Classified> {
    collector.begin_stage();
    let mut pinned = Vec::new();
    let mut scoreable = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if item.tokens() < 0 {
            if C::ENABLED {
                let reason = ExclusionReason::NegativeTokens {
                    tokens: item.tokens(),
                };
                collector.exclude(PipelineStage::Classify, index, 0.0, reason);
            }
        } else if item.pinned() {
            pinned.push(index);
        } else {
            scoreable.push(index);
        }
    }
    let pinned_tokens =
        checked_token_sum(pinned.iter().map(|&i| items[i].tokens()), "pinned tokens")?;
    let available = budget.max_tokens() - budget.output_reserve();
    if pinned_tokens > available {
        return Err(Error::PinnedExceedsBudget {
            pinned_tokens,
            available,
        });
    }
    collector.end_stage(PipelineStage::Classify, pinned.len() + scoreable.len());
    Ok(Classified {
        pinned,
        scoreable,
        pinned_tokens,
    })
}
