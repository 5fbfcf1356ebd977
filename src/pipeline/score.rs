//! Stage 2, Score (spec 02 §3): one batch pass of the scorer over the scoreable items.

use crate::diagnostics::{Collector, PipelineStage};
use crate::error::Result;
use crate::model::{ContextItem, ScoredItem};
use crate::scorer::Scorer;

/// An item on its way through the pipeline: its input position, its score, and its tokens
/// (its full form's), copied when Classify reads the item so that the stages after Score
/// never go back to the item array in score order just for them (one cache miss per
/// candidate on large inputs).
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub index: usize,
    pub score: f64,
    pub tokens: i64,
}

impl Candidate {
    /// The candidate for input position `index` of `items`, scored `score`.
    pub(super) fn of(items: &[ContextItem], index: usize, score: f64) -> Candidate {
        Candidate {
            index,
            score,
            tokens: items[index].tokens(),
        }
    }
}

/// The candidates as the slicer and placer traits see them: each one's item and score.
pub(super) fn scored_view<'a>(items: &'a [ContextItem], list: &[Candidate]) -> Vec<ScoredItem<'a>> {
    list.iter()
        .map(|c| ScoredItem {
            item: &items[c.index],
            score: c.score,
        })
        .collect()
}

/// Scores the scoreable items (input positions `scoreable`, in input order, with
/// `tokens` tokens each) and returns them as candidates. Nothing after Score needs the
/// two vectors, so they are freed here, once the candidates are built.
pub(super) fn score<C: Collector>(
    scorer: &dyn Scorer,
    items: &[ContextItem],
    scoreable: Vec<usize>,
    tokens: Vec<i64>,
    collector: &mut C,
) -> Result<Vec<Candidate>> {
    debug_assert_eq!(scoreable.len(), tokens.len());
    collector.begin_stage();
    let views: Vec<&ContextItem> = scoreable.iter().map(|&i| &items[i]).collect();
    let mut scores = vec![0.0; views.len()];
    if !views.is_empty() {
        scorer.score_all_at(&views, &scoreable, &mut scores)?;
    }
    drop(views);
    let scored: Vec<Candidate> = scoreable
        .into_iter()
        .zip(tokens)
        .zip(scores)
        .map(|((index, tokens), score)| Candidate {
            index,
            score,
            tokens,
        })
        .collect();
    collector.end_stage(PipelineStage::Score, scored.len());
    Ok(scored)
}
