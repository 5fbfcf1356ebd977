//! The budget handle.

use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, to_str};
use crate::model::{ContextBudget, ContextKind};

/// A validated token budget, given to each run. Immutable; may be shared by runs on many
/// threads.
pub struct ctxpack_budget {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_budget {
    type Value = ContextBudget;
    const TAG: u32 = u32::from_be_bytes(*b"CPBU");
    const NAME: &'static str = "ctxpack_budget";
}

/// Tokens reserved for one kind (kinds compare ASCII case-insensitively and must be
/// distinct).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_reserved_slot {
    /// The kind (non-blank).
    pub kind: ctxpack_str,
    /// Reserved tokens (>= 0).
    pub count: i64,
}

/// Creates a budget from every field. The core validates it (status
/// `CTXPACK_INVALID_BUDGET`, message naming the rule and the values): `0 <= target_tokens
/// <= max_tokens`, `0 <= output_reserve <= max_tokens`, the margin in [0, 100], slot
/// counts >= 0 and slot kinds distinct. `slots` may be NULL when `slot_count` is 0.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_new(
    max_tokens: i64,
    target_tokens: i64,
    output_reserve: i64,
    slots: *const ctxpack_reserved_slot,
    slot_count: usize,
    estimation_safety_margin_percent: f64,
    out: *mut *mut ctxpack_budget,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `slots` is valid for `slot_count` elements (the caller's contract).
    handles::create(out, out_error, || unsafe {
        let slots = array(slots, slot_count, "slots")?
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let kind = to_str(&s.kind, &format!("slots[{i}].kind"))?;
                Ok((ContextKind::new(kind)?, s.count))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(ContextBudget::with_all(
            max_tokens,
            target_tokens,
            output_reserve,
            slots,
            estimation_safety_margin_percent,
        )?)
    })
}

/// Frees a budget. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_free(budget: *mut ctxpack_budget) {
    // SAFETY: `budget` is NULL or a handle.
    unsafe { handles::release(budget) }
}
