//! Slicers (spec chapter 04): the trait and the five built-ins.
//!
//! A slicer receives the sorted scored items and the effective budget and returns the
//! positions it selects, in its own output order. Positions, not copies: identity is exact
//! and free.
//!
//! When the items contain groups (`docs/groups.md`), the pipeline calls
//! [`Slicer::slice_grouped`] with the items' [`Units`] instead: every built-in slicer
//! selects whole units (a group is one unit: its members' tokens, its value from its
//! members' scores); any other slicer sees the items alone, and a group it returns only in
//! part is dropped whole.
//!
//! When items have variants (`docs/variants.md`), the pipeline calls
//! [`Slicer::slice_grouped`] too, with units that have **levels**: every built-in slicer
//! chooses at most one level per unit and says which form each selected position uses in
//! [`SliceOutcome::forms`]. The multiple-choice knapsack lives in its own module.

use std::fmt;

use crate::diagnostics::CountRequirementShortfall;
use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem, Units};

mod count_common;
mod count_constrained_knapsack;
mod count_quota;
mod greedy;
mod knapsack;
mod multiple_choice;
mod quota;
mod shared;
#[cfg(test)]
mod test_support;

pub use count_constrained_knapsack::CountConstrainedKnapsackSlice;
pub use count_quota::{CountQuotaEntry, CountQuotaSlice, ScarcityBehavior};
pub(crate) use greedy::select_columns as greedy_select_columns;
pub(crate) use greedy::select_columns_in as greedy_select_columns_in;
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
    /// Grouped runs only: positions the slicer selected from a group it did not select
    /// whole, which were dropped (a group is taken whole or not at all).
    pub partial_groups: Vec<usize>,
    /// The form each selected position uses (0 = the item itself; `docs/variants.md`):
    /// empty when every selected item is used in full, otherwise parallel to `selected`.
    pub forms: Vec<usize>,
}

impl SliceOutcome {
    /// The form of the `i`-th selected position (0 when `forms` is empty).
    pub fn form(&self, i: usize) -> usize {
        self.forms.get(i).copied().unwrap_or(0)
    }
}

/// Chooses which scored items fit the budget.
///
/// Contract (spec 04 §1): return only positions of `items`, each at most once; read only
/// `budget.target_tokens()` (and `max_tokens()` when building sub-budgets); return nothing
/// when `items` is empty or the target is `<= 0`.
///
/// Every slicer also has `as_any()` (through a blanket implementation, never written by
/// hand), which lets policy code and the guards of the specification recognise the
/// built-in slicers by downcasting.
pub trait Slicer: crate::downcast::AsAny + Send + Sync + fmt::Debug {
    /// Selects positions of `items` within `budget`.
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome>;

    /// Selects whole units of `items` within `budget`: `units` partitions the positions of
    /// `items` into ungrouped items and groups, and a unit is selected whole or not at all.
    ///
    /// Called instead of [`Slicer::slice`] when the items contain groups or variants. Every
    /// built-in slicer treats a unit as one candidate and, when the units have levels,
    /// chooses at most one level per unit (reported in [`SliceOutcome::forms`]). The
    /// default, for every other slicer, calls `slice` (which sees the items alone, so every
    /// item is used in full unless it sets `forms` itself) and then drops each group it
    /// returned only in part, listing the dropped positions in
    /// [`SliceOutcome::partial_groups`]; it never adds the members a slicer left out, which
    /// could break the budget.
    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        let mut outcome = self.slice(items, budget)?;
        let dropped = units.keep_whole(&mut outcome.selected, &mut outcome.forms);
        outcome.partial_groups.extend(dropped);
        Ok(outcome)
    }

    /// Whether budget simulation may treat the selection as monotonic in the budget: a
    /// smaller budget never adds an item. True by default; the quota slicers
    /// ([`QuotaSlice`], [`CountQuotaSlice`], [`CountConstrainedKnapsackSlice`]) say false,
    /// and [`crate::analytics::min_budget_for`] refuses them (spec 07 §5).
    fn monotonic_in_budget(&self) -> bool {
        true
    }

    /// Per-kind caps of the count-quota slicers; empty for every other slicer. A non-empty
    /// list makes the diagnostics report items excluded by a cap.
    fn count_caps(&self) -> &[(ContextKind, usize)] {
        &[]
    }
}
