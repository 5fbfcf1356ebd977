//! Test hooks for the C test suite, compiled only with the `ffi-test-hooks` feature and
//! kept out of the header: they let `tests/c` reach `CTXPACK_PANIC`, which no correct
//! call of the public ABI can produce, and drive every core error kind through one
//! complete run. (`CTXPACK_INVALID_POLICY` itself is reached through the policy
//! functions.)

use std::any::Any;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi::handles;
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiError};
use crate::model::ContextItem;
use crate::scorer::Scorer;

/// A scorer that panics, or fails with the core error of the given code.
#[derive(Debug)]
struct Faulty(Option<i32>);

fn error_for(code: i32) -> Option<Error> {
    let m = || format!("injected error {code}");
    Some(match code {
        1 => Error::EmptyContent,
        2 => Error::EmptyKind,
        3 => Error::EmptySource,
        4 => Error::InvalidBudget(m()),
        5 => Error::PinnedExceedsBudget {
            pinned_tokens: 1,
            available: 0,
        },
        6 => Error::Overflow {
            merged_tokens: 1,
            target_tokens: 0,
        },
        7 => Error::ScorerConfig(m()),
        8 => Error::SlicerConfig(m()),
        9 => Error::PipelineConfig(m()),
        10 => Error::TableTooLarge {
            candidates: 1,
            capacity: 1,
            cells: 2,
            bytes: 1,
            limit: 0,
        },
        11 => Error::CountRequirementUnmet {
            slicer: "test",
            kind: m(),
            satisfied: 0,
            required: 1,
        },
        12 => Error::Callback(m()),
        13 => Error::TokenOverflow(m()),
        14 => Error::InvalidPolicy(m()),
        15 => Error::InvalidArgument(m()),
        17 => Error::Unsupported(m()),
        _ => return None,
    })
}

impl Scorer for Faulty {
    fn score_all(&self, _items: &[&ContextItem], _out: &mut [f64]) -> Result<()> {
        match self.0 {
            None => panic!("injected panic (ctxpack_test_scorer_new_faulty)"),
            Some(code) => Err(error_for(code).expect("validated at construction")),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A scorer whose runs fail: with a panic when `code` is 0, else with the core error
/// whose `ErrorCode` is `code` (1 to 15, 17).
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
