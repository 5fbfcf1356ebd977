//! Test hooks for the C test suite, compiled only with the `ffi-test-hooks` feature and
//! kept out of the header: they let `tests/c` reach `CTXPACK_PANIC`, which no correct
//! call of the public ABI can produce, and drive every core error kind through one
//! complete run. (`CTXPACK_INVALID_POLICY` itself is reached through the policy
//! functions.)

use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::ffi::handles;
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiError};
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// A scorer that panics, or fails with the core error of the given code.
#[derive(Debug)]
struct Faulty(Option<i32>);

/// The core error with this code number, if there is one.
fn error_for(code: i32) -> Option<Error> {
    let code = ErrorCode::ALL.into_iter().find(|c| c.value() == code)?;
    let m = || format!("injected error {}", code.value());
    Some(match code {
        ErrorCode::EmptyContent => Error::EmptyContent,
        ErrorCode::EmptyKind => Error::EmptyKind,
        ErrorCode::EmptySource => Error::EmptySource,
        ErrorCode::InvalidBudget => Error::InvalidBudget(m()),
        ErrorCode::PinnedExceedsBudget => Error::PinnedExceedsBudget {
            pinned_tokens: 1,
            available: 0,
        },
        ErrorCode::Overflow => Error::Overflow {
            merged_tokens: 1,
            target_tokens: 0,
        },
        ErrorCode::ScorerConfig => Error::ScorerConfig(m()),
        ErrorCode::SlicerConfig => Error::SlicerConfig(m()),
        ErrorCode::PipelineConfig => Error::PipelineConfig(m()),
        ErrorCode::TableTooLarge => Error::TableTooLarge {
            candidates: 1,
            capacity: 1,
            cells: 2,
            bytes: 1,
            limit: 0,
        },
        ErrorCode::CountRequirementUnmet => Error::CountRequirementUnmet {
            slicer: "test",
            kind: m(),
            satisfied: 0,
            required: 1,
        },
        ErrorCode::Callback => Error::Callback(m()),
        ErrorCode::TokenOverflow => Error::TokenOverflow(m()),
        ErrorCode::InvalidPolicy => Error::InvalidPolicy(m()),
        ErrorCode::InvalidArgument => Error::InvalidArgument(m()),
        ErrorCode::Unsupported => Error::Unsupported(m()),
        ErrorCode::Cancelled => Error::Cancelled(m()),
        ErrorCode::InvalidState => Error::InvalidState(m()),
        ErrorCode::InvalidRequest => Error::InvalidRequest(m()),
        ErrorCode::OutOfMemory => Error::OutOfMemory {
            what: m(),
            bytes: 1,
        },
    })
}

impl Scorer for Faulty {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        match self.0 {
            None => panic!("injected panic (ctxpack_test_scorer_new_faulty)"),
            Some(code) => Err(error_for(code).expect("validated at construction")),
        }
    }
}

/// A scorer whose runs fail: with a panic when `code` is 0, else with the core error
/// whose `ErrorCode` is `code` (any core code).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_test_scorer_new_faulty(
    code: i32,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || match code {
        0 => Ok(Arc::new(Faulty(None)) as Arc<dyn Scorer>),
        c if error_for(c).is_some() => Ok(Arc::new(Faulty(Some(c)))),
        c => Err(FfiError::invalid(format!("no core error code {c}"))),
    })
}

/// The capacity (reserved slots) of an item list's current version, so that a test can
/// check that a failed `ctxpack_items_push_many` and `ctxpack_items_clear` give back what
/// was reserved.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_test_items_capacity(
    items: *const crate::ffi::items::ctxpack_items,
    out: *mut usize,
) -> ctxpack_status {
    // SAFETY: `items` is NULL or a handle; `out` is NULL or writable.
    crate::ffi::status::guard(std::ptr::null_mut(), || unsafe {
        let list = crate::ffi::items::snapshot(items, "items")?;
        handles::write_out(out, list.capacity(), "out")
    })
}

/// Makes every allocation whose size comes from a caller's number fail with
/// `CTXPACK_OUT_OF_MEMORY` when it needs more than `bytes` (`UINT64_MAX` lifts the
/// ceiling), so that tests reach the out-of-memory paths without exhausting the machine.
/// Process-wide.
#[no_mangle]
pub extern "C" fn ctxpack_test_set_allocation_limit(bytes: u64) {
    crate::alloc::set_test_limit(bytes);
}
