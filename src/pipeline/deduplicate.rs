//! Stage 3, Deduplicate (spec 02 §4): among byte-identical contents keep the highest score
//! (strictly greater wins, so ties keep the earliest); survivors keep their order.

use std::collections::HashMap;

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::model::ContextItem;
use crate::pipeline::score::Candidate;

pub(super) fn deduplicate<C: Collector>(
    enabled: bool,
    items: &[ContextItem],
    scored: Vec<Candidate>,
    collector: &mut C,
) -> Vec<Candidate> {
    collector.begin_stage();
    let survivors = if enabled && scored.len() > 1 {
        remove_duplicates(items, scored, collector)
    } else {
        scored
    };
    collector.end_stage(PipelineStage::Deduplicate, survivors.len());
    survivors
}

fn remove_duplicates<C: Collector>(
    items: &[ContextItem],
    scored: Vec<Candidate>,
    collector: &mut C,
) -> Vec<Candidate> {
    let mut best: HashMap<&str, usize> = HashMap::with_capacity(scored.len());
    for (pos, candidate) in scored.iter().enumerate() {
        let holder = best.entry(items[candidate.index].content()).or_insert(pos);
        if candidate.score > scored[*holder].score {
            *holder = pos;
        }
    }
    if best.len() == scored.len() {
        return scored;
    }
    let mut survivors = Vec::with_capacity(best.len());
    for (pos, candidate) in scored.iter().enumerate() {
        let content = items[candidate.index].content();
        if best[content] == pos {
            survivors.push(*candidate);
        } else if C::ENABLED {
            let reason = ExclusionReason::Deduplicated {
                deduplicated_against: content.to_owned(),
            };
            collector.exclude(
                PipelineStage::Deduplicate,
                candidate.index,
                candidate.score,
                reason,
            );
        }
    }
    survivors
}
