//! Policy sensitivity through the ABI (spec 07 §6): labelled pipelines dry-run over the
//! same items and budget, their reports, and the items whose inclusion swings.

use std::sync::Arc;

use crate::analytics::{pipeline_sensitivity, SensitivityReport};
use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::ctxpack_item_status;
use crate::ffi::handles::{self, HandleType, Held};
use crate::ffi::items::{ctxpack_items, snapshot, ItemVec};
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::result::{ctxpack_result, entry, write_array, ResultData, RunContext};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, terminate, to_str};
use crate::pipeline::Pipeline;

/// One variant of a sensitivity comparison: a label and a pipeline (build one from a
/// policy with `ctxpack_pipeline_new_policy_json` or `ctxpack_pipeline_new_preset` to
/// compare policies).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_sensitivity_variant {
    /// The label (any UTF-8 text; labels need not be unique). The library copies it.
    pub label: ctxpack_str,
    /// The pipeline; it is only used during `ctxpack_sensitivity_new`.
    pub pipeline: *const ctxpack_pipeline,
}

/// The outcome of a sensitivity comparison: every variant's report and the swinging
/// items. Immutable; what it hands out is owned by it and valid until
/// `ctxpack_sensitivity_free`, except the result handles of
/// `ctxpack_sensitivity_variant_result`, which the caller owns.
pub struct ctxpack_sensitivity {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_sensitivity {
    type Value = SensitivityData;
    const TAG: u32 = u32::from_be_bytes(*b"CPSE");
    const NAME: &'static str = "ctxpack_sensitivity";
}

/// What a sensitivity handle holds.
pub(crate) struct SensitivityData {
    report: SensitivityReport,
    /// Per diff, the `ctxpack_item_status` of every variant, in variant order.
    statuses: Vec<Vec<i32>>,
    /// The items of the runs, for the variants' results.
    items: Arc<ItemVec>,
    /// Each variant's budget and quota constraints, for its result's report helpers.
    contexts: Vec<RunContext>,
}

impl SensitivityData {
    fn new(mut report: SensitivityReport, items: Arc<ItemVec>, contexts: Vec<RunContext>) -> Self {
        for v in &mut report.variants {
            terminate(&mut v.label);
        }
        let statuses = report
            .diffs
            .iter()
            .map(|d| {
                // A pipeline's report names every item once, so each diff has one status
                // per variant, in variant order.
                assert_eq!(
                    d.statuses.len(),
                    report.variants.len(),
                    "item {} is not reported by every variant",
                    d.index
                );
                d.statuses
                    .iter()
                    .map(|(_, s)| ctxpack_item_status::from(*s) as i32)
                    .collect()
            })
            .collect();
        Self {
            report,
            statuses,
            items,
            contexts,
        }
    }
}

/// Compares `count` (>= 2) labelled pipelines (spec 07 §6): each is dry-run over `items` within
/// `budget`, in order, and the items that at least one variant includes and another excludes are
/// listed, matched by their position in `items` (decision D15 in docs/decisions.md), in list order.
/// Fewer than two variants is `CTXPACK_INVALID_ARGUMENT`; the first failing run's error is returned
/// as it is.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_new(
    items: *const ctxpack_items,
    budget: *const ctxpack_budget,
    variants: *const ctxpack_sensitivity_variant,
    count: usize,
    out: *mut *mut ctxpack_sensitivity,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `variants` is valid for `count` elements.
    handles::create(out, out_error, || unsafe {
        let list = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        // The run holds every pipeline: a callback of one may free any of them.
        let held = array(variants, count, "variants")?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = to_str(&v.label, &format!("variants[{i}].label"))?;
                let pipeline: Held<ctxpack_pipeline> =
                    handles::retain(v.pipeline, &format!("variants[{i}].pipeline"))?;
                Ok((label, pipeline))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        let variants: Vec<(&str, &Pipeline)> = held.iter().map(|(l, p)| (*l, &***p)).collect();
        let report = pipeline_sensitivity(&list, &budget, &variants)?;
        let contexts = variants
            .iter()
            .map(|(_, p)| RunContext::of(p, &budget))
            .collect();
        Ok(SensitivityData::new(report, list, contexts))
    })
}

/// The number of variants (as passed to `ctxpack_sensitivity_new`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_variant_count(
    sensitivity: *const ctxpack_sensitivity,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out_count` is NULL or writable.
    handles::access(sensitivity, "sensitivity", |s| unsafe {
        handles::write_out(out_count, s.report.variants.len(), "out_count")
    })
}

/// The label of variant `i` (also NUL-terminated), owned by the sensitivity.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_variant_label(
    sensitivity: *const ctxpack_sensitivity,
    i: usize,
    out_label: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(sensitivity, "sensitivity", |s| {
        let v = entry(&s.report.variants, i, "variant")?;
        // SAFETY: `out_label` is NULL or writable.
        unsafe { handles::write_out(out_label, ctxpack_str::borrowed(&v.label), "out_label") }
    })
}

/// The dry-run result of variant `i` as a new result handle (the caller frees it with
/// `ctxpack_result_free`; it may outlive the sensitivity): the selection, and the report
/// through `ctxpack_result_report_*` and the report helpers, exactly as
/// `ctxpack_pipeline_dry_run` would give it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_variant_result(
    sensitivity: *const ctxpack_sensitivity,
    i: usize,
    out: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `sensitivity` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let s = handles::borrow(sensitivity, "sensitivity")?;
        let v = entry(&s.report.variants, i, "variant")?;
        Ok(ResultData::from_report(
            v.report.clone(),
            s.items.clone(),
            s.contexts[i].clone(),
        ))
    })
}

/// The number of swinging items (diffs).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_diff_count(
    sensitivity: *const ctxpack_sensitivity,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: `out_count` is NULL or writable.
    handles::access(sensitivity, "sensitivity", |s| unsafe {
        handles::write_out(out_count, s.report.diffs.len(), "out_count")
    })
}

/// Diff `i` (diffs are in the order of the item list): `*out_item_index` is the item's
/// position in the list, and `out_statuses`/`out_count` an array of
/// `ctxpack_item_status` values, one per variant in variant order (its length is the
/// variant count), owned by the sensitivity.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_diff(
    sensitivity: *const ctxpack_sensitivity,
    i: usize,
    out_item_index: *mut usize,
    out_statuses: *mut *const i32,
    out_count: *mut usize,
) -> ctxpack_status {
    handles::access(sensitivity, "sensitivity", |s| {
        let d = entry(&s.report.diffs, i, "diff")?;
        // SAFETY: the out-parameters are NULL or writable.
        unsafe {
            write_array(&s.statuses[i], out_statuses, out_count)?;
            handles::write_out(out_item_index, d.index, "out_item_index")
        }
    })
}

/// Frees a sensitivity comparison (result handles taken from it live on). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_sensitivity_free(sensitivity: *mut ctxpack_sensitivity) {
    // SAFETY: `sensitivity` is NULL or a handle.
    unsafe { handles::release(sensitivity) }
}
