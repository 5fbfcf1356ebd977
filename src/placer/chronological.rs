//! ChronologicalPlacer (spec 05 §2): timestamped items oldest first, then the rest;
//! ties by input position.

use crate::error::Result;
use crate::model::{ScoredItem, Units};
use crate::placer::Placer;
use crate::radix::{
    i64_order_key, in_order_with_ties, stable_order, stable_order_with_ties_in, SortBuffers,
    NO_TIES,
};

/// Orders items by ascending timestamp; items without one go last. Scores are ignored.
///
/// With groups, a group is placed at its earliest member timestamp and its members follow
/// one another in input order.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChronologicalPlacer;

impl ChronologicalPlacer {
    /// Builds the placer.
    pub fn new() -> Self {
        Self
    }
}

impl Placer for ChronologicalPlacer {
    fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>> {
        Ok(chronological_order(items.len(), |pos| {
            items[pos].item.timestamp()
        }))
    }

    /// Each unit is placed at its earliest member timestamp (undated when no member has
    /// one), ties by unit order, then expanded in input order.
    fn place_grouped(&self, items: &[ScoredItem<'_>], units: &Units) -> Result<Vec<usize>> {
        let earliest = |u: usize| {
            let members = units.members(u).iter();
            members
                .filter_map(|&m| items[m as usize].item.timestamp())
                .min()
        };
        Ok(units.expand(chronological_order(units.len(), earliest)))
    }
}

/// The order of `n` elements by (has no timestamp, timestamp, index): the timestamped
/// ones, taken in index order and sorted stably by timestamp, come first; the others
/// follow in index order (rule C5).
///
/// When every element has a timestamp (most inputs), that is the stable order of their
/// keys, read once into one vector: no pairs of key and index, no second list.
pub(crate) fn chronological_order(
    n: usize,
    timestamp: impl Fn(usize) -> Option<i64>,
) -> Vec<usize> {
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        match timestamp(i) {
            Some(ts) => keys.push(i64_order_key(ts)),
            None => {
                let (mut timed, mut out) = (Vec::new(), Vec::new());
                let buffers = &mut SortBuffers::default();
                chronological_order_into(n, timestamp, buffers, &mut keys, &mut timed, &mut out);
                return out;
            }
        }
    }
    stable_order(n, |i| keys[i])
}

/// [`chronological_order`] into `out` (cleared first), with the timestamped elements'
/// keys gathered in `keys` and, when some element has none, their indices in `timed`,
/// sorted in `buffers`: all keep their memory for the next call.
pub(crate) fn chronological_order_into(
    n: usize,
    timestamp: impl Fn(usize) -> Option<i64>,
    buffers: &mut SortBuffers,
    keys: &mut Vec<u64>,
    timed: &mut Vec<usize>,
    out: &mut Vec<usize>,
) {
    chronological_order_with_ties_into(n, timestamp, NO_TIES, buffers, keys, timed, out);
}

