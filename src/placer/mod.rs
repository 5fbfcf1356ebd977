//! Placers (spec chapter 05 and the UShapedPlacer seed): the trait and both built-ins.

use std::fmt;

use crate::error::Result;
use crate::model::ScoredItem;

mod chronological;
mod u_shaped;

pub use chronological::ChronologicalPlacer;
pub use u_shaped::UShapedPlacer;

/// Orders the final selection.
///
/// Contract (spec 05 §1.2): return a permutation of `0..items.len()` (position `k` of the
/// result names the input position placed k-th); deterministic; ties broken by input
/// position. The pipeline checks that the result is a permutation.
///
/// Every placer also has `as_any()` (through a blanket implementation, never written by
/// hand), which lets policy code recognise the built-in placers by downcasting.
pub trait Placer: crate::downcast::AsAny + Send + Sync + fmt::Debug {
    /// Returns the placement order as input positions.
    fn place(&self, items: &[ScoredItem<'_>]) -> Result<Vec<usize>>;
}
