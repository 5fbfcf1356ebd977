//! The rank pass shared by RecencyScorer and PriorityScorer (spec 03 §2.1, §2.2, §5.1).
//!
//! An item with a key scores `#(keys strictly smaller) / (m − 1)`, where `m` counts the
//! keyed items; a lone keyed item scores 1.0 and an item without a key 0.0. Sorting the
//! keyed items once gives every strict-less count in O(N log N): members of a tie group
//! share the sorted index where their group starts.

use crate::error::Result;
use crate::model::ContextItem;
use crate::radix::{i64_order_key, stable_order, stable_order_in, SortBuffers};
use crate::scorer::check_one_slot_per_item;

/// Writes the rank score of every item into `out`, ranking by `key` (`None` = unranked).
pub(super) fn rank_scores(
    items: &[&ContextItem],
    out: &mut [f64],
    key: impl Fn(&ContextItem) -> Option<i64>,
) -> Result<()> {
    check_one_slot_per_item(items, out)?;
    rank_sorted(&keyed_positions(items, key), out);
    Ok(())
}

/// The (key, position) pairs of the items that have a key, in input order.
pub(super) fn keyed_positions(
    items: &[&ContextItem],
    key: impl Fn(&ContextItem) -> Option<i64>,
) -> Vec<(i64, usize)> {
    let mut keyed = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        if let Some(k) = key(item) {
            keyed.push((k, position));
        }
    }
    keyed
}

/// Writes the rank scores of the `keyed` (key, position) pairs into `out` (every other
/// slot 0.0) by sorting the keys once. Keys that already come in non-decreasing order
/// (timestamps of a transcript, in the order its turns were added) are their own stable
/// order, found by one comparison per pair instead of a sort.
pub(super) fn rank_sorted(keyed: &[(i64, usize)], out: &mut [f64]) {
    if let Some(len) = rank_unless_sort_needed(keyed, out) {
        let order = stable_order(len, |k| i64_order_key(keyed[k].0));
        write_tie_group_ranks(keyed, order.iter().copied(), out);
    }
}

/// [`rank_sorted`] with its sort done in `buffers` (kept for the next call).
pub(crate) fn rank_sorted_in(keyed: &[(i64, usize)], out: &mut [f64], buffers: &mut SortBuffers) {
    if let Some(len) = rank_unless_sort_needed(keyed, out) {
        let order = stable_order_in(len, |k| i64_order_key(keyed[k].0), buffers);
        write_tie_group_ranks(keyed, order.iter().copied(), out);
    }
}

/// The ranks of [`rank_sorted`] that need no sort: clears `out`, then writes the ranks of
/// fewer than two pairs, or of pairs already in key order, and returns `None`; or returns
/// the pair count, for the caller to sort.
fn rank_unless_sort_needed(keyed: &[(i64, usize)], out: &mut [f64]) -> Option<usize> {
    out.fill(0.0);
    match keyed.len() {
        0 => {}
        1 => out[keyed[0].1] = 1.0,
        len if keyed.windows(2).all(|pair| pair[0].0 <= pair[1].0) => {
            write_tie_group_ranks(keyed, 0..len, out);
        }
        len => return Some(len),
    }
    None
}

/// Given the keyed items and their stable `order` by key (at least two items), gives each
/// one `group_start / (m − 1)`, where `group_start` is the sorted index of the first key
/// equal to its own: exactly the number of keys strictly smaller, so the single division
/// matches the per-item form bit for bit.
fn write_tie_group_ranks(
    keyed: &[(i64, usize)],
    order: impl ExactSizeIterator<Item = usize>,
    out: &mut [f64],
) {
    let mut ranks = RanksInOrder::new(order.len());
    for k in order {
        let (key, position) = keyed[k];
        out[position] = ranks.next(key);
    }
}