/// [`chronological_order_into`] with the elements that share a timestamp, and those
/// without one, ordered by `tie` before their indices: the order of `n` elements by
/// `(has no timestamp, timestamp, tie, index)`. With a `tie` that gives each element its
/// place in another list, this places that list without making it (the columnar run
/// places its merged list so, from the selected candidates in input order).
pub(crate) fn chronological_order_with_ties_into<T: Ord>(
    n: usize,
    timestamp: impl Fn(usize) -> Option<i64>,
    tie: Option<impl Fn(usize) -> T>,
    buffers: &mut SortBuffers,
    keys: &mut Vec<u64>,
    timed: &mut Vec<usize>,
    out: &mut Vec<usize>,
) {
    keys.clear();
    keys.reserve(n);
    out.clear();
    out.reserve(n);
    let mut first_undated = None;
    for i in 0..n {
        match timestamp(i) {
            Some(ts) => keys.push(i64_order_key(ts)),
            None => {
                first_undated = Some(i);
                break;
            }
        }
    }
    let Some(first_undated) = first_undated else {
        if keys.is_sorted() {
            // A transcript, its timestamps in order: no sort.
            in_order_with_ties(keys, tie, out);
        } else {
            out.extend_from_slice(stable_order_with_ties_in(n, |i| keys[i], tie, buffers));
        }
        return;
    };
    // The untimed ones are collected at the front of `out`, then rotated behind the
    // sorted timed ones.
    timed.clear();
    timed.reserve(n);
    timed.extend(0..first_undated);
    for i in first_undated..n {
        match timestamp(i) {
            Some(ts) => {
                keys.push(i64_order_key(ts));
                timed.push(i);
            }
            None => out.push(i),
        }
    }
    let untimed = out.len();
    if let Some(tie) = &tie {
        out.sort_unstable_by(|&a, &b| tie(a).cmp(&tie(b)).then(a.cmp(&b)));
    }
    let timed_tie = tie.as_ref().map(|tie| |k: usize| tie(timed[k]));
    let sorted = stable_order_with_ties_in(timed.len(), |k| keys[k], timed_tie, buffers);
    out.extend(sorted.iter().map(|&k| timed[k]));
    out.rotate_left(untimed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextItem;

    #[test]
    fn worked_example_of_the_spec() {
        // 05 §2.5: sys (none), q2 (t2), note (none), q1 (t1), a2 (t2) -> q1, q2, a2, sys, note
        let mk = |c: &str, ts: Option<i64>| {
            let b = ContextItem::builder(c, 1);
            match ts {
                Some(t) => b.timestamp(t).build().unwrap(),
                None => b.build().unwrap(),
            }
        };
        let items = [
            mk("sys", None),
            mk("q2", Some(200)),
            mk("note", None),
            mk("q1", Some(100)),
            mk("a2", Some(200)),
        ];
        let scored: Vec<ScoredItem> = items
            .iter()
            .map(|item| ScoredItem { item, score: 0.0 })
            .collect();
        assert_eq!(
            ChronologicalPlacer.place(&scored).unwrap(),
            vec![3, 1, 4, 0, 2]
        );
        assert!(ChronologicalPlacer.place(&[]).unwrap().is_empty());
    }

    #[test]
    fn matches_a_stable_sort_by_presence_then_timestamp() {
        let mut state = 7u64;
        let mut next = move |below: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % below
        };
        // The buffered form reuses one set of buffers across all the cases.
        let mut buffers = SortBuffers::default();
        let (mut keys, mut timed, mut reused) = (Vec::new(), Vec::new(), Vec::new());
        for case in 0..300 {
            let n = next(if case % 5 == 0 { 2000 } else { 40 }) as usize;
            let stamps: Vec<Option<i64>> = (0..n)
                .map(|_| match next(8) {
                    0 => None,
                    1 => Some(i64::MAX),
                    2 => Some(i64::MIN),
                    3 if case % 3 == 0 => None,
                    _ => Some(next(20) as i64 - 10),
                })
                .map(|t| match (case % 4, t) {
                    (1, Some(i64::MAX)) => Some(5), // cases without the largest key
                    (2, None) => Some(3),           // cases with every timestamp
                    _ => t,
                })
                .collect();
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| (stamps[i].is_none(), stamps[i]));
            assert_eq!(chronological_order(n, |i| stamps[i]), want, "{stamps:?}");
            let stamp = |i: usize| stamps[i];
            chronological_order_into(n, stamp, &mut buffers, &mut keys, &mut timed, &mut reused);
            assert_eq!(reused, want, "in reused buffers: {stamps:?}");
        }
    }

    /// With a tie-breaking key, elements that share a timestamp and the undated ones go by
    /// (tie, index): with and without undated elements, timestamps in order (no sort) and
    /// out of order, in buffers every earlier case used.
    #[test]
    fn ties_order_equal_timestamps_and_the_undated() {
        let mut rng = crate::testutil::Rng::new(5);
        let mut buffers = SortBuffers::default();
        let (mut keys, mut timed, mut got) = (Vec::new(), Vec::new(), Vec::new());
        for case in 0..400 {
            let n = rng.below(if case % 5 == 0 { 3000 } else { 30 });
            let undated = *rng.pick(&[0.0, 0.1, 0.9]);
            let mut stamps: Vec<Option<i64>> = (0..n)
                .map(|_| (!rng.chance(undated)).then(|| rng.range(-3, 4)))
                .collect();
            if case % 2 == 0 {
                stamps.sort_by_key(|t| t.unwrap_or(i64::MIN));
            }
            let ties: Vec<(bool, u8)> = (0..n)
                .map(|_| (rng.chance(0.2), rng.below(3) as u8))
                .collect();
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| (stamps[i].is_none(), stamps[i], ties[i]));
            let (stamp, tie) = (|i: usize| stamps[i], |i: usize| ties[i]);
            chronological_order_with_ties_into(
                n,
                stamp,
                Some(tie),
                &mut buffers,
                &mut keys,
                &mut timed,
                &mut got,
            );
            assert_eq!(got, want, "case {case}: {stamps:?} {ties:?}");
        }
    }

    #[test]
    fn one_undated_element_anywhere() {
        for n in [1, 2, 3, 300, 1000] {
            for undated in [0, n / 2, n - 1] {
                let stamps: Vec<Option<i64>> = (0..n)
                    .map(|i| (i != undated).then_some((i as i64 * 7919) % 13))
                    .collect();
                let mut want: Vec<usize> = (0..n).collect();
                want.sort_by_key(|&i| (stamps[i].is_none(), stamps[i]));
                assert_eq!(chronological_order(n, |i| stamps[i]), want, "{n} {undated}");
            }
        }
    }
}
