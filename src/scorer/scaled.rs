//! ScaledScorer: min-max normalisation of an inner scorer (spec 03 §2.8, §5.3).

use std::sync::Arc;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::{check_one_slot_per_item, Scorer};

/// ScaledScorer: maps the inner scores of one pass linearly onto [0, 1] with
/// `(r − lo) / (hi − lo)`, `lo` and `hi` being the smallest and largest inner scores.
///
/// The bounds come from strict `<` / `>` comparisons in item order, so NaN never becomes a
/// bound and, of `-0.0` and `+0.0`, the one seen first does. An item whose own inner score
/// is not finite scores 0.5 (the reference crate's rule; the spec formula would give NaN),
/// and so does every item when all inner scores are equal. Another item's inner score of
/// `-inf` makes the finite items score NaN, exactly as in the spec and the crate.
///
/// The inner scorer runs once per pass (the per-item form would run it N times).
#[derive(Debug, Clone)]
pub struct ScaledScorer {
    inner: Arc<dyn Scorer>,
}

impl ScaledScorer {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Scorer>) -> Self {
        Self { inner }
    }
    /// The inner scorer.
    pub fn inner(&self) -> &Arc<dyn Scorer> {
        &self.inner
    }
}

/// The smallest and largest score, updated only on strict `<` / `>` in index order
/// (starting from `+inf` / `-inf`).
fn strict_bounds(scores: &[f64]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &s in scores {
        if s < lo {
            lo = s;
        }
        if s > hi {
            hi = s;
        }
    }
    (lo, hi)
}

/// Rescales one inner score against the pass's bounds.
fn rescale(raw: f64, lo: f64, hi: f64) -> f64 {
    if !raw.is_finite() || hi == lo {
        return 0.5;
    }
    (raw - lo) / (hi - lo)
}

impl Scorer for ScaledScorer {
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
        if items.is_empty() {
            return Ok(());
        }
        // The inner pass writes the raw scores in place; they are rescaled where they lie.
        self.inner.score_all_at(items, positions, out)?;
        let (lo, hi) = strict_bounds(out);
        for score in out.iter_mut() {
            *score = rescale(*score, lo, hi);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::priority::tests::naive_priority;
    use crate::scorer::recency::tests::naive_recency;
    use crate::scorer::test_support::{
        assert_bits_eq, items_from, plain, random_float, random_items, run, try_run, FixedScores,
    };
    use crate::scorer::{PriorityScorer, RecencyScorer};
    use crate::testutil::Rng;

    /// The per-item ScaledScorer of spec 03 §2.8 with the crate's non-finite rule;
    /// `inner(j)` is the per-item inner score of item `j`, evaluated N times per item.
    fn naive_scaled(i: usize, n: usize, inner: &dyn Fn(usize) -> f64) -> f64 {
        if n == 0 {
            return 0.5;
        }
        let (mut lo, mut hi, mut raw) = (f64::INFINITY, f64::NEG_INFINITY, f64::NAN);
        for j in 0..n {
            let s = inner(j);
            if s < lo {
                lo = s;
            }
            if s > hi {
                hi = s;
            }
            if j == i {
                raw = s;
            }
        }
        if !raw.is_finite() || hi == lo {
            return 0.5;
        }
        (raw - lo) / (hi - lo)
    }

    fn scaled_fixed(values: &[f64]) -> Vec<f64> {
        let scorer = ScaledScorer::new(Arc::new(FixedScores(values.to_vec())));
        run(&scorer, &items_from(values.len(), plain))
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn spec_edge_cases() {
        assert_eq!(scaled_fixed(&[]), Vec::<f64>::new());
        assert_eq!(scaled_fixed(&[0.3]), [0.5]);
        assert_eq!(scaled_fixed(&[7.0, 7.0, 7.0]), [0.5, 0.5, 0.5]);
        assert_eq!(scaled_fixed(&[2.0, 5.0]), [0.0, 1.0]);
        assert_eq!(scaled_fixed(&[-10.0, 0.0, 10.0]), [0.0, 0.5, 1.0]);
    }

    #[test]
    fn non_finite_inner_scores() {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        // Another item's NaN is ignored; the item's own NaN scores 0.5.
        assert_eq!(scaled_fixed(&[1.0, nan, 3.0]), [0.0, 0.5, 1.0]);
        // Another item's +inf becomes hi: finite items score 0.
        assert_eq!(scaled_fixed(&[1.0, inf, 3.0]), [0.0, 0.5, 0.0]);
        // Another item's -inf becomes lo: finite items score inf/inf = NaN.
        let got = scaled_fixed(&[1.0, -inf, 3.0]);
        assert!(
            got[0].is_nan() && got[2].is_nan() && got[1] == 0.5,
            "{got:?}"
        );
        assert_eq!(scaled_fixed(&[nan, nan]), [0.5, 0.5]);
    }

    #[test]
    fn signed_zero_bound_is_the_first_seen() {
        // lo = -0.0 (first): (+0.0 − −0.0) = +0.0; lo = +0.0 (first): (−0.0 − +0.0) = −0.0.
        assert_eq!(
            bits(&scaled_fixed(&[-0.0, 0.0, 1.0])),
            bits(&[0.0, 0.0, 1.0])
        );
        assert_eq!(
            bits(&scaled_fixed(&[0.0, -0.0, 1.0])),
            bits(&[0.0, -0.0, 1.0])
        );
    }

    #[test]
    fn inner_errors_propagate() {
        let failing =
            crate::scorer::PerItemScorer::new(|_, _| Err(crate::Error::Callback("boom".into())));
        let scorer = ScaledScorer::new(Arc::new(failing));
        assert_eq!(
            try_run(&scorer, &[plain(0)]).unwrap_err(),
            crate::Error::Callback("boom".into())
        );
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit_with_special_inner_scores() {
        for seed in 30_000..35_000 {
            let mut rng = Rng::new(seed);
            let n = rng.below(30);
            let special = *rng.pick(&[0.0, 0.2, 0.6, 1.0]);
            let values: Vec<f64> = (0..n).map(|_| random_float(&mut rng, special)).collect();
            let scorer = ScaledScorer::new(Arc::new(FixedScores(values.clone())));
            let want: Vec<f64> = (0..n).map(|i| naive_scaled(i, n, &|j| values[j])).collect();
            assert_bits_eq(seed, &run(&scorer, &items_from(n, plain)), &want);
        }
    }

    #[test]
    fn fast_path_matches_naive_bit_for_bit_with_relative_and_nested_inners() {
        for seed in 35_000..37_000 {
            let mut rng = Rng::new(seed);
            let items = random_items(&mut rng, 25);
            let n = items.len();
            // The innermost per-item scores are pure, so they are computed once per case.
            let recency_raw: Vec<f64> = (0..n).map(|j| naive_recency(j, &items)).collect();
            let priority_raw: Vec<f64> = (0..n).map(|j| naive_priority(j, &items)).collect();

            let recency = ScaledScorer::new(Arc::new(RecencyScorer::new()));
            let want: Vec<f64> = (0..n)
                .map(|i| naive_scaled(i, n, &|j| recency_raw[j]))
                .collect();
            assert_bits_eq(seed, &run(&recency, &items), &want);

            let nested =
                ScaledScorer::new(Arc::new(ScaledScorer::new(Arc::new(PriorityScorer::new()))));
            let level1 = |j: usize| naive_scaled(j, n, &|k| priority_raw[k]);
            let want: Vec<f64> = (0..n).map(|i| naive_scaled(i, n, &level1)).collect();
            assert_bits_eq(seed, &run(&nested, &items), &want);
        }
    }
}
