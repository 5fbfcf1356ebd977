//! MetadataTrustScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;

/// MetadataTrustScorer: the parsed `cupel:trust` metadata value, clamped.
#[derive(Debug, Clone)]
pub struct MetadataTrustScorer;

impl MetadataTrustScorer {
    /// The value used when the key is absent or unusable (D16: default 0.5, must be in [0, 1]).
    pub const DEFAULT_SCORE: f64 = 0.5;
    /// Builds with `default_score` in [0, 1].
    pub fn new(_default_score: f64) -> Result<Self> {
        todo!()
    }
    /// The configured default score.
    pub fn default_score(&self) -> f64 {
        todo!()
    }
}

impl Scorer for MetadataTrustScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
