//! RecencyScorer: rank by timestamp (spec 03 §2.1).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::rank::rank_scores;
use crate::scorer::Scorer;

/// RecencyScorer: ranks the timestamped items from oldest (0.0) to newest (1.0).
///
/// An item scores `#(timestamps strictly older) / (m − 1)`, `m` being the number of items
/// with a timestamp; tied instants share a score, so a tied newest instant never reaches
/// 1.0. An item without a timestamp scores 0.0 and a lone timestamped item 1.0. One pass
/// costs O(N log N). No configuration.
#[derive(Debug, Clone, Default)]
pub struct RecencyScorer;

impl RecencyScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for RecencyScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        rank_scores(items, out, ContextItem::timestamp)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::scorer::test_support::{assert_bits_eq, items_from, random_items, run};
    use crate::testutil::Rng;

    /// The per-item form of spec 03 §2.1/§2.2 for any optional key.
    pub(crate) fn naive_rank(
        i: usize,
        all: &[ContextItem],
        key: fn(&ContextItem) -> Option<i64>,
    ) -> f64 {
        let Some(own) = key(&all[i]) else {
            return 0.0;
        };
        let keys: Vec<i64> = all.iter().filter_map(key).collect();
        let m = keys.len();
        if m <= 1 {
            return 1.0;
        }
        let smaller = keys.iter().filter(|k| **k < own).count();
        smaller as f64 / (m - 1) as f64
    }

    /// The per-item RecencyScorer of spec 03 §2.1.
    pub(crate) fn naive_recency(i: usize, all: &[ContextItem]) -> f64 {
        naive_rank(i, all, ContextItem::timestamp)
    }

    const DAY: i64 = 86_400_000_000_000;

    fn stamped(ts: &[Option<i64>]) -> Vec<ContextItem> {
        items_from(ts.len(), |i| {
            let b = ContextItem::builder(format!("item{i}"), 1);
            match ts[i] {
                Some(t) => b.timestamp(t).build().unwrap(),
                None => b.build().unwrap(),
            }
        })
    }

    #[test]
    fn vector_recency_basic() {
        // Jan, Jun, Dec
        let items = stamped(&[Some(0), Some(150 * DAY), Some(330 * DAY)]);
        assert_eq!(run(&RecencyScorer::new(), &items), [0.0, 0.5, 1.0]);
    }

    #[test]
    fn vector_recency_null_timestamps() {
        let items = stamped(&[Some(DAY), Some(2 * DAY), None, None]);
        assert_eq!(run(&RecencyScorer::new(), &items), [0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn edge_cases() {
        let s = RecencyScorer::new();
        assert_eq!(run(&s, &stamped(&[None, None])), [0.0, 0.0]);
        assert_eq!(run(&s, &stamped(&[None, Some(5), None])), [0.0, 1.0, 0.0]);
        assert_eq!(
            run(&s, &stamped(&[Some(5), Some(5), Some(5)])),
            [0.0, 0.0, 0.0]
        );
        // Tied newest: (m − k)/(m − 1) with m = 3, k = 2.
        assert_eq!(
            run(&s, &stamped(&[Some(1), Some(9), Some(9)])),
            [0.0, 0.5, 0.5]
        );
        // One nanosecond breaks a tie.
        assert_eq!(run(&s, &stamped(&[Some(1), Some(2)])), [0.0, 1.0]);
        assert_eq!(run(&s, &stamped(&[])), Vec::<f64>::new());
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit() {
        for seed in 0..5_000 {
            let mut rng = Rng::new(seed);
            let items = random_items(&mut rng, 40);
            let want: Vec<f64> = (0..items.len()).map(|i| naive_recency(i, &items)).collect();
            assert_bits_eq(seed, &run(&RecencyScorer::new(), &items), &want);
        }
    }
}
