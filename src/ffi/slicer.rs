//! Slicer handles: one constructor per built-in slicer, and custom slicers.

use std::ffi::c_void;
use std::sync::Arc;

use crate::ffi::callbacks::{
    ctxpack_destroy_fn, ctxpack_slice_fn, required, CustomSlicer, UserData,
};
use crate::ffi::enums::{ctxpack_scarcity, enum_arg};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, to_str};
use crate::model::ContextKind;
use crate::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, Slicer,
};

/// A slicer. Immutable and reference-counted: quota slicers and pipelines built from it
/// keep their own reference, so the caller may free its handle at any time.
pub struct ctxpack_slicer {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_slicer {
    type Value = Arc<dyn Slicer>;
    const TAG: u32 = u32::from_be_bytes(*b"CPSL");
    const NAME: &'static str = "ctxpack_slicer";
}

/// The default bucket size of the knapsack slicers.
pub const CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE: i64 = 100;

/// A percentage quota for one kind (QuotaSlice).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_quota_entry {
    /// The kind (ASCII case-insensitive; kinds must be distinct).
    pub kind: ctxpack_str,
    /// Required share of the target, in percent [0, 100].
    pub require: f64,
    /// Maximum share of the target, in percent [require, 100].
    pub cap: f64,
}

/// A count quota for one kind (count-quota slicers).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_count_quota_entry {
    /// The kind (ASCII case-insensitive; kinds must be distinct).
    pub kind: ctxpack_str,
    /// Items of the kind committed first.
    pub require_count: usize,
    /// Maximum items of the kind in the result (>= `require_count`).
    pub cap_count: usize,
}

/// A knapsack engine; `table_limit_bytes == 0` means the default limit (256 MiB).
fn knapsack(bucket_size: i64, table_limit_bytes: u64) -> FfiResult<KnapsackSlice> {
    Ok(match table_limit_bytes {
        0 => KnapsackSlice::new(bucket_size)?,
        limit => KnapsackSlice::with_table_limit(bucket_size, limit)?,
    })
}

/// Converts count-quota entries.
///
/// # Safety
/// `entries` is valid for `count` elements.
unsafe fn count_entries(
    entries: *const ctxpack_count_quota_entry,
    count: usize,
) -> FfiResult<Vec<CountQuotaEntry>> {
    // SAFETY: forwarded from the caller.
    unsafe { array(entries, count, "entries")? }
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // SAFETY: forwarded from the caller.
            let kind = unsafe { to_str(&e.kind, &format!("entries[{i}].kind")) }?;
            Ok(CountQuotaEntry::new(
                ContextKind::new(kind)?,
                e.require_count,
                e.cap_count,
            )?)
        })
        .collect()
}

/// GreedySlice: fills the budget by value density.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_greedy(
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(GreedySlice::new())))
}

/// KnapsackSlice: optimal 0/1 selection over a capacity discretised by `bucket_size`
/// (> 0; conventionally `CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE`). A run whose keep table
/// would exceed `table_limit_bytes` (0 = the default, 256 MiB) fails with
/// `CTXPACK_TABLE_TOO_LARGE`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_knapsack(
    bucket_size: i64,
    table_limit_bytes: u64,
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        Ok(Arc::new(knapsack(bucket_size, table_limit_bytes)?))
    })
}

/// QuotaSlice: per-kind percentage budgets around `inner` (which it keeps a reference
/// to).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_quota(
    entries: *const ctxpack_quota_entry,
    count: usize,
    inner: *const ctxpack_slicer,
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `entries` is valid for `count` elements; `inner` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let inner = handles::borrow(inner, "inner")?.clone();
        let entries = array(entries, count, "entries")?
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let kind = to_str(&e.kind, &format!("entries[{i}].kind"))?;
                Ok(QuotaEntry::new(ContextKind::new(kind)?, e.require, e.cap)?)
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(Arc::new(QuotaSlice::new(entries, inner)?))
    })
}

/// CountQuotaSlice: commits `require_count` items per kind, lets `inner` (not a
/// knapsack; the slicer keeps a reference) fill the rest, and enforces the caps.
/// `scarcity` is a `ctxpack_scarcity` value.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_count_quota(
    entries: *const ctxpack_count_quota_entry,
    count: usize,
    inner: *const ctxpack_slicer,
    scarcity: i32,
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `entries` is valid for `count` elements; `inner` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let inner = handles::borrow(inner, "inner")?.clone();
        let entries = count_entries(entries, count)?;
        let scarcity = enum_arg::<ctxpack_scarcity>(scarcity, "scarcity")?.into();
        Ok(Arc::new(CountQuotaSlice::new(entries, inner, scarcity)?))
    })
}

/// CountConstrainedKnapsackSlice: count quotas with a knapsack (`bucket_size`,
/// `table_limit_bytes` as in `ctxpack_slicer_new_knapsack`) for the rest. `scarcity` is
/// a `ctxpack_scarcity` value.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_count_constrained_knapsack(
    entries: *const ctxpack_count_quota_entry,
    count: usize,
    bucket_size: i64,
    table_limit_bytes: u64,
    scarcity: i32,
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `entries` is valid for `count` elements.
    handles::create(out, out_error, || unsafe {
        let entries = count_entries(entries, count)?;
        let scarcity = enum_arg::<ctxpack_scarcity>(scarcity, "scarcity")?.into();
        let engine = knapsack(bucket_size, table_limit_bytes)?;
        Ok(Arc::new(CountConstrainedKnapsackSlice::new(
            entries, engine, scarcity,
        )?))
    })
}

/// A custom slicer (see `ctxpack_slice_fn`). On success the slicer owns `user_data` and
/// calls `destroy` (may be NULL) once when its last reference is dropped; on failure the
/// caller keeps it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_new_custom(
    slice: ctxpack_slice_fn,
    user_data: *mut c_void,
    destroy: ctxpack_destroy_fn,
    out: *mut *mut ctxpack_slicer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        let slice = required(slice, "slice")?;
        Ok(Arc::new(CustomSlicer {
            slice,
            user: UserData::new(user_data, destroy),
        }))
    })
}

/// Gives the caller one more reference to `slicer` and returns the same pointer: each
/// reference is released by its own `ctxpack_slicer_free`, and the slicer is freed (a use is
/// then reported as a freed handle) when the last one is. NULL when `slicer` is NULL, not a
/// `ctxpack_slicer` or already freed. Thread-safe: references may be taken and released on
/// any threads at once, while the slicer is in use (a caller must itself hold a reference
/// for the whole call, as for any function taking the handle).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_retain(slicer: *mut ctxpack_slicer) -> *mut ctxpack_slicer {
    // SAFETY: `slicer` is NULL or a handle the caller holds.
    unsafe { handles::retain_caller(slicer) }
}

/// Releases one caller reference to a slicer (see `ctxpack_slicer_retain`). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_free(slicer: *mut ctxpack_slicer) {
    // SAFETY: `slicer` is NULL or a handle.
    unsafe { handles::release(slicer) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_core() {
        assert_eq!(
            CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE,
            crate::slicer::DEFAULT_BUCKET_SIZE
        );
    }
}
