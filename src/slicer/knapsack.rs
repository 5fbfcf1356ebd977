//! KnapsackSlice (STUB).
use crate::error::Result;
use crate::model::{ContextBudget, ScoredItem};
use crate::slicer::{SliceOutcome, Slicer};
use std::any::Any;

/// Default bucket size.
pub const DEFAULT_BUCKET_SIZE: i64 = 100;
/// Default memory guard for the keep table (D11): 256 MiB.
pub const DEFAULT_TABLE_LIMIT_BYTES: u64 = 256 * 1024 * 1024;

/// KnapsackSlice: 0/1 knapsack over a discretised capacity.
#[derive(Debug, Clone)]
pub struct KnapsackSlice;

impl KnapsackSlice {
    /// Builds with `bucket_size > 0` and the default memory guard.
    pub fn new(_bucket_size: i64) -> Result<Self> {
        todo!()
    }
    /// Builds with `bucket_size > 0` and a keep-table limit in bytes (> 0).
    pub fn with_table_limit(_bucket_size: i64, _limit_bytes: u64) -> Result<Self> {
        todo!()
    }
    /// The bucket size.
    pub fn bucket_size(&self) -> i64 {
        todo!()
    }
    /// The keep-table limit in bytes.
    pub fn table_limit_bytes(&self) -> u64 {
        todo!()
    }
}

impl Slicer for KnapsackSlice {
    fn slice(&self, _items: &[ScoredItem<'_>], _budget: &ContextBudget) -> Result<SliceOutcome> {
        todo!()
    }
    fn is_knapsack(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
