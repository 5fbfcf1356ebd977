//! CountQuotaSlice (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::{SliceOutcome, Slicer};
use std::any::Any;
use std::sync::Arc;

/// What a count-quota slicer does when a required kind has too few candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScarcityBehavior {
    /// Commit what exists and record a shortfall (the default).
    #[default]
    Degrade,
    /// Fail the slice with `CountRequirementUnmet`.
    Throw,
}

/// One count quota: commit `require_count` items of `kind`, keep at most `cap_count`.
#[derive(Debug, Clone, PartialEq)]
pub struct CountQuotaEntry {
    kind: ContextKind,
    require_count: usize,
    cap_count: usize,
}

impl CountQuotaEntry {
    /// Validates (zero cap with positive require first, then require <= cap).
    pub fn new(kind: ContextKind, require_count: usize, cap_count: usize) -> Result<Self> {
        let _ = (&kind, require_count, cap_count);
        todo!()
    }
    /// The kind.
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }
    /// Items committed in Phase 1.
    pub fn require_count(&self) -> usize {
        self.require_count
    }
    /// Maximum items of the kind in the result.
    pub fn cap_count(&self) -> usize {
        self.cap_count
    }
}

/// CountQuotaSlice: commit required counts, delegate the rest, enforce caps.
#[derive(Debug, Clone)]
pub struct CountQuotaSlice;

impl CountQuotaSlice {
    /// Builds; the inner slicer must not be a KnapsackSlice; kinds must be distinct (D10).
    pub fn new(
        _entries: Vec<CountQuotaEntry>,
        _inner: Arc<dyn Slicer>,
        _scarcity: ScarcityBehavior,
    ) -> Result<Self> {
        todo!()
    }
    /// The entries.
    pub fn entries(&self) -> &[CountQuotaEntry] {
        todo!()
    }
    /// The inner slicer.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        todo!()
    }
    /// The scarcity behaviour.
    pub fn scarcity(&self) -> ScarcityBehavior {
        todo!()
    }
}

impl Slicer for CountQuotaSlice {
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
