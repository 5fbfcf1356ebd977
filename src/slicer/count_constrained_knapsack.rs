//! CountConstrainedKnapsackSlice (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::{CountQuotaEntry, KnapsackSlice, ScarcityBehavior, SliceOutcome, Slicer};
use std::any::Any;

/// CountConstrainedKnapsackSlice: count quotas with a knapsack engine for Phase 2.
#[derive(Debug, Clone)]
pub struct CountConstrainedKnapsackSlice;

impl CountConstrainedKnapsackSlice {
    /// Builds; kinds must be distinct (D10).
    pub fn new(
        _entries: Vec<CountQuotaEntry>,
        _knapsack: KnapsackSlice,
        _scarcity: ScarcityBehavior,
    ) -> Result<Self> {
        todo!()
    }
    /// The entries.
    pub fn entries(&self) -> &[CountQuotaEntry] {
        todo!()
    }
    /// The knapsack engine.
    pub fn knapsack(&self) -> &KnapsackSlice {
        todo!()
    }
    /// The scarcity behaviour.
    pub fn scarcity(&self) -> ScarcityBehavior {
        todo!()
    }
}

impl Slicer for CountConstrainedKnapsackSlice {
    fn slice(&self, _items: &[ScoredItem<'_>], _budget: &ContextBudget) -> Result<SliceOutcome> {
        todo!()
    }
    fn count_caps(&self) -> &[(ContextKind, usize)] {
        todo!()
    }
    fn is_count_quota(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
