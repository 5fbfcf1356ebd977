//! One stage on its own: score a list, slice scored items, place scored items. These are
//! the building blocks a host uses to run its own stage sequence (for example: its own
//! scores, ctxpack's slicer), and what the conformance runner's C-ABI mode uses for the
//! scoring, slicing and placing vectors.

use crate::alloc;
use crate::diagnostics::CountRequirementShortfall;
use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::{ctxpack_group_value, enum_arg};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::items::{ctxpack_items, snapshot};
use crate::ffi::placer::ctxpack_placer;
use crate::ffi::result::{ctxpack_shortfall, shortfall_entry, terminate_shortfalls};
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::slicer::ctxpack_slicer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiError, FfiResult};
use crate::ffi::strings::array;
use crate::ffi::versioned;
use crate::model::{ContextItem, GroupValue, ScoredItem, Units};
use crate::slicer::SliceOutcome;

/// What a slicer returned from `ctxpack_slicer_slice`. Immutable; its arrays are owned by
/// it and valid until `ctxpack_slice_result_free`.
pub struct ctxpack_slice_result {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_slice_result {
    type Value = SliceOutcome;
    const TAG: u32 = u32::from_be_bytes(*b"CPSR");
    const NAME: &'static str = "ctxpack_slice_result";
}

/// Pairs every item with its score; `scores` must have one finite entry per item (a
/// pipeline never hands a slicer or placer a NaN or infinite score, so neither may a
/// caller: `CTXPACK_INVALID_ARGUMENT` naming the first one).
///
/// # Safety
/// `scores` is valid for `count` elements.
unsafe fn scored<'a>(
    items: &'a [ContextItem],
    scores: *const f64,
    count: usize,
) -> FfiResult<Vec<ScoredItem<'a>>> {
    if count != items.len() {
        return Err(FfiError::invalid(format!(
            "count is {count} but the item list has {} items (one score per item)",
            items.len()
        )));
    }
    // SAFETY: forwarded from the caller.
    let scores = unsafe { array(scores, count, "scores") }?;
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(FfiError::invalid(format!(
            "scores[{i}] is {}; scores must be finite",
            scores[i]
        )));
    }
    Ok(items
        .iter()
        .zip(scores)
        .map(|(item, &score)| ScoredItem { item, score })
        .collect())
}

/// Checks that a caller buffer can hold `needed` elements.
pub(crate) fn check_capacity(capacity: usize, needed: usize, what: &str) -> FfiResult<()> {
    if capacity < needed {
        return Err(FfiError::invalid(format!(
            "{what} holds {capacity} elements but {needed} are needed"
        )));
    }
    Ok(())
}

/// Scores every item of `items` against the whole list (the scorer contract of spec 03
/// §1: pinned and negative-token items are scored like any other here) and writes the
/// scores, in list order, into `out_scores`, which must hold at least as many elements
/// as the list (`capacity`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_score(
    scorer: *const ctxpack_scorer,
    items: *const ctxpack_items,
    out_scores: *mut f64,
    capacity: usize,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `out_scores` is valid for `capacity` elements.
    guard(out_error, || unsafe {
        let scorer = handles::retain(scorer, "scorer")?;
        let list = snapshot(items, "items")?;
        check_capacity(capacity, list.len(), "out_scores")?;
        if out_scores.is_null() && !list.is_empty() {
            return Err(FfiError::null("out_scores"));
        }
        let refs: Vec<&ContextItem> = list.iter().collect();
        let mut scores = vec![0.0; refs.len()];
        scorer.score_all(&refs, &mut scores)?;
        if !scores.is_empty() {
            std::ptr::copy_nonoverlapping(scores.as_ptr(), out_scores, scores.len());
        }
        Ok(())
    })
}

/// The units of `items` (docs/groups.md) when some item has a group key.
fn units(items: &[ScoredItem<'_>], group_value: i32) -> FfiResult<Option<Units>> {
    let value: GroupValue = enum_arg::<ctxpack_group_value>(group_value, "group_value")?.into();
    if !items
        .iter()
        .any(|s| s.item.has_group() || s.item.has_variants())
    {
        return Ok(None);
    }
    Ok(Some(Units::new(items, value)?))
}

/// Runs the slicer alone over the items with the given `scores` (one finite score per
/// item, `count` equal to the list length), in list order, against `budget` exactly as given (no
/// pinned-item or reserve adjustment: that is the pipeline's job). The outcome holds the
/// selected positions, the form of each (items with variants may be selected as one of
/// them: docs/variants.md), count-quota shortfalls and cap exclusions. Items with group
/// keys are selected whole or not at all, each group's value being the sum of its
/// members' scores (`ctxpack_slicer_slice_with_group_value` chooses another rule).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_slice(
    slicer: *const ctxpack_slicer,
    items: *const ctxpack_items,
    scores: *const f64,
    count: usize,
    budget: *const ctxpack_budget,
    out: *mut *mut ctxpack_slice_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        ctxpack_slicer_slice_with_group_value(
            slicer,
            items,
            scores,
            count,
            budget,
            ctxpack_group_value::Sum as i32,
            out,
            out_error,
        )
    }
}