/// The rank scores of `m >= 2` keys given in non-decreasing order, one at a time: each
/// key scores `group_start / (m − 1)`, `group_start` being the number of keys before the
/// first one equal to it (the keys strictly smaller).
#[derive(Clone, Copy)]
pub(crate) struct RanksInOrder {
    /// Keys seen so far.
    seen: usize,
    /// Where the current tie group starts (meaningless before the first key).
    start: usize,
    /// The current tie group's key (meaningless before the first key).
    key: i64,
    denominator: f64,
}

impl RanksInOrder {
    /// Ranks for `m` keys (at least two).
    pub(crate) fn new(m: usize) -> Self {
        Self {
            seen: 0,
            start: 0,
            key: 0,
            denominator: (m - 1) as f64,
        }
    }

    /// The rank score of the next key (not smaller than the previous one). Without a
    /// branch on whether the key starts a new tie group: in a transcript whose turns
    /// often share a timestamp, that branch could not be predicted.
    #[inline]
    pub(crate) fn next(&mut self, key: i64) -> f64 {
        // All ones when the key continues the current group, else zero.
        let same_group = usize::from(self.seen != 0 && self.key == key).wrapping_neg();
        self.start = (self.start & same_group) | (self.seen & !same_group);
        self.key = key;
        self.seen += 1;
        self.start as f64 / self.denominator
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::recency::tests::naive_rank;
    use crate::scorer::test_support::{assert_bits_eq, item_refs, prioritised};
    use crate::testutil::Rng;

    fn ranks(keys: &[Option<i64>]) -> Vec<f64> {
        let items = prioritised(keys);
        let refs = item_refs(&items);
        let mut out = vec![f64::NAN; refs.len()];
        rank_scores(&refs, &mut out, ContextItem::priority).unwrap();
        out
    }

    #[test]
    fn tie_groups_share_their_lowest_rank() {
        assert_eq!(
            ranks(&[Some(5), Some(1), Some(5), Some(3), Some(5)]),
            [0.5, 0.0, 0.5, 0.25, 0.5]
        );
        assert_eq!(ranks(&[Some(10), Some(10), Some(1)]), [0.5, 0.5, 0.0]);
    }

    #[test]
    fn unkeyed_and_degenerate_lists() {
        assert_eq!(ranks(&[]), Vec::<f64>::new());
        assert_eq!(ranks(&[None, None]), [0.0, 0.0]);
        assert_eq!(ranks(&[None, Some(i64::MIN), None]), [0.0, 1.0, 0.0]);
        assert_eq!(ranks(&[Some(7), Some(7), Some(7)]), [0.0, 0.0, 0.0]);
        assert_eq!(
            ranks(&[Some(i64::MAX), None, Some(i64::MIN)]),
            [1.0, 0.0, 0.0]
        );
    }

    /// Keys already in non-decreasing order (ranked without sorting) and the same keys with
    /// one pair out of order (ranked by sorting) both score as the per-item form: ties,
    /// unkeyed items between keyed ones, extreme keys.
    #[test]
    fn keys_in_order_and_one_out_of_order_match_the_per_item_form() {
        for seed in 0..2_000u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(50);
            let missing = *rng.pick(&[0.0, 0.3]);
            let step = *rng.pick(&[1u64, 3, 1 << 40]);
            let mut key = *rng.pick(&[i64::MIN, -7, 0]);
            let mut keys: Vec<Option<i64>> = (0..n)
                .map(|_| {
                    key = key.saturating_add((rng.next_u64() % step) as i64 * rng.below(2) as i64);
                    (!rng.chance(missing)).then_some(key)
                })
                .collect();
            if rng.chance(0.5) {
                if let Some(last) = keys.iter_mut().rev().flatten().next() {
                    *last = i64::MIN;
                }
            }
            let items = prioritised(&keys);
            let want: Vec<f64> = (0..n)
                .map(|i| naive_rank(i, &items, ContextItem::priority))
                .collect();
            let refs = item_refs(&items);
            let mut got = vec![f64::NAN; n];
            rank_scores(&refs, &mut got, ContextItem::priority).unwrap();
            assert_bits_eq(seed, &got, &want);
        }
    }
}
