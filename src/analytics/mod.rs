//! Analytics (spec 07 Part b), layered on deterministic dry runs.
//!
//! * Dry run (07 §4): [`Pipeline::dry_run`](crate::Pipeline::dry_run) and
//!   [`Policy::dry_run`](crate::policy::Policy::dry_run) return the SelectionReport.
//! * Budget simulation (07 §5): [`marginal_items`] and [`min_budget_for`].
//! * Policy sensitivity (07 §6): [`policy_sensitivity`] and [`pipeline_sensitivity`].
//! * Report helpers (07 §7): [`budget_utilization`], [`kind_diversity`],
//!   [`timestamp_coverage`], [`quota_utilization`] (with [`quota_constraints`]).
//!
//! Items are identified by their position in the caller's input everywhere (D15): results
//! name items by index, and comparisons between runs match items by index, never by
//! content. Errors of the underlying dry runs propagate unchanged.

mod metrics;
mod sensitivity;
mod simulation;

pub use metrics::{
    budget_utilization, kind_diversity, quota_constraints, quota_utilization, timestamp_coverage,
    KindQuotaUtilization, QuotaConstraint, QuotaMode,
};
pub use sensitivity::{
    pipeline_sensitivity, policy_sensitivity, ItemStatus, SensitivityDiff, SensitivityReport,
    VariantReport,
};
pub use simulation::{marginal_items, min_budget_for, MSG_MARGINAL_QUOTA, MSG_MIN_BUDGET};

use crate::diagnostics::SelectionReport;
use crate::error::{Error, Result};
use crate::model::ContextItem;

/// The included items of `report`, looked up in `items` (the input of the run), in placed
/// order. An index outside `items` fails with [`Error::InvalidArgument`].
pub(crate) fn included_items<'a>(
    report: &SelectionReport,
    items: &'a [ContextItem],
) -> Result<Vec<&'a ContextItem>> {
    report
        .included
        .iter()
        .map(|x| {
            items.get(x.index).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "the report names item {} but only {} items were given",
                    x.index,
                    items.len()
                ))
            })
        })
        .collect()
}
