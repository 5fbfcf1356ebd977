//! Status codes, the error object, and the one shim every exported function goes through.

use std::any::Any;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use crate::error::{Error, ErrorCode};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::strings::{ctxpack_str, OwnedCString};

/// Result of every fallible function. `CTXPACK_OK` is 0. Values 1 to 99 are the error
/// kinds of the core engine (same numbers as its `ErrorCode`); values from 100 on are
/// errors of the C interface itself. Numbers never change; new values are only appended.
/// cbindgen:prefix-with-name=false
#[allow(non_camel_case_types)]
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ctxpack_status {
    /// Success.
    CTXPACK_OK = 0,
    /// An item was given empty content.
    CTXPACK_EMPTY_CONTENT = 1,
    /// A kind was whitespace-only (an empty kind means the default, `Message`).
    CTXPACK_EMPTY_KIND = 2,
    /// A source was whitespace-only (an empty source means the default, `Chat`).
    CTXPACK_EMPTY_SOURCE = 3,
    /// A budget failed one of its validation rules.
    CTXPACK_INVALID_BUDGET = 4,
    /// Pinned items need more tokens than `max_tokens - output_reserve`.
    CTXPACK_PINNED_EXCEEDS_BUDGET = 5,
    /// The selection exceeds `target_tokens` under the Throw overflow strategy.
    CTXPACK_OVERFLOW = 6,
    /// A scorer configuration is invalid.
    CTXPACK_SCORER_CONFIG = 7,
    /// A slicer configuration is invalid.
    CTXPACK_SLICER_CONFIG = 8,
    /// A pipeline is misconfigured.
    CTXPACK_PIPELINE_CONFIG = 9,
    /// A knapsack table would exceed its memory limit.
    CTXPACK_TABLE_TOO_LARGE = 10,
    /// A count-quota slicer with the Throw scarcity found too few items of a required kind.
    CTXPACK_COUNT_REQUIREMENT_UNMET = 11,
    /// A callback reported failure or returned an invalid result (bad positions, not a
    /// permutation, a non-finite score).
    CTXPACK_CALLBACK = 12,
    /// A token sum does not fit in 64 bits.
    CTXPACK_TOKEN_OVERFLOW = 13,
    /// A policy is invalid.
    CTXPACK_INVALID_POLICY = 14,
    /// An argument is invalid: an enumeration value out of its range, a wrong
    /// `struct_size`, inconsistent lengths.
    CTXPACK_INVALID_ARGUMENT = 15,
    /// Memory for a size the caller controls (a budget's knapsack table, a reservation
    /// for a count of items, a copy of a long string, a report's JSON) could not be
    /// allocated; the message names what and how many bytes. Nothing was changed.
    CTXPACK_OUT_OF_MEMORY = 16,
    /// The function needs a feature this build of ctxpack was compiled without (the
    /// message names it), such as the `tokenizer` feature for `ctxpack_encoding_*`.
    CTXPACK_UNSUPPORTED = 17,
    /// The run was cancelled through the `ctxpack_cancel_token` of its
    /// `ctxpack_run_options` (before it started or while it ran); nothing was returned.
    CTXPACK_CANCELLED = 18,
    /// A prefix state (`ctxpack_prefix_state`) cannot be used: corrupt or truncated bytes,
    /// a newer format version, or a state from another conversation; the message says
    /// which.
    CTXPACK_INVALID_STATE = 19,
    /// A chat request (OpenAI or Anthropic JSON) is malformed or breaks the provider's
    /// rules; the message names the JSON path.
    CTXPACK_INVALID_REQUEST = 20,
    /// A required pointer argument was NULL (or a string/array had NULL data with a
    /// non-zero length).
    CTXPACK_NULL_ARGUMENT = 100,
    /// A string argument was not valid UTF-8.
    CTXPACK_INVALID_UTF8 = 101,
    /// A handle argument is of another type than the function expects (or was freed).
    CTXPACK_WRONG_HANDLE_TYPE = 102,
    /// An index passed to an accessor is not below the corresponding count.
    CTXPACK_OUT_OF_RANGE = 103,
    /// The result was produced without tracing, so it has no selection report.
    CTXPACK_NO_REPORT = 104,
    /// The library panicked; this is a bug in ctxpack. The handles involved stay usable.
    CTXPACK_PANIC = 105,
}

