//! MetadataKeyScorer: a boost when one metadata entry matches (spec 03 §2.11).

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::{config_error, score_each, Scorer};

/// MetadataKeyScorer: `boost` when `metadata[key] == value`, else the neutral 1.0.
///
/// Key and value compare exactly (byte-wise, case-sensitive, no trimming or parsing:
/// `"1.0"` ≠ `"1"`). The result is never clamped. Inside a CompositeScorer a match adds
/// `ŵ·(boost − 1)` to the weighted sum; nothing multiplies.
#[derive(Debug, Clone)]
pub struct MetadataKeyScorer {
    key: String,
    value: String,
    boost: f64,
}

impl MetadataKeyScorer {
    /// Builds; `boost` must be finite and > 0 (0 < boost < 1 demotes, 1.0 is neutral), else
    /// fails with `boost must be a finite value greater than 0.0`.
    pub fn new(key: impl Into<String>, value: impl Into<String>, boost: f64) -> Result<Self> {
        if !(boost.is_finite() && boost > 0.0) {
            return Err(config_error(
                "boost must be a finite value greater than 0.0",
            ));
        }
        Ok(Self {
            key: key.into(),
            value: value.into(),
            boost,
        })
    }
    /// The metadata key.
    pub fn key(&self) -> &str {
        &self.key
    }
    /// The value that must match.
    pub fn value(&self) -> &str {
        &self.value
    }
    /// The score on a match.
    pub fn boost(&self) -> f64 {
        self.boost
    }

    /// The item's score (see the type's documentation).
    pub(super) fn score_item(&self, item: &ContextItem) -> f64 {
        match item.metadata().get(&self.key) {
            Some(stored) if *stored == self.value => self.boost,
            _ => 1.0,
        }
    }
}

impl Scorer for MetadataKeyScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        score_each(items, out, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorer::test_support::{plain, run};

    fn with_meta(key: &str, value: &str) -> ContextItem {
        ContextItem::builder("x", 1)
            .metadata_entry(key, value)
            .build()
            .unwrap()
    }

    #[test]
    fn vectors() {
        let s = MetadataKeyScorer::new("cupel:priority", "high", 1.5).unwrap();
        let items = [
            with_meta("cupel:priority", "high"),
            with_meta("cupel:priority", "normal"),
            plain(0),
        ];
        assert_eq!(run(&s, &items), [1.5, 1.0, 1.0]);
        assert_eq!(
            (s.key(), s.value(), s.boost()),
            ("cupel:priority", "high", 1.5)
        );
    }

    #[test]
    fn comparison_is_exact() {
        let s = MetadataKeyScorer::new("k", "1.0", 0.25).unwrap();
        let items = [
            with_meta("k", "1.0"),
            with_meta("k", "1"),
            with_meta("k", "1.0 "),
            with_meta("K", "1.0"),
            with_meta("k", "1.0"),
        ];
        assert_eq!(run(&s, &items), [0.25, 1.0, 1.0, 1.0, 0.25]);
        assert!(MetadataKeyScorer::new("", "", 1.0).is_ok());
    }

    #[test]
    fn boost_validation() {
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                MetadataKeyScorer::new("k", "v", bad)
                    .unwrap_err()
                    .to_string(),
                "invalid scorer configuration: boost must be a finite value greater than 0.0"
            );
        }
        assert!(MetadataKeyScorer::new("k", "v", 5e-324).is_ok());
        assert!(MetadataKeyScorer::new("k", "v", f64::MAX).is_ok());
    }
}
