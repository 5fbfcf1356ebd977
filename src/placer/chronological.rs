//! ChronologicalPlacer (spec 05 §2): timestamped items oldest first, then the rest;
//! ties by input position.

use crate::error::Result;
use crate::model::ScoredItem;
use crate::placer::Placer;
use crate::radix::{i64_order_key, stable_sort_by_key};

/// Orders items by ascending timestamp; items without one go last. Scores are ignored.
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
        // Order: (has no timestamp, timestamp, position). The timestamped items, taken in
        // position order and sorted stably by timestamp, come first; the others follow in
        // position order (rule C5).
        let mut timed: Vec<(u64, usize)> = Vec::with_capacity(items.len());
        let mut untimed = Vec::new();
        for (pos, s) in items.iter().enumerate() {
            match s.item.timestamp() {
                Some(ts) => timed.push((i64_order_key(ts), pos)),
                None => untimed.push(pos),
            }
        }
        stable_sort_by_key(&mut timed);
        let mut order: Vec<usize> = timed.into_iter().map(|(_, pos)| pos).collect();
        order.extend(untimed);
        Ok(order)
    }
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
}
