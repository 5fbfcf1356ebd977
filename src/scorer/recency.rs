//! RecencyScorer: rank by timestamp. (STUB: to be implemented).

use std::any::Any;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// RecencyScorer: rank by timestamp.
#[derive(Debug, Clone, Default)]
pub struct RecencyScorer;

impl RecencyScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for RecencyScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
