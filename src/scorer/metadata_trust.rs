//! MetadataTrustScorer: the `cupel:trust` metadata value, clamped (spec 03 §2.9).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::reflexive::clamp_unit;
use crate::scorer::{config_error, score_each, Scorer};

/// MetadataTrustScorer: the item's `cupel:trust` metadata value parsed as a decimal
/// number and clamped to [0, 1].
///
/// The value is parsed exactly as Rust's `str::parse::<f64>` does: the whole string, no
/// surrounding whitespace, no hex, no locale. An absent key, an unparsable value, or a
/// non-finite one (`"NaN"`, `"inf"`, `"1e400"`) scores the configured default; it is never
/// clamped. `"-0"` scores `-0.0`.
#[derive(Debug, Clone)]
pub struct MetadataTrustScorer {
    default_score: f64,
}

impl MetadataTrustScorer {
    /// The value used when the key is absent or unusable (decision D16 in docs/decisions.md:
    /// default 0.5, must be in [0, 1]).
    pub const DEFAULT_SCORE: f64 = 0.5;

    /// The metadata key read by this scorer.
    pub const TRUST_KEY: &'static str = "cupel:trust";

    /// Builds with `default_score` in [0, 1] (inclusive); anything else, NaN included,
    /// fails with `defaultScore must be in [0.0, 1.0]`.
    pub fn new(default_score: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&default_score) {
            return Err(config_error("defaultScore must be in [0.0, 1.0]"));
        }
        Ok(Self { default_score })
    }

    /// The configured default score.
    pub fn default_score(&self) -> f64 {
        self.default_score
    }

    /// The item's score (see the type's documentation).
    pub(super) fn score_item(&self, item: &ContextItem) -> f64 {
        item.metadata()
            .get(Self::TRUST_KEY)
            .and_then(|value| value.parse::<f64>().ok())
            .filter(|trust| trust.is_finite())
            .map_or(self.default_score, clamp_unit)
    }
}

impl Default for MetadataTrustScorer {
    /// The scorer with [`MetadataTrustScorer::DEFAULT_SCORE`].
    fn default() -> Self {
        Self {
            default_score: Self::DEFAULT_SCORE,
        }
    }
}

impl Scorer for MetadataTrustScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        score_each(items, out, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{items_from, plain, run};

    fn trusted(values: &[&str]) -> Vec<ContextItem> {
        items_from(values.len(), |i| {
            ContextItem::builder(format!("item{i}"), 1)
                .metadata_entry("cupel:trust", values[i])
                .build()
                .unwrap()
        })
    }

    fn scores(default: f64, values: &[&str]) -> Vec<f64> {
        run(
            &MetadataTrustScorer::new(default).unwrap(),
            &trusted(values),
        )
    }

    #[test]
    fn vectors() {
        assert_eq!(scores(0.5, &["0.85", "1.5", "NaN"]), [0.85, 1.0, 0.5]);
        assert_eq!(run(&MetadataTrustScorer::default(), &[plain(0)]), [0.5]);
    }

    #[test]
    fn parse_and_clamp_edge_cases() {
        let values = [
            "0.0", "0.75", "1.0", "-0.1", "1.5", "5.", ".5", "+0.25", "2.5e-1", "1E0", "1e-400",
        ];
        assert_eq!(
            scores(0.3, &values),
            [0.0, 0.75, 1.0, 0.0, 1.0, 1.0, 0.5, 0.25, 0.25, 1.0, 0.0]
        );
        let neg_zero = scores(0.3, &["-0"]);
        assert_eq!(neg_zero[0].to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn unusable_values_fall_back_to_the_default() {
        let values = [
            "high",
            "",
            "NaN",
            "+Infinity",
            "-Infinity",
            "inf",
            "1e400",
            " 0.5",
            "0.5 ",
            "+",
            ".",
            "e5",
            "0x1p3",
            "1_0",
            "1,5",
        ];
        let got = scores(0.25, &values);
        assert!(got.iter().all(|s| *s == 0.25), "{got:?}");
        let other_key = ContextItem::builder("x", 1)
            .metadata_entry("Cupel:Trust", "0.9")
            .build()
            .unwrap();
        assert_eq!(
            run(&MetadataTrustScorer::new(0.25).unwrap(), &[other_key]),
            [0.25]
        );
    }

    #[test]
    fn default_score_validation() {
        for ok in [0.0, 1.0, 0.5, -0.0] {
            assert_eq!(
                MetadataTrustScorer::new(ok)
                    .unwrap()
                    .default_score()
                    .to_bits(),
                ok.to_bits()
            );
        }
        for bad in [-0.01, 1.01, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                MetadataTrustScorer::new(bad).unwrap_err().to_string(),
                "invalid scorer configuration: defaultScore must be in [0.0, 1.0]"
            );
        }
        assert_eq!(MetadataTrustScorer::DEFAULT_SCORE, 0.5);
    }
}
