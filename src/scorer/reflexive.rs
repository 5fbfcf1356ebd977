//! ReflexiveScorer: the future-relevance hint, clamped (spec 03 §2.6).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::{score_each, Scorer};

/// ReflexiveScorer: the item's `future_relevance_hint` clamped to [0, 1].
///
/// A missing or non-finite hint (NaN, ±inf) scores 0.0; it is never clamped to a bound.
/// A hint of `-0.0` is returned as `-0.0`. No configuration.
#[derive(Debug, Clone, Default)]
pub struct ReflexiveScorer;

impl ReflexiveScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

/// The spec's checks in order: missing, non-finite, below 0, above 1, else the hint.
#[inline]
pub(crate) fn clamped_hint(hint: Option<f64>) -> f64 {
    match hint {
        Some(h) if h.is_finite() => clamp_unit(h),
        _ => 0.0,
    }
}

/// Clamps a finite value into [0, 1], leaving `-0.0` untouched (`f64::clamp` only replaces
/// values strictly below or above a bound).
pub(super) fn clamp_unit(value: f64) -> f64 {
    value.clamp(0.0, 1.0)
}

impl Scorer for ReflexiveScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        score_each(items, out, |item| {
            clamped_hint(item.future_relevance_hint())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{items_from, run};

    fn hinted(hints: &[Option<f64>]) -> Vec<ContextItem> {
        items_from(hints.len(), |i| {
            let b = ContextItem::builder(format!("item{i}"), 1);
            match hints[i] {
                Some(h) => b.future_relevance_hint(h).build().unwrap(),
                None => b.build().unwrap(),
            }
        })
    }

    #[test]
    fn vectors_and_edge_cases() {
        let hints = [
            Some(0.0),
            Some(0.5),
            Some(1.0),
            Some(1.5),
            Some(-0.3),
            Some(0.75),
            None,
        ];
        assert_eq!(
            run(&ReflexiveScorer::new(), &hinted(&hints)),
            [0.0, 0.5, 1.0, 1.0, 0.0, 0.75, 0.0]
        );
    }

    #[test]
    fn non_finite_hints_score_zero_never_a_bound() {
        let hints = [Some(f64::NAN), Some(f64::INFINITY), Some(f64::NEG_INFINITY)];
        let got = run(&ReflexiveScorer::new(), &hinted(&hints));
        assert!(
            got.iter().all(|s| s.to_bits() == 0.0f64.to_bits()),
            "{got:?}"
        );
    }

    #[test]
    fn negative_zero_is_kept() {
        let got = run(&ReflexiveScorer::new(), &hinted(&[Some(-0.0)]));
        assert_eq!(got[0].to_bits(), (-0.0f64).to_bits());
    }
}
