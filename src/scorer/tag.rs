//! TagScorer: matched tag weights over the total weight (spec 03 §2.4).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::str_table::StrTable;
use crate::scorer::{config_error, score_each, sum_in_order, validate_table_weight, Scorer};

/// TagScorer: `min(s / total, 1.0)`, where `s` sums the weights of the item's tags and `total` the
/// weights of the whole table.
///
/// Lookup is exact and case-sensitive (`"Important"` does not match `"important"`, Decision D13 in
/// docs/decisions.md). Every occurrence of a repeated item tag adds its weight again. An item
/// without tags, or a table whose total is 0, scores 0.0.
#[derive(Debug, Clone)]
pub struct TagScorer {
    weights: Vec<(String, f64)>,
    lookup: StrTable<f64>,
    total: f64,
}

impl TagScorer {
    /// Builds from (tag, weight) pairs; weights must be >= 0 and finite. Empty and all-zero
    /// tables are legal.
    ///
    /// Entries are checked in order, each for `w < 0` (`tag weight for '<t>' must be
    /// non-negative`, which also catches `-inf`), then for a non-finite `w` (`tag weight
    /// for '<t>' must be finite`). A tag listed twice is rejected with `tag '<t>' appears
    /// more than once`, since the table is a map. `total` is summed once, left to right in
    /// configuration order, so it is reproducible to the bit.
    pub fn new(weights: Vec<(String, f64)>) -> Result<Self> {
        let mut lookup = StrTable::new();
        for (tag, weight) in &weights {
            validate_table_weight(&format!("tag weight for '{tag}'"), *weight)?;
            if !lookup.insert(tag, *weight) {
                return Err(config_error(format!("tag '{tag}' appears more than once")));
            }
        }
        let total = sum_in_order(weights.iter().map(|(_, w)| *w));
        Ok(Self {
            weights,
            lookup,
            total,
        })
    }

    /// The configured weights, in configuration order.
    pub fn weights(&self) -> &[(String, f64)] {
        &self.weights
    }

    /// The item's score (see the type's documentation).
    #[inline]
    pub(super) fn score_item(&self, item: &ContextItem) -> f64 {
        let tags = item.tags();
        if self.total == 0.0 || tags.is_empty() {
            return 0.0;
        }
        let matched = sum_in_order(tags.bytes().filter_map(|tag| self.weight_of(tag)));
        self.score_of_matched(matched, tags.len())
    }

    /// The configured weight of `tag` (its bytes, matched exactly), or `None`.
    #[inline]
    pub(crate) fn weight_of(&self, tag: &[u8]) -> Option<f64> {
        self.lookup.get_bytes(tag)
    }

    /// [`weight_of`](Self::weight_of) for a tag whose `head_words` (`head`) the caller has
    /// already read.
    #[inline]
    pub(crate) fn weight_with_head(&self, tag: &[u8], head: [u64; 2]) -> Option<f64> {
        self.lookup.get_with_head(tag, head)
    }

    /// The score of an item with `tag_count` tags whose matched weights, added left to
    /// right from 0.0 in the item's tag order, sum to `matched`.
    #[inline]
    pub(crate) fn score_of_matched(&self, matched: f64, tag_count: usize) -> f64 {
        if self.total == 0.0 || tag_count == 0 {
            return 0.0;
        }
        // `f64::min` ignores NaN, so an overflowing `inf / inf` table scores 1.0 (as the crate).
        f64::min(matched / self.total, 1.0)
    }
}

