//! MetadataKeyScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;

/// MetadataKeyScorer: `boost` when `metadata[key] == value`, else 1.0.
#[derive(Debug, Clone)]
pub struct MetadataKeyScorer;

impl MetadataKeyScorer {
    /// Builds; `boost` must be finite and > 0.
    pub fn new(_key: impl Into<String>, _value: impl Into<String>, _boost: f64) -> Result<Self> {
        todo!()
    }
    /// The metadata key.
    pub fn key(&self) -> &str {
        todo!()
    }
    /// The value that must match.
    pub fn value(&self) -> &str {
        todo!()
    }
    /// The score on a match.
    pub fn boost(&self) -> f64 {
        todo!()
    }
}

impl Scorer for MetadataKeyScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
