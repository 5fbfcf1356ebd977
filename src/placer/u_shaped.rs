//! UShapedPlacer (seed): the highest scores at both edges, the lowest in the middle.

use crate::error::Result;
use crate::model::{ScoredItem, Units};
use crate::placer::Placer;
use crate::radix::{f64_order_key, stable_order, stable_order_in, SortBuffers};

/// Rank items by score descending (total order, ties by position); even ranks fill from
/// the left edge, odd ranks from the right edge.
///
/// With groups, a group is ranked by its value as one element and its members follow one
/// another in input order where it lands.
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
        Ok(u_shaped_order(items.len(), |pos| items[pos].score))
    }

    /// Units are ranked by value (ties by unit order) and alternate between the edges as
    /// items do; each unit is then expanded in input order where it landed.
    fn place_grouped(&self, _items: &[ScoredItem<'_>], units: &Units) -> Result<Vec<usize>> {
        Ok(units.expand(u_shaped_order(units.len(), |u| units.value(u))))
    }
}

/// The U-shaped order of `n` elements scored by `score`: ranked by score descending
/// (total order), ties by index; even ranks fill from the left edge inwards, odd ranks
/// from the right edge inwards.
pub(crate) fn u_shaped_order(n: usize, score: impl Fn(usize) -> f64) -> Vec<usize> {
    // The stable order by descending score: (score descending, index ascending).
    let ranked = stable_order(n, |i| !f64_order_key(score(i)));
    let mut out = vec![0usize; n];
    fill_from_both_edges(ranked, &mut out);
    out
}

/// [`u_shaped_order`] into `out` (cleared first), the ranking computed in `buffers`: both
/// keep their memory for the next call.
pub(crate) fn u_shaped_order_into(
    n: usize,
    score: impl Fn(usize) -> f64,
    buffers: &mut SortBuffers,
    out: &mut Vec<usize>,
) {
    let ranked = stable_order_in(n, |i| !f64_order_key(score(i)), buffers);
    out.clear();
    out.resize(n, 0);
    fill_from_both_edges(ranked.iter().copied(), out);
}

/// Puts the elements `ranked` (best first) into `out` (as long as `ranked`): even ranks
/// from the left edge inwards, odd ranks from the right edge inwards.
fn fill_from_both_edges(ranked: impl IntoIterator<Item = usize>, out: &mut [usize]) {
    let (mut left, mut right) = (0usize, out.len());
    for (rank, i) in ranked.into_iter().enumerate() {
        if rank % 2 == 0 {
            out[left] = i;
            left += 1;
        } else {
            right -= 1;
            out[right] = i;
        }
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

    #[test]
    fn the_buffered_form_gives_the_same_order() {
        let (mut buffers, mut out) = (SortBuffers::default(), Vec::new());
        for seed in 0..300u64 {
            let mut rng = crate::testutil::Rng::new(seed);
            let n = match seed % 4 {
                0 => 300 + rng.below(3000),
                _ => rng.below(40),
            };
            let scores: Vec<f64> = (0..n)
                .map(|_| match rng.below(6) {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => rng.below(4) as f64,
                    _ => rng.unit(),
                })
                .collect();
            u_shaped_order_into(n, |i| scores[i], &mut buffers, &mut out);
            assert_eq!(out, u_shaped_order(n, |i| scores[i]), "seed {seed}");
        }
    }
}
