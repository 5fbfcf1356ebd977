//! Cancellation tokens: a flag another thread sets to stop a run in progress.

use crate::cancel::CancelToken;
use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status};

/// A cancellation token. Set it in `ctxpack_run_options.cancel`; any thread may then call
/// `ctxpack_cancel_token_cancel` while the run is in progress, and the run returns
/// `CTXPACK_CANCELLED` at its next check (before each stage, every row of a knapsack DP,
/// every call of a per-item custom scorer). Once cancelled it stays cancelled: every later
/// run using it is cancelled before it starts. One token may serve many runs at once. All
/// its functions are thread-safe, and freeing it while a run uses it is allowed (the run
/// keeps its own reference).
pub struct ctxpack_cancel_token {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_cancel_token {
    type Value = CancelToken;
    const TAG: u32 = u32::from_be_bytes(*b"CPCT");
    const NAME: &'static str = "ctxpack_cancel_token";
}

/// Creates a token that is not cancelled.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_cancel_token_new(
    out: *mut *mut ctxpack_cancel_token,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(CancelToken::new()))
}

/// Cancels every run using `token`, now and later. Thread-safe; may be called any number of
/// times, also from a callback of the run it cancels.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_cancel_token_cancel(
    token: *const ctxpack_cancel_token,
) -> ctxpack_status {
    handles::access(token, "token", |t| {
        t.cancel();
        Ok(())
    })
}

/// Stores 1 in `*out` when `token` was cancelled, else 0.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_cancel_token_is_cancelled(
    token: *const ctxpack_cancel_token,
    out: *mut u8,
) -> ctxpack_status {
    handles::access(token, "token", |t| {
        // SAFETY: `out` is NULL or writable.
        unsafe { handles::write_out(out, u8::from(t.is_cancelled()), "out") }
    })
}

/// Releases the caller's reference to a token. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_cancel_token_free(token: *mut ctxpack_cancel_token) {
    // SAFETY: `token` is NULL or a handle.
    unsafe { handles::release(token) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::scorer::{
        ctxpack_scorer_free, ctxpack_scorer_new_recency, ctxpack_scorer_retain,
    };
    use crate::ffi::status::ctxpack_status;
    use std::ptr;

    #[test]
    fn a_token_is_cancelled_once_and_stays_so() {
        let mut token = ptr::null_mut();
        // SAFETY: valid out-parameters; the token is freed once.
        unsafe {
            assert_eq!(
                ctxpack_cancel_token_new(&mut token, ptr::null_mut()),
                ctxpack_status::CTXPACK_OK
            );
            let mut out = 7u8;
            assert_eq!(
                ctxpack_cancel_token_is_cancelled(token, &mut out),
                ctxpack_status::CTXPACK_OK
            );
            assert_eq!(out, 0);
            assert_eq!(
                ctxpack_cancel_token_cancel(token),
                ctxpack_status::CTXPACK_OK
            );
            assert_eq!(
                ctxpack_cancel_token_is_cancelled(token, &mut out),
                ctxpack_status::CTXPACK_OK
            );
            assert_eq!(out, 1);
            ctxpack_cancel_token_free(token);
        }
    }

    #[test]
    fn each_retain_needs_its_own_free() {
        let mut scorer = ptr::null_mut();
        // SAFETY: the scorer gets three caller references and three frees; it is only
        // used while one of them is held.
        unsafe {
            assert_eq!(
                ctxpack_scorer_new_recency(&mut scorer, ptr::null_mut()),
                ctxpack_status::CTXPACK_OK
            );
            assert_eq!(ctxpack_scorer_retain(scorer), scorer);
            assert_eq!(ctxpack_scorer_retain(scorer), scorer);
            ctxpack_scorer_free(scorer);
            ctxpack_scorer_free(scorer);
            // One reference left: the handle is still live (retain succeeds on it).
            assert_eq!(ctxpack_scorer_retain(scorer), scorer);
            ctxpack_scorer_free(scorer);
            ctxpack_scorer_free(scorer);
            assert!(ctxpack_scorer_retain(ptr::null_mut()).is_null());
            let mut token = ptr::null_mut();
            ctxpack_cancel_token_new(&mut token, ptr::null_mut());
            // A token is not a scorer.
            assert!(ctxpack_scorer_retain(token.cast()).is_null());
            ctxpack_cancel_token_free(token);
        }
    }
}
