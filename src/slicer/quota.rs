//! QuotaSlice (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::{SliceOutcome, Slicer};
use std::any::Any;
use std::sync::Arc;

/// One percentage quota: `require` and `cap` in percent of the target.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEntry {
    kind: ContextKind,
    require: f64,
    cap: f64,
}

impl QuotaEntry {
    /// Validates `require` and `cap` in [0, 100] and `require <= cap`.
    pub fn new(kind: ContextKind, require: f64, cap: f64) -> Result<Self> {
        let _ = (&kind, require, cap);
        todo!()
    }
    /// The kind.
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }
    /// Required percentage.
    pub fn require(&self) -> f64 {
        self.require
    }
    /// Cap percentage.
    pub fn cap(&self) -> f64 {
        self.cap
    }
}

/// QuotaSlice: per-kind percentage budgets around an inner slicer.
#[derive(Debug, Clone)]
pub struct QuotaSlice;

impl QuotaSlice {
    /// Builds; the sum of requires must be <= 100 and kinds must be distinct (D10).
    pub fn new(_entries: Vec<QuotaEntry>, _inner: Arc<dyn Slicer>) -> Result<Self> {
        todo!()
    }
    /// The entries.
    pub fn entries(&self) -> &[QuotaEntry] {
        todo!()
    }
    /// The inner slicer.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        todo!()
    }
}

impl Slicer for QuotaSlice {
    fn slice(&self, _items: &[ScoredItem<'_>], _budget: &ContextBudget) -> Result<SliceOutcome> {
        todo!()
    }
    fn is_quota(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
