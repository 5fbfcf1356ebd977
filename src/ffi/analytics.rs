//! Analytics through the ABI (spec 07 §4, §5, §7): the dry run, budget simulation, and the report
//! helpers on a traced result. Sensitivity comparisons are in `sensitivity.rs`. Every function
//! calls the core's `analytics` functions; items are positions in the caller's list (decision D15
//! in docs/decisions.md).

use crate::analytics::{
    budget_utilization, kind_diversity, marginal_items, min_budget_for, quota_utilization_of,
    timestamp_coverage, KindQuotaUtilization,
};
use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::ctxpack_quota_mode;
use crate::ffi::handles::{self, HandleType};
use crate::ffi::items::{ctxpack_items, snapshot};
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::result::{ctxpack_result, entry, with_result, ResultData, RunContext};
use crate::ffi::stages::check_capacity;
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiError};
use crate::ffi::strings::{ctxpack_str, OwnedCString};
use crate::ffi::versioned::{self, Versioned};

/// Dry-runs the pipeline (spec 07 §4): the run of `ctxpack_pipeline_run` traced at ITEM
/// detail, whose result always has a report (`ctxpack_result_report_*`, the report
/// helpers below). Errors of the run are returned as by `ctxpack_pipeline_run`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_dry_run(
    pipeline: *const ctxpack_pipeline,
    items: *const ctxpack_items,
    budget: *const ctxpack_budget,
    out: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live.
    handles::create(out, out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let items = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        let report = pipeline.dry_run(&items, &budget)?;
        let context = RunContext::of(&pipeline, &budget);
        Ok(ResultData::from_report(report, items, context))
    })
}

/// Budget simulation (spec 07 §5.1, .NET `GetMarginalItems`): the items included under
/// `budget` that drop out when it shrinks by `slack` tokens (`max_tokens - slack`,
/// `target_tokens - slack`, the same reserve, slots and margin), as positions in the
/// caller's list in the placed order of the full run. `out_positions` must hold at least
/// `ctxpack_items_len(items)` elements (`capacity`; it may be NULL for an empty list);
/// `*out_count` receives how many were written. `slack` 0 gives none without running;
/// a negative slack grows the budget.
///
/// A pipeline whose slicer is a percentage quota is refused with
/// `CTXPACK_PIPELINE_CONFIG` and the guard message of the specification
/// (`"GetMarginalItems requires monotonic item inclusion. …"`); an invalid smaller budget
/// is `CTXPACK_INVALID_BUDGET`; errors of the two runs are returned as they are.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_marginal_items(
    pipeline: *const ctxpack_pipeline,
    items: *const ctxpack_items,
    budget: *const ctxpack_budget,
    slack: i64,
    out_positions: *mut usize,
    capacity: usize,
    out_count: *mut usize,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `out_positions` holds `capacity` elements;
    // `out_count` is NULL or writable.
    guard(out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let list = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        if out_count.is_null() {
            return Err(FfiError::null("out_count"));
        }
        check_capacity(capacity, list.len(), "out_positions")?;
        if out_positions.is_null() && !list.is_empty() {
            return Err(FfiError::null("out_positions"));
        }
        let positions = marginal_items(&pipeline, &list, &budget, slack)?;
        if !positions.is_empty() {
            std::ptr::copy_nonoverlapping(positions.as_ptr(), out_positions, positions.len());
        }
        handles::write_out(out_count, positions.len(), "out_count")
    })
}

/// Budget simulation (spec 07 §5.2, .NET `FindMinBudgetFor`): the smallest budget
/// (`max_tokens = target_tokens = b`, no reserve, slots or margin) in
/// `[tokens of items[target], ceiling]` at which the item at position `target` is
/// included, found by binary search with the lower-bound probe. `*out_found` tells
/// whether there is one; then `*out_budget` is it (else 0: not even `ceiling` includes
/// the item).
///
/// Guards, in this order: a percentage quota or count-quota slicer is
/// `CTXPACK_PIPELINE_CONFIG` with the specification's message
/// (`"FindMinBudgetFor requires monotonic item inclusion. …"`); `target` outside the
/// list, or `ceiling` below the item's tokens, is `CTXPACK_INVALID_ARGUMENT`. Errors of a
/// probe run are returned as they are.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_min_budget_for(
    pipeline: *const ctxpack_pipeline,
    items: *const ctxpack_items,
    target: usize,
    ceiling: i64,
    out_found: *mut bool,
    out_budget: *mut i64,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; the out-parameters are NULL or writable.
    guard(out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let list = snapshot(items, "items")?;
        if out_found.is_null() || out_budget.is_null() {
            return Err(FfiError::null(if out_found.is_null() {
                "out_found"
            } else {
                "out_budget"
            }));
        }
        let found = min_budget_for(&pipeline, &list, target, ceiling)?;
        handles::write_out(out_budget, found.unwrap_or(0), "out_budget")?;
        handles::write_out(out_found, found.is_some(), "out_found")
    })
}

/// Report helper (spec 07 §7): the tokens of the included items divided by the run's
/// `max_tokens` (not clamped; 0.0 when `max_tokens` is 0). The result keeps the budget
/// of its run. `CTXPACK_NO_REPORT` on an untraced result.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_budget_utilization(
    result: *const ctxpack_result,
    out: *mut f64,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or writable.
    with_result(result, |r| unsafe {
        let (report, items) = r.traced()?;
        let value = budget_utilization(report, items, &r.context.budget)?;
        handles::write_out(out, value, "out")
    })
}

