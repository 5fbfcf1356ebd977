//! Stage 3, Deduplicate (spec 02 §4): among byte-identical contents keep the highest score
//! (strictly greater wins, so ties keep the earliest); survivors keep their order.

use crate::diagnostics::{Collector, ExclusionReason, PipelineStage};
use crate::hash::FastMap;
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
    // One hash per item: each content gets a group (numbered by first appearance), and
    // each group remembers the position of its best candidate so far.
    let mut group_of_content: FastMap<&str, usize> =
        FastMap::with_capacity_and_hasher(scored.len(), Default::default());
    let mut best_of_group: Vec<usize> = Vec::with_capacity(scored.len());
    let mut group_of: Vec<usize> = Vec::with_capacity(scored.len());
    for (pos, candidate) in scored.iter().enumerate() {
        let next_group = best_of_group.len();
        let group = *group_of_content
            .entry(items[candidate.index].content())
            .or_insert(next_group);
        if group == next_group {
            best_of_group.push(pos);
        } else if candidate.score > scored[best_of_group[group]].score {
            best_of_group[group] = pos;
        }
        group_of.push(group);
    }
    if best_of_group.len() == scored.len() {
        return scored;
    }
    let mut survivors = Vec::with_capacity(best_of_group.len());
    for (pos, candidate) in scored.iter().enumerate() {
        if best_of_group[group_of[pos]] == pos {
            survivors.push(*candidate);
        } else if C::ENABLED {
            let content = items[candidate.index].content();
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
