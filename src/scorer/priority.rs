//! PriorityScorer: rank by priority. (STUB: to be implemented).

use std::any::Any;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// PriorityScorer: rank by priority.
#[derive(Debug, Clone, Default)]
pub struct PriorityScorer;

impl PriorityScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for PriorityScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
