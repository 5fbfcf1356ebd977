//! Slicers (spec chapter 04): the trait and the five built-ins.
//!
//! A slicer receives the sorted scored items and the effective budget and returns the
//! positions it selects, in its own output order. Positions, not copies: identity is exact
//! and free.

use std::any::Any;
use std::fmt;

use crate::diagnostics::CountRequirementShortfall;
use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem};

mod count_common;
mod count_constrained_knapsack;
mod count_quota;
#[cfg(test)]
mod differential;
mod greedy;
mod knapsack;
mod quota;
mod shared;
#[cfg(test)]
mod test_support;

pub use count_constrained_knapsack::CountConstrainedKnapsackSlice;
pub use count_quota::{CountQuotaEntry, CountQuotaSlice, ScarcityBehavior};
pub use greedy::GreedySlice;
pub use knapsack::{KnapsackSlice, DEFAULT_BUCKET_SIZE, DEFAULT_TABLE_LIMIT_BYTES};
pub use quota::{QuotaEntry, QuotaSlice};

/// What a slicer returns: the selected positions (indices into its input) in the slicer's
/// output order, plus the side outputs of the count-quota slicers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceOutcome {
    /// Positions into the input slice, each at most once, in output order.
    pub selected: Vec<usize>,
    /// Count requirements Phase 1 could not meet (count-quota slicers under Degrade).
    pub shortfalls: Vec<CountRequirementShortfall>,
    /// Positions that Phase 3 removed because their kind reached its cap.
    pub cap_excluded: Vec<usize>,
}

/// Chooses which scored items fit the budget.
///
/// Contract (spec 04 §1): return only positions of `items`, each at most once; read only
/// `budget.target_tokens()` (and `max_tokens()` when building sub-budgets); return nothing
/// when `items` is empty or the target is `<= 0`.
pub trait Slicer: Send + Sync + fmt::Debug {
    /// Selects positions of `items` within `budget`.
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome>;

    /// True only for [`KnapsackSlice`] (CountQuotaSlice refuses it as inner slicer).
    fn is_knapsack(&self) -> bool {
        false
    }

    /// True for [`QuotaSlice`] (budget simulation refuses it).
    fn is_quota(&self) -> bool {
        false
    }

    /// Per-kind caps of the count-quota slicers; empty for every other slicer. A non-empty
    /// list also marks the slicer as count-quota for diagnostics and budget simulation.
    fn count_caps(&self) -> &[(ContextKind, usize)] {
        &[]
    }

    /// True for CountQuotaSlice and CountConstrainedKnapsackSlice.
    fn is_count_quota(&self) -> bool {
        false
    }

    /// Lets policy code recognise built-in slicers.
    fn as_any(&self) -> &dyn Any;
}
