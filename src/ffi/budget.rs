//! The budget handle and its descriptor.

use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, to_str};
use crate::ffi::versioned::{self, Versioned};
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

/// Describes a budget for `ctxpack_budget_new`. Initialise it with
/// `CTXPACK_BUDGET_DESC_INIT` or `ctxpack_budget_desc_init` (every field zero: a budget
/// of 0 tokens), then set the fields by name.
///
/// How the fields work together (the specification's rules): the slicer gets
/// `max_tokens - output_reserve - pinned tokens - every reserved slot` as its ceiling and
/// `target_tokens - pinned tokens - every reserved slot` as its target, both then reduced
/// by the safety margin. A reserved slot therefore shrinks the room of **every** kind,
/// including the kind it names: it is not a quota that kind gets back.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_budget_desc {
    /// `sizeof(ctxpack_budget_desc)`.
    pub struct_size: usize,
    /// The model's context window (>= 0).
    pub max_tokens: i64,
    /// The soft goal the selection aims for (0 <= target <= max); overflow is judged
    /// against it.
    pub target_tokens: i64,
    /// Tokens kept free for the model's output (0 <= reserve <= max).
    pub output_reserve: i64,
    /// `slot_count` reserved slots; may be NULL when `slot_count` is 0.
    pub slots: *const ctxpack_reserved_slot,
    /// Number of reserved slots.
    pub slot_count: usize,
    /// Safety margin for token-count estimates, in percent [0, 100]: the slicer's budget
    /// is reduced by this share.
    pub estimation_safety_margin_percent: f64,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (a NULL slot array).
unsafe impl Versioned for ctxpack_budget_desc {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_budget_desc>();
    const NAME: &'static str = "ctxpack_budget_desc";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_budget_desc) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_budget_desc x = CTXPACK_BUDGET_DESC_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_desc_init(
    out: *mut ctxpack_budget_desc,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Creates a budget from a descriptor. Every rule is checked (status
/// `CTXPACK_INVALID_BUDGET`, the message names the rule and the values): `0 <=
/// target_tokens <= max_tokens`, `0 <= output_reserve <= max_tokens`, the margin in
/// [0, 100], slot counts >= 0 and slot kinds distinct; and, since a reserved slot shrinks
/// the room of every kind, slots that could never be honoured are rejected too: their sum
/// must not exceed `target_tokens`, nor `max_tokens - output_reserve` (the specification
/// accepts such slots; why ctxpack does not: decision D20 in docs/decisions.md).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_new(
    desc: *const ctxpack_budget_desc,
    out: *mut *mut ctxpack_budget,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `desc` is NULL or valid, and its `slots` valid for `slot_count` elements.
    handles::create(out, out_error, || unsafe {
        let d = versioned::read(desc, "desc")?;
        let slots = array(d.slots, d.slot_count, "desc.slots")?
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let kind = to_str(&s.kind, &format!("desc.slots[{i}].kind"))?;
                Ok((ContextKind::new(kind)?, s.count))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(ContextBudget::with_all(
            d.max_tokens,
            d.target_tokens,
            d.output_reserve,
            slots,
            d.estimation_safety_margin_percent,
        )?)
    })
}

/// Frees a budget. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_budget_free(budget: *mut ctxpack_budget) {
    // SAFETY: `budget` is NULL or a handle.
    unsafe { handles::release(budget) }
}
