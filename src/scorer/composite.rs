//! CompositeScorer: weighted mean of child scorers (spec 03 §2.7, §5.4).

use std::sync::Arc;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::reflexive::clamped_hint;
use crate::scorer::{
    check_one_slot_per_item, config_error, sum_in_order, KindScorer, MetadataKeyScorer,
    MetadataTrustScorer, ReflexiveScorer, Scorer, TagScorer,
};

/// CompositeScorer: weighted sum of child scores, weights normalised by their sum.
///
/// Each item scores `acc = 0.0; acc = acc + c_k × ŵ_k` over the children in configured order, where
/// `ŵ_k = w_k / T` and `T` is the left-to-right sum of the raw weights. The product and the sum
/// round separately (no fused multiply-add). The output is not clamped: children above 1 (Kind,
/// MetadataKey) push it above 1. It is never `-0.0`.
///
/// Children are shared, immutable scorers, so a composite cannot contain itself (decision D17 in
/// docs/decisions.md). Each child runs one batch pass per composite pass, except that
/// consecutive built-in children whose score of an item depends on that item alone (Kind,
/// Tag, Reflexive, MetadataKey, MetadataTrust) are scored together in one pass over the
/// items, each item's contributions still added in child order.
#[derive(Debug, Clone)]
pub struct CompositeScorer {
    children: Vec<(Arc<dyn Scorer>, f64)>,
    normalized_weights: Vec<f64>,
}

impl CompositeScorer {
    /// Builds from (child, raw weight) pairs; weights must be > 0 and finite.
    ///
    /// Checks, stopping at the first failure: an empty list fails with `at least one
    /// scorer entry is required`; then for each entry in order, `w <= 0` (0, -0, negatives,
    /// -inf) fails with `weight must be positive` and a non-finite `w` (NaN, +inf) with
    /// `weight must be finite`.
    pub fn new(children: Vec<(Arc<dyn Scorer>, f64)>) -> Result<Self> {
        if children.is_empty() {
            return Err(config_error("at least one scorer entry is required"));
        }
        for (_, weight) in &children {
            validate_child_weight(*weight)?;
        }
        let total = sum_in_order(children.iter().map(|(_, w)| *w));
        let normalized_weights = children.iter().map(|(_, w)| *w / total).collect();
        Ok(Self {
            children,
            normalized_weights,
        })
    }

    /// The children with their raw (configured) weights.
    pub fn children(&self) -> &[(Arc<dyn Scorer>, f64)] {
        &self.children
    }

    /// The normalised weights `ŵ_k = w_k / T`, in child order.
    pub fn normalized_weights(&self) -> &[f64] {
        &self.normalized_weights
    }
}

/// One child weight: `<= 0` is reported before non-finite (so NaN reads "finite").
fn validate_child_weight(weight: f64) -> Result<()> {
    if weight <= 0.0 {
        return Err(config_error("weight must be positive"));
    }
    if !weight.is_finite() {
        return Err(config_error("weight must be finite"));
    }
    Ok(())
}

/// `acc[i] = acc[i] + child[i] × weight`, with two roundings per item.
fn accumulate_weighted(acc: &mut [f64], child_scores: &[f64], weight: f64) {
    for (sum, score) in acc.iter_mut().zip(child_scores) {
        let contribution = *score * weight;
        *sum += contribution;
    }
}