/// The statuses of the C interface itself, in numeric order, after the core kinds of the
/// table in `crate::error`. Adding one: its enumerator above and one name here.
macro_rules! interface_statuses {
    ($then:ident, $($args:tt)*) => {
        $then! {
            $($args)*
            interface: [
                CTXPACK_NULL_ARGUMENT,
                CTXPACK_INVALID_UTF8,
                CTXPACK_WRONG_HANDLE_TYPE,
                CTXPACK_OUT_OF_RANGE,
                CTXPACK_NO_REPORT,
                CTXPACK_PANIC,
            ]
        }
    };
}

/// Receives the core table and adds the interface statuses.
macro_rules! with_core_kinds {
    ($($(#[doc = $doc:literal])* $kind:ident = $value:literal => $status:ident,)*) => {
        interface_statuses!(derive_status_items, core: [$($kind => $status),*]);
    };
}

/// Defines `ALL`, `from_code` and `c_name`; their matches are exhaustive, so an
/// enumerator missing from the lists does not compile.
macro_rules! derive_status_items {
    (core: [$($kind:ident => $status:ident),*] interface: [$($interface:ident),* $(,)?]) => {
        impl ctxpack_status {
            /// Every status, in numeric order.
            pub const ALL: [ctxpack_status; 1 + [$(stringify!($status)),*].len()
                + [$(stringify!($interface)),*].len()] = [
                ctxpack_status::CTXPACK_OK,
                $(ctxpack_status::$status,)*
                $(ctxpack_status::$interface,)*
            ];

            /// The status of a core error code (same number).
            pub fn from_code(code: ErrorCode) -> Self {
                match code {
                    $(ErrorCode::$kind => ctxpack_status::$status,)*
                }
            }

            /// The C name of the status (`"CTXPACK_OK"`, ...), NUL-terminated.
            fn c_name(self) -> &'static str {
                match self {
                    ctxpack_status::CTXPACK_OK => "CTXPACK_OK\0",
                    $(ctxpack_status::$status => concat!(stringify!($status), "\0"),)*
                    $(ctxpack_status::$interface => concat!(stringify!($interface), "\0"),)*
                }
            }
        }
    };
}
crate::error::core_error_kinds!(with_core_kinds);

impl ctxpack_status {
    /// The status with this number, if any.
    pub fn from_i32(value: i32) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| *s as i32 == value)
    }
}

/// An error of the C layer: a status and a message. Core errors convert into it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FfiError {
    pub(crate) status: ctxpack_status,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(status: ctxpack_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// `what` was NULL.
    pub(crate) fn null(what: &str) -> Self {
        Self::new(
            ctxpack_status::CTXPACK_NULL_ARGUMENT,
            format!("{what} must not be NULL"),
        )
    }

    /// An invalid argument (status `CTXPACK_INVALID_ARGUMENT`).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ctxpack_status::CTXPACK_INVALID_ARGUMENT, message)
    }

    /// Prefixes the message with context (`"item 3: ..."`), keeping the status.
    pub(crate) fn context(self, prefix: impl std::fmt::Display) -> Self {
        Self {
            status: self.status,
            message: format!("{prefix}: {}", self.message),
        }
    }
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        Self::new(ctxpack_status::from_code(e.code()), e.to_string())
    }
}

/// Shorthand for results of the C layer.
pub(crate) type FfiResult<T> = Result<T, FfiError>;

/// Runs `check` with an empty name and, only when it fails, again under the name `what`
/// builds: a nested field's name (`options.reserved`) is formatted for an error message,
/// never on the successful path. `check` must have no effect when it fails. The first
/// check is inlined into the caller, the rare second one is not.
#[inline(always)]
pub(crate) fn named<T, C: Fn(&str) -> FfiResult<T>>(
    check: C,
    what: impl FnOnce() -> String,
) -> FfiResult<T> {
    match check("") {
        Ok(value) => Ok(value),
        Err(_) => renamed(check, what),
    }
}

/// The second check of [`named`], under the formatted name.
#[cold]
#[inline(never)]
fn renamed<T>(check: impl Fn(&str) -> FfiResult<T>, what: impl FnOnce() -> String) -> FfiResult<T> {
    check(&what())
}

/// An error reported by a failed call: its status and a human-readable message. Owned by
/// the caller, who frees it with `ctxpack_error_free`.
pub struct ctxpack_error {
    _opaque: [u8; 0],
}

/// What an error handle holds.
pub(crate) struct ErrorData {
    status: ctxpack_status,
    message: OwnedCString,
}

impl HandleType for ctxpack_error {
    type Value = ErrorData;
    const TAG: u32 = u32::from_be_bytes(*b"CPER");
    const NAME: &'static str = "ctxpack_error";
}