impl Scorer for TagScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        score_each(items, out, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{items_from, random_ascii_case, random_name, run};
    use crate::testutil::Rng;

    fn table(entries: &[(&str, f64)]) -> Result<TagScorer> {
        TagScorer::new(entries.iter().map(|(t, w)| (t.to_string(), *w)).collect())
    }

    fn tagged(tags: &[&[&str]]) -> Vec<ContextItem> {
        items_from(tags.len(), |i| {
            ContextItem::builder(format!("item{i}"), 1)
                .tags(tags[i].iter().copied())
                .build()
                .unwrap()
        })
    }

    fn err(entries: &[(&str, f64)]) -> String {
        table(entries).unwrap_err().to_string()
    }

    #[test]
    fn vector_tag_basic() {
        let s = table(&[("important", 3.0), ("recent", 2.0), ("archived", 1.0)]).unwrap();
        let items = tagged(&[
            &["important", "recent", "archived"],
            &["important"],
            &["archived"],
            &["other"],
        ]);
        assert_eq!(run(&s, &items), [1.0, 0.5, 1.0 / 6.0, 0.0]);
    }

    #[test]
    fn vector_tag_no_tags() {
        let s = table(&[("important", 5.0)]).unwrap();
        assert_eq!(run(&s, &tagged(&[&[], &["important"]])), [0.0, 1.0]);
    }

    #[test]
    fn lookup_is_case_sensitive_and_duplicates_count_again() {
        let s = table(&[("Important", 1.0), ("b", 3.0)]).unwrap();
        let items = tagged(&[
            &["important"],
            &["Important"],
            &["Important", "Important"],
            &["b", "b"],
        ]);
        assert_eq!(run(&s, &items), [0.0, 0.25, 0.5, 1.0]);
    }

    #[test]
    fn zero_total_and_empty_table_score_zero() {
        let items = tagged(&[&["a"], &[]]);
        assert_eq!(run(&table(&[("a", 0.0)]).unwrap(), &items), [0.0, 0.0]);
        assert_eq!(run(&table(&[]).unwrap(), &items), [0.0, 0.0]);
    }

    #[test]
    fn overflowing_total_follows_the_crate() {
        let s = table(&[("a", f64::MAX), ("b", f64::MAX)]).unwrap();
        // total = +inf: one match gives MAX/inf = 0, two give inf/inf = NaN, clamped to 1.0.
        assert_eq!(run(&s, &tagged(&[&["a"], &["a", "b"]])), [0.0, 1.0]);
    }

    #[test]
    fn total_is_summed_in_configuration_order() {
        let s = table(&[("a", 0.1), ("b", 0.2), ("c", 0.3)]).unwrap();
        assert_eq!(s.total.to_bits(), ((0.0 + 0.1) + 0.2 + 0.3f64).to_bits());
        assert_eq!(s.weights()[1], ("b".to_string(), 0.2));
    }

    #[test]
    fn validation_messages_and_order() {
        let cfg = |m: &str| format!("invalid scorer configuration: {m}");
        assert_eq!(
            err(&[("t", -0.5)]),
            cfg("tag weight for 't' must be non-negative")
        );
        assert_eq!(
            err(&[("t", f64::NEG_INFINITY)]),
            cfg("tag weight for 't' must be non-negative")
        );
        assert_eq!(
            err(&[("t", f64::NAN)]),
            cfg("tag weight for 't' must be finite")
        );
        assert_eq!(
            err(&[("t", f64::INFINITY)]),
            cfg("tag weight for 't' must be finite")
        );
        assert_eq!(
            err(&[("ok", 1.0), ("u", f64::INFINITY), ("v", -1.0)]),
            cfg("tag weight for 'u' must be finite")
        );
        assert_eq!(
            err(&[("t", 1.0), ("t", 2.0)]),
            cfg("tag 't' appears more than once")
        );
        assert!(
            table(&[("t", 1.0), ("T", 2.0)]).is_ok(),
            "tags differing in case are distinct"
        );
        assert!(table(&[("t", -0.0)]).is_ok());
    }

    /// Matched weights are found by exact (case-sensitive) equality on random tables of up
    /// to 100 tags: long tags differing only past their first 16 bytes or only in case,
    /// non-ASCII tags; the score is the per-item form over a linear search of the table.
    #[test]
    fn lookup_agrees_with_string_equality_on_random_tables() {
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let mut weights: Vec<(String, f64)> = Vec::new();
            for _ in 0..rng.below(100) {
                let tag = random_name(&mut rng);
                if weights.iter().all(|(other, _)| *other != tag) {
                    weights.push((tag, rng.unit() * 3.0));
                }
            }
            let scorer = TagScorer::new(weights.clone()).unwrap();
            let mut probes: Vec<String> = Vec::new();
            for (tag, _) in &weights {
                probes.push(tag.clone());
                probes.push(random_ascii_case(&mut rng, tag));
                probes.push(format!("{tag}x"));
            }
            probes.extend((0..20).map(|_| random_name(&mut rng)));
            let items = items_from(1 + probes.len() / 3, |i| {
                ContextItem::builder(format!("item{i}"), 1)
                    .tags(probes.iter().skip(3 * i).take(3 + i % 2).cloned())
                    .build()
                    .unwrap()
            });
            let total = sum_in_order(weights.iter().map(|(_, w)| *w));
            let want: Vec<f64> = items
                .iter()
                .map(|item| {
                    let matched =
                        sum_in_order(item.tags().iter().filter_map(|tag| {
                            weights.iter().find(|(t, _)| t == tag).map(|(_, w)| *w)
                        }));
                    if total == 0.0 || item.tags().is_empty() {
                        0.0
                    } else {
                        f64::min(matched / total, 1.0)
                    }
                })
                .collect();
            assert_eq!(run(&scorer, &items), want, "seed {seed}");
        }
    }
}
