//! FrequencyScorer: share of peers with a common tag. (STUB: to be implemented).

use std::any::Any;

use crate::error::Result;
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// FrequencyScorer: share of peers with a common tag.
#[derive(Debug, Clone, Default)]
pub struct FrequencyScorer;

impl FrequencyScorer {
    /// Builds the scorer.
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for FrequencyScorer {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