/// `ctxpack_slicer_slice` with the rule that gives each group its value from its
/// members' scores: `group_value` is a `ctxpack_group_value` value. It matters only when
/// items have group keys.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slicer_slice_with_group_value(
    slicer: *const ctxpack_slicer,
    items: *const ctxpack_items,
    scores: *const f64,
    count: usize,
    budget: *const ctxpack_budget,
    group_value: i32,
    out: *mut *mut ctxpack_slice_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `scores` is valid for `count` elements.
    handles::create(out, out_error, || unsafe {
        let slicer = handles::retain(slicer, "slicer")?;
        let list = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        let scored = scored(&list, scores, count)?;
        let mut outcome = match units(&scored, group_value)? {
            None => slicer.slice(&scored, &budget)?,
            Some(units) => slicer.slice_grouped(&scored, &units, &budget)?,
        };
        if outcome.forms.is_empty() {
            outcome.forms = alloc::filled(outcome.selected.len(), 0, "the selected forms")?;
        }
        terminate_shortfalls(&mut outcome.shortfalls);
        Ok(outcome)
    })
}

/// Runs the placer alone over the items with the given `scores` (one finite score per
/// item, `count` equal to the list length) and writes the placement order (positions in the list, a
/// permutation) into `out_order`, which must hold `count` elements. The members of each
/// group end up next to each other, in list order; a group is placed as one unit whose
/// value is the sum of its members' scores (`ctxpack_placer_place_with_group_value`
/// chooses another rule).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_place(
    placer: *const ctxpack_placer,
    items: *const ctxpack_items,
    scores: *const f64,
    count: usize,
    out_order: *mut usize,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        ctxpack_placer_place_with_group_value(
            placer,
            items,
            scores,
            count,
            ctxpack_group_value::Sum as i32,
            out_order,
            out_error,
        )
    }
}

/// `ctxpack_placer_place` with the rule that gives each group its value from its
/// members' scores: `group_value` is a `ctxpack_group_value` value. It matters only when
/// items have group keys.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_place_with_group_value(
    placer: *const ctxpack_placer,
    items: *const ctxpack_items,
    scores: *const f64,
    count: usize,
    group_value: i32,
    out_order: *mut usize,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `scores` and `out_order` hold `count` elements.
    guard(out_error, || unsafe {
        let placer = handles::retain(placer, "placer")?;
        let list = snapshot(items, "items")?;
        let scored = scored(&list, scores, count)?;
        if out_order.is_null() && count > 0 {
            return Err(FfiError::null("out_order"));
        }
        let order = match units(&scored, group_value)? {
            None => placer.place(&scored)?,
            Some(units) => placer.place_grouped(&scored, &units)?,
        };
        if order.len() != count {
            return Err(crate::Error::Callback(format!(
                "placer returned {} positions for {count} items",
                order.len()
            ))
            .into());
        }
        if count > 0 {
            std::ptr::copy_nonoverlapping(order.as_ptr(), out_order, count);
        }
        Ok(())
    })
}

/// Runs an accessor on a slice result behind the shim.
fn with_slice_result(
    result: *const ctxpack_slice_result,
    body: impl FnOnce(&SliceOutcome) -> FfiResult<()>,
) -> ctxpack_status {
    handles::access(result, "result", body)
}

/// The selected positions (into the slicer's input), in the slicer's output order.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_selected(
    result: *const ctxpack_slice_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_slice_result(result, |r| unsafe {
        crate::ffi::result::write_array(&r.selected, out_ptr, out_len)
    })
}

/// The form of each selected item, parallel to the selected positions: 0 for the item
/// itself, `f >= 1` for its variant `f - 1` (docs/variants.md).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_forms(
    result: *const ctxpack_slice_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_slice_result(result, |r| unsafe {
        crate::ffi::result::write_array(&r.forms, out_ptr, out_len)
    })
}

/// The positions a count-quota slicer removed because their kind reached its cap.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_cap_excluded(
    result: *const ctxpack_slice_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_slice_result(result, |r| unsafe {
        crate::ffi::result::write_array(&r.cap_excluded, out_ptr, out_len)
    })
}

/// The number of count-requirement shortfalls.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_shortfall_count(
    result: *const ctxpack_slice_result,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: the out-parameter is NULL or writable.
    with_slice_result(result, |r| unsafe {
        handles::write_out(out_count, r.shortfalls.len(), "out_count")
    })
}

/// Count-requirement shortfall `i` (configuration order).
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_shortfall(
    result: *const ctxpack_slice_result,
    i: usize,
    out: *mut ctxpack_shortfall,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::access_into(result, "result", out_error, |r: &SliceOutcome| {
        let s: &CountRequirementShortfall =
            crate::ffi::result::entry(&r.shortfalls, i, "shortfall")?;
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, shortfall_entry(s), "out") }
    })
}

/// Frees a slice result. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_slice_result_free(result: *mut ctxpack_slice_result) {
    // SAFETY: `result` is NULL or a handle.
    unsafe { handles::release(result) }
}
