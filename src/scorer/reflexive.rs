//! ReflexiveScorer: the future-relevance hint, clamped. (STUB: to be implemented).

use std::any::Any;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// ReflexiveScorer: the future-relevance hint, clamped.
#[derive(Debug, Clone, Default)]
pub struct ReflexiveScorer;

impl ReflexiveScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for ReflexiveScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