/// Report helper (spec 07 §7): the number of distinct kinds (ASCII case-insensitive)
/// among the included items, pinned items included; 0 when nothing is included.
/// `CTXPACK_NO_REPORT` on an untraced result.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_kind_diversity(
    result: *const ctxpack_result,
    out: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or writable.
    with_result(result, |r| unsafe {
        let (report, items) = r.traced()?;
        handles::write_out(out, kind_diversity(report, items)?, "out")
    })
}

/// Report helper (spec 07 §7): the share of included items that have a timestamp, in
/// [0, 1]; 0.0 when nothing is included. `CTXPACK_NO_REPORT` on an untraced result.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_timestamp_coverage(
    result: *const ctxpack_result,
    out: *mut f64,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or writable.
    with_result(result, |r| unsafe {
        let (report, items) = r.traced()?;
        handles::write_out(out, timestamp_coverage(report, items)?, "out")
    })
}

/// The per-kind quota utilization of a traced result (`ctxpack_result_quota_utilization`):
/// one entry per constraint of the pipeline's slicer. Immutable; its strings are owned by
/// it and valid until `ctxpack_quota_utilization_free`.
pub struct ctxpack_quota_utilization {
    _opaque: [u8; 0],
}

/// What a quota utilization handle holds: the entries and their kinds as C strings.
pub(crate) struct QuotaUtilizationData {
    entries: Vec<KindQuotaUtilization>,
    kinds: Vec<OwnedCString>,
}

impl From<Vec<KindQuotaUtilization>> for QuotaUtilizationData {
    fn from(entries: Vec<KindQuotaUtilization>) -> Self {
        let kinds = entries
            .iter()
            .map(|e| OwnedCString::new(e.kind.as_str().to_owned()))
            .collect();
        Self { entries, kinds }
    }
}

impl HandleType for ctxpack_quota_utilization {
    type Value = QuotaUtilizationData;
    const TAG: u32 = u32::from_be_bytes(*b"CPQU");
    const NAME: &'static str = "ctxpack_quota_utilization";
}

/// How fully one quota constraint is used. Initialise with
/// `CTXPACK_KIND_QUOTA_UTILIZATION_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_kind_quota_utilization {
    /// `sizeof(ctxpack_kind_quota_utilization)`, set by the caller.
    pub struct_size: usize,
    /// The constraint's kind, as configured.
    pub kind: ctxpack_str,
    /// A `ctxpack_quota_mode` value.
    pub mode: i32,
    /// The requirement: percent of the target, or a count.
    pub require: f64,
    /// The cap: percent of the target, or a count.
    pub cap: f64,
    /// PERCENTAGE: included tokens of the kind / the budget's `target_tokens` * 100 (0.0
    /// when the target is 0). COUNT: included items of the kind.
    pub actual: f64,
    /// `actual / cap` clamped to [0, 1]; 0.0 when the cap is 0.
    pub utilization: f64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
unsafe impl Versioned for ctxpack_kind_quota_utilization {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_kind_quota_utilization>();
    const NAME: &'static str = "ctxpack_kind_quota_utilization";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_kind_quota_utilization) == size`: every byte
/// zero and `struct_size = size`. Then pass it to `ctxpack_quota_utilization_entry`. (C and C++ can write
/// `ctxpack_kind_quota_utilization x = CTXPACK_KIND_QUOTA_UTILIZATION_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_kind_quota_utilization_init(
    out: *mut ctxpack_kind_quota_utilization,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Report helper (spec 07 §7): how fully each quota constraint of the run's slicer is
/// used by the traced `result` under the run's budget (the result keeps both). A
/// percentage quota slicer gives its entries in percent, the count-quota slicers their
/// counts; entries are sorted by kind (ordinal); any other slicer gives none (wrapped
/// slicers are not searched). `CTXPACK_NO_REPORT` on an untraced result.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_quota_utilization(
    result: *const ctxpack_result,
    out: *mut *mut ctxpack_quota_utilization,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `result` is NULL or live.
    handles::create(out, out_error, || unsafe {
        let r = handles::borrow(result, "result")?;
        let (report, items) = r.traced()?;
        let context = &r.context;
        Ok(quota_utilization_of(report, items, context.quotas.clone(), &context.budget)?.into())
    })
}

/// The number of entries of a quota utilization.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_quota_utilization_count(
    utilization: *const ctxpack_quota_utilization,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out_count` is NULL or writable.
    handles::access(utilization, "utilization", |u| unsafe {
        handles::write_out(out_count, u.entries.len(), "out_count")
    })
}

/// Entry `i` of a quota utilization (sorted by kind).
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_quota_utilization_entry(
    utilization: *const ctxpack_quota_utilization,
    i: usize,
    out: *mut ctxpack_kind_quota_utilization,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::access_into(utilization, "utilization", out_error, |u| {
        let e = entry(&u.entries, i, "utilization")?;
        let value = ctxpack_kind_quota_utilization {
            struct_size: std::mem::size_of::<ctxpack_kind_quota_utilization>(),
            kind: u.kinds[i].as_ctxpack_str(),
            mode: ctxpack_quota_mode::from(e.mode) as i32,
            require: e.require,
            cap: e.cap,
            actual: e.actual,
            utilization: e.utilization,
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// Frees a quota utilization. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_quota_utilization_free(
    utilization: *mut ctxpack_quota_utilization,
) {
    // SAFETY: `utilization` is NULL or a handle.
    unsafe { handles::release(utilization) }
}
