//! The rank pass by counting, for keys that span a small range of values (priorities are
//! usually a handful of small integers): the same scores as
//! [`rank_scores`](crate::scorer::rank::rank_scores), computed without sorting.
//!
//! An item with a key scores `#(keys strictly smaller) / (m − 1)` (spec 03 §2.2, §5.1).
//! When the keys span few values, one count per value and a running sum over the values
//! give every item's strictly-smaller count directly: two sequential passes over the keyed
//! items instead of a sort and a scattered write. The count is the same integer the sorted
//! form finds (the index where the item's tie group starts), divided by the same `m − 1`,
//! so the scores are equal bit for bit.

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::check_one_slot_per_item;
use crate::scorer::rank::{keyed_positions, rank_sorted};

/// Keys spanning more values than this are ranked by sorting.
const SPAN_MAX: u64 = 1 << 16;

/// Writes the rank score of every item into `out`, ranking by `key` (`None` = unranked):
/// by counting when the keys span at most [`SPAN_MAX`] values and no more than four per
/// keyed item, else by sorting (as [`rank_scores`](crate::scorer::rank::rank_scores)).
pub(super) fn rank_scores_by_counting(
    items: &[&ContextItem],
    out: &mut [f64],
    key: impl Fn(&ContextItem) -> Option<i64>,
) -> Result<()> {
    check_one_slot_per_item(items, out)?;
    rank_keyed_by_counting(&keyed_positions(items, key), out);
    Ok(())
}

/// [`rank_scores_by_counting`] of the `keyed` (key, position) pairs, in position order:
/// writes each pair's rank score at its position in `out` and 0.0 everywhere else.
fn rank_keyed_by_counting(keyed: &[(i64, usize)], out: &mut [f64]) {
    let (lowest, highest) = keyed
        .iter()
        .fold((i64::MAX, i64::MIN), |(low, high), &(k, _)| {
            (low.min(k), high.max(k))
        });
    if !ranked_by_counting(keyed.len(), lowest, highest) {
        rank_sorted(keyed, out);
        return;
    }
    let mut counts = Vec::new();
    count_below(keyed.iter().map(|&(k, _)| k), lowest, highest, &mut counts);
    let below = Below::new(&counts, lowest);
    out.fill(0.0);
    let denominator = (keyed.len() - 1) as f64;
    for &(k, position) in keyed {
        if let Some(slot) = out.get_mut(position) {
            *slot = below.rank(k) as f64 / denominator;
        }
    }
}

/// Whether `m` keys from `lowest` to `highest` are ranked by counting: at least two,
/// spanning fewer than [`SPAN_MAX`] values and no more than four values per key.
pub(crate) fn ranked_by_counting(m: usize, lowest: i64, highest: i64) -> bool {
    let span = highest.abs_diff(lowest);
    m >= 2 && span < SPAN_MAX && span / 4 < m as u64
}

/// Appends to `counts` one entry per value from `lowest` to `highest` (a span
/// [`ranked_by_counting`] accepts), each the number of `keys` strictly below that value:
/// the table a [`Below`] reads.
pub(crate) fn count_below(
    keys: impl Iterator<Item = i64>,
    lowest: i64,
    highest: i64,
    counts: &mut Vec<usize>,
) {
    let start = counts.len();
    // The span is below `SPAN_MAX`, so every offset fits a usize.
    counts.resize(start + highest.abs_diff(lowest) as usize + 1, 0);
    let table = &mut counts[start..];
    for k in keys {
        if let Some(count) = table.get_mut(k.abs_diff(lowest) as usize) {
            *count += 1;
        }
    }
    // Counts per value become the number of keys strictly below each value.
    let mut below = 0;
    for count in table.iter_mut() {
        let here = *count;
        *count = below;
        below += here;
    }
}

/// A table of [`count_below`]: the number of keys strictly below each value.
#[derive(Clone, Copy)]
pub(crate) struct Below<'a> {
    table: &'a [usize],
    lowest: i64,
}

impl<'a> Below<'a> {
    /// The table [`count_below`] wrote for keys from `lowest` on.
    pub(crate) fn new(table: &'a [usize], lowest: i64) -> Self {
        Self { table, lowest }
    }

    /// The number of keys strictly below `key` (one of the keys counted).
    #[inline]
    pub(crate) fn rank(&self, key: i64) -> usize {
        self.table
            .get(key.abs_diff(self.lowest) as usize)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::recency::tests::naive_rank;
    use crate::scorer::test_support::{assert_bits_eq, item_refs, prioritised};
    use crate::testutil::Rng;

    fn counted(items: &[ContextItem]) -> Vec<f64> {
        let refs = item_refs(items);
        let mut out = vec![f64::NAN; refs.len()];
        rank_scores_by_counting(&refs, &mut out, ContextItem::priority).unwrap();
        out
    }

    #[test]
    fn matches_the_per_item_form_on_small_and_wide_spans() {
        for seed in 0..3_000u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(60);
            let missing = *rng.pick(&[0.0, 0.3, 0.9]);
            let base = *rng.pick(&[0, -5, i64::MIN, i64::MAX - 20, 1 << 40]);
            let spread = *rng.pick(&[1u64, 3, 10, 200, SPAN_MAX - 1, SPAN_MAX, u64::MAX]);
            let keys: Vec<Option<i64>> = (0..n)
                .map(|_| {
                    (!rng.chance(missing))
                        .then(|| base.wrapping_add((rng.next_u64() % spread) as i64))
                })
                .collect();
            let items = prioritised(&keys);
            let want: Vec<f64> = (0..n)
                .map(|i| naive_rank(i, &items, ContextItem::priority))
                .collect();
            assert_bits_eq(seed, &counted(&items), &want);
        }
    }

    #[test]
    fn ties_lone_and_missing_keys() {
        let items = prioritised(&[Some(3), None, Some(3), Some(1), Some(9)]);
        assert_eq!(counted(&items), [1.0 / 3.0, 0.0, 1.0 / 3.0, 0.0, 1.0]);
        assert_eq!(
            counted(&prioritised(&[None, Some(4), None])),
            [0.0, 1.0, 0.0]
        );
        assert_eq!(counted(&prioritised(&[None, None])), [0.0, 0.0]);
        assert_eq!(
            counted(&prioritised(&[Some(i64::MIN), Some(i64::MAX)])),
            [0.0, 1.0]
        );
    }
}
