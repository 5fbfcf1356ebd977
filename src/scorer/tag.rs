//! TagScorer (STUB).
use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;
use std::any::Any;

/// TagScorer: matched tag weights over the total weight.
#[derive(Debug, Clone)]
pub struct TagScorer;

impl TagScorer {
    /// Builds from (tag, weight) pairs; weights must be >= 0 and finite.
    pub fn new(_weights: Vec<(String, f64)>) -> Result<Self> {
        todo!()
    }
    /// The configured weights, in configuration order.
    pub fn weights(&self) -> &[(String, f64)] {
        todo!()
    }
}

impl Scorer for TagScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