/// A built-in child whose score of an item depends on that item alone, so that several can
/// be scored in one pass over the items.
#[derive(Clone, Copy)]
enum PerItem<'a> {
    Kind(&'a KindScorer),
    Tag(&'a TagScorer),
    Reflexive,
    MetadataKey(&'a MetadataKeyScorer),
    MetadataTrust(&'a MetadataTrustScorer),
}

impl<'a> PerItem<'a> {
    /// Recognises the child, or `None` for a scorer that needs its own pass.
    fn of(child: &'a dyn Scorer) -> Option<Self> {
        let any = child.as_any();
        if let Some(kind) = any.downcast_ref::<KindScorer>() {
            Some(Self::Kind(kind))
        } else if let Some(tag) = any.downcast_ref::<TagScorer>() {
            Some(Self::Tag(tag))
        } else if any.is::<ReflexiveScorer>() {
            Some(Self::Reflexive)
        } else if let Some(key) = any.downcast_ref::<MetadataKeyScorer>() {
            Some(Self::MetadataKey(key))
        } else {
            any.downcast_ref::<MetadataTrustScorer>()
                .map(Self::MetadataTrust)
        }
    }

    /// The score the child's own pass would give `item`.
    #[inline]
    fn score(self, item: &ContextItem) -> f64 {
        match self {
            Self::Kind(kind) => kind.score_item(item),
            Self::Tag(tag) => tag.score_item(item),
            Self::Reflexive => clamped_hint(item.future_relevance_hint()),
            Self::MetadataKey(key) => key.score_item(item),
            Self::MetadataTrust(trust) => trust.score_item(item),
        }
    }
}

/// At most this many consecutive per-item children share one pass (a longer run takes
/// several passes), so that the group lives on the stack.
const GROUP_MAX: usize = 8;

/// `acc[i] = acc[i] + c_k(item_i) × w_k` for each child k of `group` in order: the same
/// operations, in the same order, as one [`accumulate_weighted`] pass per child.
fn accumulate_per_item(acc: &mut [f64], items: &[&ContextItem], group: &[(PerItem<'_>, f64)]) {
    for (sum, item) in acc.iter_mut().zip(items) {
        let mut total = *sum;
        for &(child, weight) in group {
            let contribution = child.score(item) * weight;
            total += contribution;
        }
        *sum = total;
    }
}

impl Scorer for CompositeScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        self.score_all_at(items, &[], out)
    }

    fn score_all_at(
        &self,
        items: &[&ContextItem],
        positions: &[usize],
        out: &mut [f64],
    ) -> Result<()> {
        check_one_slot_per_item(items, out)?;
        out.fill(0.0);
        let mut child_scores = Vec::new();
        let mut k = 0;
        while let Some((child, _)) = self.children.get(k) {
            let mut group = [(PerItem::Reflexive, 0.0); GROUP_MAX];
            let mut len = 0;
            while len < GROUP_MAX {
                let Some((child, _)) = self.children.get(k + len) else {
                    break;
                };
                let Some(per_item) = PerItem::of(child.as_ref()) else {
                    break;
                };
                group[len] = (per_item, self.normalized_weights[k + len]);
                len += 1;
            }
            if len > 0 {
                accumulate_per_item(out, items, &group[..len]);
                k += len;
                continue;
            }
            let weight = self.normalized_weights[k];
            if k == 0 {
                // The first child scores straight into `out` (still all 0.0, as a fresh
                // buffer of child scores would be): `0.0 + c × ŵ` as in every other pass.
                child.score_all_at(items, positions, out)?;
                for sum in out.iter_mut() {
                    *sum = 0.0 + *sum * weight;
                }
            } else {
                if child_scores.is_empty() {
                    child_scores = vec![0.0; items.len()];
                }
                child.score_all_at(items, positions, &mut child_scores)?;
                accumulate_weighted(out, &child_scores, weight);
            }
            k += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextKind;
    use crate::scorer::priority::tests::naive_priority;
    use crate::scorer::recency::tests::naive_recency;
    use crate::scorer::test_support::{
        assert_bits_eq, items_from, plain, random_float, random_items, run, try_run, FixedScores,
    };
    use crate::scorer::{PerItemScorer, PriorityScorer, RecencyScorer};
    use crate::testutil::Rng;
    use crate::Error;

    fn fixed(values: &[f64]) -> Arc<dyn Scorer> {
        Arc::new(FixedScores(values.to_vec()))
    }

    fn err(children: Vec<(Arc<dyn Scorer>, f64)>) -> String {
        CompositeScorer::new(children).unwrap_err().to_string()
    }

    /// The per-item CompositeScorer of spec 03 §2.7; `children[k](i)` is child k's score.
    /// [`naive_composite`] of every item `0..n`, child `k` scoring item `i` as
    /// `tables[k][i]` with raw weight `weights[k]`.
    fn naive_of_tables(tables: &[Vec<f64>], weights: &[f64], n: usize) -> Vec<f64> {
        let lookups: Vec<_> = tables.iter().map(|t| move |i: usize| t[i]).collect();
        let children: Vec<(&dyn Fn(usize) -> f64, f64)> = lookups
            .iter()
            .zip(weights)
            .map(|(f, w)| (f as &dyn Fn(usize) -> f64, *w))
            .collect();
        (0..n).map(|i| naive_composite(i, &children)).collect()
    }

    fn naive_composite(i: usize, children: &[(&dyn Fn(usize) -> f64, f64)]) -> f64 {
        let mut total = 0.0;
        for (_, w) in children {
            total += *w;
        }
        let mut acc = 0.0;
        for (child, w) in children {
            let normalized = *w / total;
            acc += child(i) * normalized; // acc + (c × ŵ), two roundings
        }
        acc
    }

    #[test]
    fn vector_composite_weighted() {
        let items = vec![
            ContextItem::builder("old-low", 100)
                .timestamp(1)
                .priority(1)
                .build()
                .unwrap(),
            ContextItem::builder("new-high", 100)
                .timestamp(2)
                .priority(10)
                .build()
                .unwrap(),
            ContextItem::builder("old-high", 100)
                .timestamp(1)
                .priority(10)
                .build()
                .unwrap(),
        ];
        let s = CompositeScorer::new(vec![
            (Arc::new(RecencyScorer::new()), 3.0),
            (Arc::new(PriorityScorer::new()), 1.0),
        ])
        .unwrap();
        // recency 0, 1, 0 (tied oldest); priority 0, 0.5, 0.5 (tied maximum).
        assert_eq!(run(&s, &items), [0.0, 0.875, 0.125]);
    }

    #[test]
    fn weights_are_relative_and_unclamped() {
        let items = items_from(2, plain);
        let a = CompositeScorer::new(vec![(fixed(&[1.0, 0.0]), 3.0), (fixed(&[0.0, 1.0]), 1.0)])
            .unwrap();
        let b = CompositeScorer::new(vec![(fixed(&[1.0, 0.0]), 0.75), (fixed(&[0.0, 1.0]), 0.25)])
            .unwrap();
        assert_eq!(run(&a, &items), [0.75, 0.25]);
        assert_eq!(run(&b, &items), [0.75, 0.25]);
        assert_eq!(a.normalized_weights(), [0.75, 0.25]);
        assert_eq!(a.children()[0].1, 3.0);
        let above = CompositeScorer::new(vec![(fixed(&[3.0, 1.5]), 1.0)]).unwrap();
        assert_eq!(run(&above, &items), [3.0, 1.5]);
    }

    #[test]
    fn rounding_edge_cases() {
        let items = items_from(1, plain);
        let ones = |w: f64| (fixed(&[1.0]), w);
        let s = CompositeScorer::new(vec![ones(0.1), ones(0.2), ones(0.3)]).unwrap();
        assert_eq!(run(&s, &items), [0.9999999999999999]);
        // A single child passes its score through, except that -0.0 becomes +0.0.
        let single = CompositeScorer::new(vec![(fixed(&[-0.0]), 2.0)]).unwrap();
        assert_eq!(run(&single, &items)[0].to_bits(), 0.0f64.to_bits());
        // Finite weights summing to +inf make every score 0.
        let huge = CompositeScorer::new(vec![ones(1e308), ones(1e308)]).unwrap();
        assert_eq!(run(&huge, &items), [0.0]);
    }

    #[test]
    fn validation_messages_and_order() {
        let cfg = |m: &str| format!("invalid scorer configuration: {m}");
        assert_eq!(err(vec![]), cfg("at least one scorer entry is required"));
        for bad in [0.0, -0.0, -1.0, f64::NEG_INFINITY] {
            assert_eq!(err(vec![(fixed(&[]), bad)]), cfg("weight must be positive"));
        }
        for bad in [f64::NAN, f64::INFINITY] {
            assert_eq!(err(vec![(fixed(&[]), bad)]), cfg("weight must be finite"));
        }
        // The first failing entry decides.
        assert_eq!(
            err(vec![
                (fixed(&[]), 1.0),
                (fixed(&[]), f64::NAN),
                (fixed(&[]), -1.0)
            ]),
            cfg("weight must be finite")
        );
        assert_eq!(
            err(vec![(fixed(&[]), -1.0), (fixed(&[]), f64::NAN)]),
            cfg("weight must be positive")
        );
    }

    #[test]
    fn child_errors_propagate() {
        let failing = PerItemScorer::new(|_, _| Err(Error::Callback("child failed".into())));
        let s = CompositeScorer::new(vec![(fixed(&[1.0]), 1.0), (Arc::new(failing), 1.0)]).unwrap();
        assert_eq!(
            try_run(&s, &items_from(1, plain)).unwrap_err(),
            Error::Callback("child failed".into())
        );
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit_with_fixed_children() {
        for seed in 40_000..45_000 {
            let mut rng = Rng::new(seed);
            let n = rng.below(20);
            let child_count = 1 + rng.below(5);
            let special = *rng.pick(&[0.0, 0.1, 0.5]);
            let tables: Vec<Vec<f64>> = (0..child_count)
                .map(|_| (0..n).map(|_| random_float(&mut rng, special)).collect())
                .collect();
            let weights: Vec<f64> = (0..child_count).map(|_| random_weight(&mut rng)).collect();

            let scorer = CompositeScorer::new(
                tables
                    .iter()
                    .zip(&weights)
                    .map(|(t, w)| (fixed(t), *w))
                    .collect(),
            )
            .unwrap();
            let want = naive_of_tables(&tables, &weights, n);
            assert_bits_eq(seed, &run(&scorer, &items_from(n, plain)), &want);
        }
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit_with_nested_relative_children() {
        for seed in 45_000..47_000 {
            let mut rng = Rng::new(seed);
            let items = random_items(&mut rng, 30);
            let n = items.len();
            let (w_inner, w_rec, w_pri, w_nested) = (
                random_weight(&mut rng),
                random_weight(&mut rng),
                random_weight(&mut rng),
                random_weight(&mut rng),
            );
            let inner = CompositeScorer::new(vec![
                (Arc::new(RecencyScorer::new()), w_rec),
                (Arc::new(PriorityScorer::new()), w_pri),
            ])
            .unwrap();
            let outer = CompositeScorer::new(vec![
                (Arc::new(PriorityScorer::new()), w_inner),
                (Arc::new(inner), w_nested),
            ])
            .unwrap();

            let recency = |i: usize| naive_recency(i, &items);
            let priority = |i: usize| naive_priority(i, &items);
            let nested = |i: usize| naive_composite(i, &[(&recency, w_rec), (&priority, w_pri)]);
            let want: Vec<f64> = (0..n)
                .map(|i| naive_composite(i, &[(&priority, w_inner), (&nested, w_nested)]))
                .collect();
            assert_bits_eq(seed, &run(&outer, &items), &want);
        }
    }

    /// Random items with every field a per-item child reads: kinds, tags, hints, and the
    /// metadata keys of MetadataKey ("k") and MetadataTrust.
    fn items_for_per_item_children(rng: &mut Rng) -> Vec<ContextItem> {
        let kinds = [
            "Message",
            "memory",
            "ToolOutput",
            "SYSTEMPROMPT",
            "Custom-Kind",
        ];
        let tags = [
            "a",
            "A",
            "user-pref",
            "user-prefs",
            "",
            "é",
            "a-very-long-tag-name",
        ];
        let base = rng.next_u64();
        items_from(rng.below(40), |i| {
            let mut rng = Rng::new(base.wrapping_add(i as u64));
            let mut b = ContextItem::builder(format!("item{i}"), 1)
                .kind(ContextKind::new(*rng.pick(&kinds)).unwrap())
                .tags((0..rng.below(4)).map(|_| *rng.pick(&tags)))
                .future_relevance_hint(random_float(&mut rng, 0.3))
                .timestamp(rng.range(0, 5))
                .priority(rng.range(0, 3));
            if rng.chance(0.5) {
                b = b.metadata_entry("k", *rng.pick(&["v", "w"]));
            }
            if rng.chance(0.5) {
                let trust = *rng.pick(&["0.25", "2", "-1", "NaN", "x"]);
                b = b.metadata_entry(MetadataTrustScorer::TRUST_KEY, trust);
            }
            b.build().unwrap()
        })
    }

    /// One random child: a per-item built-in (scored in a shared pass) or one that needs
    /// its own pass.
    fn random_child(rng: &mut Rng) -> Arc<dyn Scorer> {
        match rng.below(8) {
            0 => Arc::new(RecencyScorer::new()),
            1 => Arc::new(PriorityScorer::new()),
            2 => Arc::new(KindScorer::new()),
            3 => Arc::new(
                KindScorer::with_weights(vec![
                    (ContextKind::new("custom-kind").unwrap(), 2.5),
                    (ContextKind::new("Memory").unwrap(), 0.3),
                ])
                .unwrap(),
            ),
            4 => Arc::new(
                TagScorer::new(vec![
                    ("a".into(), 0.7),
                    ("user-pref".into(), 1.0),
                    ("a-very-long-tag-name".into(), 0.1),
                    ("é".into(), 0.2),
                ])
                .unwrap(),
            ),
            5 => Arc::new(ReflexiveScorer::new()),
            6 => Arc::new(MetadataKeyScorer::new("k", "v", 1.5).unwrap()),
            _ => Arc::new(MetadataTrustScorer::new(0.4).unwrap()),
        }
    }

    #[test]
    fn shared_passes_match_one_pass_per_child_bit_for_bit() {
        for seed in 47_000..49_000 {
            let mut rng = Rng::new(seed);
            let items = items_for_per_item_children(&mut rng);
            // Up to 12 children, so that runs longer than one shared pass occur.
            let children: Vec<(Arc<dyn Scorer>, f64)> = (0..1 + rng.below(12))
                .map(|_| (random_child(&mut rng), random_weight(&mut rng)))
                .collect();
            let scorer = CompositeScorer::new(children.clone()).unwrap();
            let child_scores: Vec<Vec<f64>> = children
                .iter()
                .map(|(c, _)| run(c.as_ref(), &items))
                .collect();
            let weights: Vec<f64> = children.iter().map(|(_, w)| *w).collect();
            let want = naive_of_tables(&child_scores, &weights, items.len());
            assert_bits_eq(seed, &run(&scorer, &items), &want);
        }
    }

    #[test]
    fn a_run_of_more_per_item_children_than_one_pass_takes() {
        let items = items_from(3, |i| {
            ContextItem::builder(format!("item{i}"), 1)
                .future_relevance_hint(0.1 * (i + 1) as f64)
                .build()
                .unwrap()
        });
        let n = 2 * GROUP_MAX + 3;
        let children: Vec<(Arc<dyn Scorer>, f64)> = (0..n)
            .map(|k| {
                (
                    Arc::new(ReflexiveScorer::new()) as Arc<dyn Scorer>,
                    (k + 1) as f64,
                )
            })
            .collect();
        let scorer = CompositeScorer::new(children.clone()).unwrap();
        let hint = |i: usize| 0.1 * (i + 1) as f64;
        let naive_children: Vec<(&dyn Fn(usize) -> f64, f64)> = children
            .iter()
            .map(|(_, w)| (&hint as &dyn Fn(usize) -> f64, *w))
            .collect();
        let want: Vec<f64> = (0..3)
            .map(|i| naive_composite(i, &naive_children))
            .collect();
        assert_bits_eq(0, &run(&scorer, &items), &want);
    }

    /// A positive finite weight of varied magnitude.
    fn random_weight(rng: &mut Rng) -> f64 {
        match rng.below(4) {
            0 => *rng.pick(&[0.1, 0.2, 0.3, 1.0, 3.0, 1e308, 5e-324]),
            1 => rng.range(1, 10) as f64,
            _ => rng.unit() * 10.0 + f64::MIN_POSITIVE,
        }
    }
}