/// The one shim every exported function goes through: runs `body` behind a panic
/// boundary, maps its outcome to a status and, when `out_error` is not NULL, stores an
/// error object there on failure (NULL on success).
pub(crate) fn guard<F>(out_error: *mut *mut ctxpack_error, body: F) -> ctxpack_status
where
    F: FnOnce() -> FfiResult<()>,
{
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(FfiError::new(
            ctxpack_status::CTXPACK_PANIC,
            panic_message(payload.as_ref()),
        ))
    });
    let status = match &outcome {
        Ok(()) => ctxpack_status::CTXPACK_OK,
        Err(e) => e.status,
    };
    if !out_error.is_null() {
        let error = match outcome {
            Ok(()) => ptr::null_mut(),
            Err(e) => handles::into_raw::<ctxpack_error>(ErrorData {
                status: e.status,
                message: OwnedCString::message(e.message),
            }),
        };
        // SAFETY: the caller passes either NULL or a writable `ctxpack_error *` slot.
        unsafe { out_error.write(error) };
    }
    status
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_string());
    format!("internal error (panic) in ctxpack: {detail}")
}

/// The status stored in an error object; `CTXPACK_WRONG_HANDLE_TYPE` when `error` is not
/// an error object (or NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_error_code(error: *const ctxpack_error) -> ctxpack_status {
    // SAFETY: `error` is NULL or a handle pointer (checked by its tag).
    match unsafe { handles::borrow(error, "error") } {
        Ok(data) => data.status,
        Err(_) => ctxpack_status::CTXPACK_WRONG_HANDLE_TYPE,
    }
}

/// The message of an error object: UTF-8, also NUL-terminated (the NUL is not counted in
/// `len`), owned by the error and valid until `ctxpack_error_free`. An empty string when
/// `error` is NULL or not an error object.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_error_message(error: *const ctxpack_error) -> ctxpack_str {
    // SAFETY: `error` is NULL or a handle pointer (checked by its tag).
    match unsafe { handles::borrow(error, "error") } {
        Ok(data) => data.message.as_ctxpack_str(),
        Err(_) => ctxpack_str::EMPTY,
    }
}

/// Frees an error object. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_error_free(error: *mut ctxpack_error) {
    // SAFETY: `error` is NULL or a handle pointer (checked by its tag).
    unsafe { handles::release(error) };
}

/// The C name of a status value (`"CTXPACK_OK"`, ...), as a static NUL-terminated
/// string; `"CTXPACK_UNKNOWN_STATUS"` for a number that is not a status.
#[no_mangle]
pub extern "C" fn ctxpack_status_name(status: i32) -> *const c_char {
    ctxpack_status::from_i32(status)
        .map_or("CTXPACK_UNKNOWN_STATUS\0", ctxpack_status::c_name)
        .as_ptr()
        .cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_listed_once_in_numeric_order_with_its_c_name() {
        assert_eq!(ctxpack_status::ALL[0], ctxpack_status::CTXPACK_OK);
        for pair in ctxpack_status::ALL.windows(2) {
            assert!((pair[0] as i32) < (pair[1] as i32), "{pair:?}");
        }
        for s in ctxpack_status::ALL {
            assert_eq!(s.c_name(), format!("{s:?}\0"));
        }
    }

    #[test]
    fn core_codes_keep_their_numbers() {
        for code in ErrorCode::ALL {
            assert_eq!(ctxpack_status::from_code(code) as i32, code.value());
        }
        for s in ctxpack_status::ALL {
            assert_eq!(ctxpack_status::from_i32(s as i32), Some(s));
        }
        // The statuses are exactly OK, the core kinds and the C layer's own (100 on).
        let core: Vec<i32> = ErrorCode::ALL.iter().map(|c| c.value()).collect();
        for v in -1..100 {
            let known = v == 0 || core.contains(&v);
            assert_eq!(ctxpack_status::from_i32(v).is_some(), known, "status {v}");
        }
    }

    #[test]
    fn panics_become_a_status_with_a_message() {
        let mut err = ptr::null_mut();
        let status = guard(&mut err, || panic!("boom"));
        assert_eq!(status, ctxpack_status::CTXPACK_PANIC);
        // SAFETY: `err` was just produced by `guard`.
        unsafe {
            assert_eq!(ctxpack_error_code(err), ctxpack_status::CTXPACK_PANIC);
            assert!(ctxpack_error_message(err).to_str_lossy().contains("boom"));
            ctxpack_error_free(err);
        }
        assert_eq!(
            guard(ptr::null_mut(), || Ok(())),
            ctxpack_status::CTXPACK_OK
        );
    }
}
