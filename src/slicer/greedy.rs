//! GreedySlice (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ScoredItem};
use crate::slicer::{SliceOutcome, Slicer};
use std::any::Any;

/// GreedySlice: value-density greedy fill.
#[derive(Debug, Clone, Default)]
pub struct GreedySlice;

impl GreedySlice {
    /// Builds the slicer.
    pub fn new() -> Self {
        Self
    }
}

impl Slicer for GreedySlice {
    fn slice(&self, _items: &[ScoredItem<'_>], _budget: &ContextBudget) -> Result<SliceOutcome> {
        todo!()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
