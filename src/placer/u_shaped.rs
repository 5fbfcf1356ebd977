//! UShapedPlacer (seed): the highest scores at both edges, the lowest in the middle.

use crate::error::Result;
use crate::model::ScoredItem;
use crate::placer::Placer;
use crate::radix::{f64_order_key, stable_sort_by_key};

/// Rank items by score descending (total order, ties by position); even ranks fill from
/// the left edge, odd ranks from the right edge.
#[derive(Debug, Clone, Copy, Default)]
pub struct UShapedPlacer;

impl UShapedPlacer {
    /// Builds the placer.
    pub fn new() -> Self {
        Self
    }
}

impl Placer for UShapedPlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>> {
        let n = items.len();
        // Built in position order and sorted stably by descending score: (score
        // descending, position ascending).
        let mut ranked: Vec<(u64, usize)> = items
            .iter()
            .enumerate()
            .map(|(pos, s)| (!f64_order_key(s.score), pos))
            .collect();
        stable_sort_by_key(&mut ranked);
        let mut out = vec![0usize; n];
        let (mut left, mut right) = (0usize, n);
        for (rank, (_, pos)) in ranked.into_iter().enumerate() {
            if rank % 2 == 0 {
                out[left] = pos;
                left += 1;
            } else {
                right -= 1;
                out[right] = pos;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextItem;

    fn place(scores: &[f64]) -> Vec<usize> {
        let items: Vec<ContextItem> = (0..scores.len())
            .map(|i| ContextItem::new(format!("i{i}"), 1).unwrap())
            .collect();
        let scored: Vec<ScoredItem> = items
            .iter()
            .zip(scores)
            .map(|(item, &score)| ScoredItem { item, score })
            .collect();
        UShapedPlacer.place(&scored).unwrap()
    }

    #[test]
    fn seed_example() {
        // A..G scored 0.9..0.3 -> A C E G F D B
        assert_eq!(
            place(&[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]),
            vec![0, 2, 4, 6, 5, 3, 1]
        );
    }

    #[test]
    fn edges_and_ties() {
        assert!(place(&[]).is_empty());
        assert_eq!(place(&[0.1]), vec![0]);
        assert_eq!(place(&[0.1, 0.9]), vec![1, 0]);
        // Equal scores: input order decides rank.
        assert_eq!(place(&[0.5, 0.5, 0.5, 0.5]), vec![0, 2, 3, 1]);
    }
}
