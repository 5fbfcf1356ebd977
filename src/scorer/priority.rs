//! PriorityScorer: rank by priority (spec 03 §2.2).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::rank_count::rank_scores_by_counting;
use crate::scorer::Scorer;

/// PriorityScorer: ranks the prioritised items from lowest (0.0) to highest (1.0) priority.
///
/// An item scores `#(priorities strictly smaller) / (m − 1)`, `m` being the number of
/// items with a priority; ties share a score, so a tied maximum never reaches 1.0. An item
/// without a priority scores 0.0 and a lone prioritised item 1.0. Negative priorities are
/// ordinary values. One pass costs O(N log N), or O(N) when the priorities span few values.
/// No configuration.
#[derive(Debug, Clone, Default)]
pub struct PriorityScorer;

impl PriorityScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for PriorityScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        rank_scores_by_counting(items, out, ContextItem::priority)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::scorer::recency::tests::naive_rank;
    use crate::scorer::test_support::{assert_bits_eq, prioritised, random_items, run};
    use crate::testutil::Rng;

    /// The per-item PriorityScorer of spec 03 §2.2.
    pub(crate) fn naive_priority(i: usize, all: &[ContextItem]) -> f64 {
        naive_rank(i, all, ContextItem::priority)
    }

    #[test]
    fn vectors() {
        let s = PriorityScorer::new();
        assert_eq!(
            run(&s, &prioritised(&[Some(1), Some(5), Some(10)])),
            [0.0, 0.5, 1.0]
        );
        assert_eq!(
            run(&s, &prioritised(&[Some(3), Some(7), None])),
            [0.0, 1.0, 0.0]
        );
    }

    #[test]
    fn edge_cases() {
        let s = PriorityScorer::new();
        assert_eq!(run(&s, &prioritised(&[None, None])), [0.0, 0.0]);
        assert_eq!(run(&s, &prioritised(&[Some(-4)])), [1.0]);
        assert_eq!(run(&s, &prioritised(&[Some(2), Some(2)])), [0.0, 0.0]);
        // Tied maximum (the composite-weighted vector relies on it).
        assert_eq!(
            run(&s, &prioritised(&[Some(10), Some(1), Some(10)])),
            [0.5, 0.0, 0.5]
        );
        assert_eq!(
            run(&s, &prioritised(&[Some(-10), Some(-1), Some(0)])),
            [0.0, 0.5, 1.0]
        );
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit() {
        for seed in 10_000..15_000 {
            let mut rng = Rng::new(seed);
            let items = random_items(&mut rng, 40);
            let want: Vec<f64> = (0..items.len())
                .map(|i| naive_priority(i, &items))
                .collect();
            assert_bits_eq(seed, &run(&PriorityScorer::new(), &items), &want);
        }
    }
}
