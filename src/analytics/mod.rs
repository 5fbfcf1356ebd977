//! Analytics (spec 07 Part b), layered on deterministic dry runs.
//!
//! * Dry run (07 §4): [`Pipeline::dry_run`](crate::Pipeline::dry_run) and
//!   [`Policy::dry_run`](crate::policy::Policy::dry_run) return the SelectionReport.
//! * Budget simulation (07 §5): [`marginal_items`] and [`min_budget_for`].
//! * Policy sensitivity (07 §6): [`policy_sensitivity`] and [`pipeline_sensitivity`].
//! * Report helpers (07 §7): [`budget_utilization`], [`kind_diversity`], [`timestamp_coverage`],
//!   [`quota_utilization`] (with [`quota_constraints`]).
//!
//! Items are identified by their position in the caller's input everywhere (decision D15 in
//! docs/decisions.md): results name items by index, and comparisons between runs match items by
//! index, never by content. Errors of the underlying dry runs propagate unchanged.
//!
//! ```
//! use std::sync::Arc;
//!
//! use ctxpack::analytics::{budget_utilization, kind_diversity, timestamp_coverage};
//! use ctxpack::placer::ChronologicalPlacer;
//! use ctxpack::scorer::ReflexiveScorer;
//! use ctxpack::slicer::GreedySlice;
//! use ctxpack::{ContextBudget, ContextItem, ContextKind, Pipeline};
//!
//! let items = [
//!     ContextItem::builder("a", 50)
//!         .future_relevance_hint(0.9)
//!         .timestamp(1_700_000_000_000_000_000)
//!         .build()?,
//!     ContextItem::builder("b", 60).future_relevance_hint(0.2).build()?,
//!     ContextItem::builder("c", 40)
//!         .future_relevance_hint(0.5)
//!         .kind(ContextKind::new("Document")?)
//!         .build()?,
//! ];
//! let pipeline = Pipeline::builder()
//!     .scorer(Arc::new(ReflexiveScorer::new()))
//!     .slicer(Arc::new(GreedySlice::new()))
//!     .placer(Arc::new(ChronologicalPlacer::new()))
//!     .build()?;
//! let budget = ContextBudget::new(100, 100)?;
//! let report = pipeline.dry_run(&items, &budget)?; // includes "a" and "c"
//! assert_eq!(budget_utilization(&report, &items, &budget)?, 0.9); // 90 of 100 tokens
//! assert_eq!(kind_diversity(&report, &items)?, 2); // Message, Document
//! assert_eq!(timestamp_coverage(&report, &items)?, 0.5); // only "a" has a timestamp
//! # Ok::<(), ctxpack::Error>(())
//! ```

mod metrics;
mod sensitivity;
mod simulation;

pub use metrics::{
    budget_utilization, kind_diversity, quota_constraints, quota_utilization, quota_utilization_of,
    timestamp_coverage, KindQuotaUtilization, QuotaConstraint, QuotaMode,
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
    Ok(included_forms(report, items)?
        .into_iter()
        .map(|(item, _)| item)
        .collect())
}

/// [`included_items`] with the form each is placed as (0 = in full; `docs/variants.md`).
pub(crate) fn included_forms<'a>(
    report: &SelectionReport,
    items: &'a [ContextItem],
) -> Result<Vec<(&'a ContextItem, usize)>> {
    report
        .included
        .iter()
        .map(|x| {
            let item = items.get(x.index).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "the report names item {} but only {} items were given",
                    x.index,
                    items.len()
                ))
            })?;
            let form = x.reason.form();
            if form >= item.form_count() {
                return Err(Error::InvalidArgument(format!(
                    "the report places item {} as form {form}, but it has {} forms",
                    x.index,
                    item.form_count()
                )));
            }
            Ok((item, form))
        })
        .collect()
}
