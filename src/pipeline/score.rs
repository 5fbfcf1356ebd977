//! Stage 2, Score (spec 02 §3): one batch pass of the scorer over the scoreable items.

use crate::diagnostics::{Collector, PipelineStage};
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// An item on its way through the pipeline: its input position and its score.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub index: usize,
    pub score: f64,
}

pub(super) fn score<C: Collector>(
    scorer: &dyn Scorer,
    items: &[ContextItem],
    scoreable: &[usize],
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    collector.begin_stage();
    let views: Vec<&ContextItem> = scoreable.iter().map(|&i| &items[i]).collect();
    let mut scores = vec![0.0; views.len()];
    if !views.is_empty() {
        scorer.score_all_at(&views, scoreable, &mut scores)?;
    }
    let scored: Vec<Candidate> = scoreable
        .iter()
        .zip(scores)
        .map(|(&index, score)| Candidate { index, score })
        .collect();
    collector.end_stage(PipelineStage::Score, scored.len());
    Ok(scored)
}
