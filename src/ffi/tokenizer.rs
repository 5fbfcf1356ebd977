//! Token counting through the ABI: the built-in encodings as static handles, counting,
//! counting with a limit, truncating (an offset into the caller's string, no allocation).
//! In a build without the `tokenizer` feature every function here exists and returns
//! `CTXPACK_UNSUPPORTED`.

use crate::ffi::handles::{self, HandleType, StaticHandle};
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiError, FfiResult};
use crate::ffi::strings::{ctxpack_str, to_str};
use crate::tokenizer::{self, Encoding, ENCODING_NAMES};

/// One of the built-in tokenizer encodings (`o200k_base`, `cl100k_base`), from
/// `ctxpack_encoding_get`. Owned by the library and valid for the life of the process: it
/// is never freed and may be used from any number of threads at once.
pub struct ctxpack_encoding {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_encoding {
    /// The position of the encoding in `ENCODING_NAMES`.
    type Value = usize;
    const TAG: u32 = u32::from_be_bytes(*b"CPEN");
    const NAME: &'static str = "ctxpack_encoding";
    const SHARED: bool = false;
}

static HANDLES: [StaticHandle<usize>; 2] = [
    StaticHandle::new::<ctxpack_encoding>(0),
    StaticHandle::new::<ctxpack_encoding>(1),
];

/// NUL-terminated copies of the names, for `ctxpack_encoding_name`.
const C_NAMES: [&str; 2] = ["o200k_base\0", "cl100k_base\0"];

/// The encoding behind a handle argument. Without the tokenizer feature this is always
/// `CTXPACK_UNSUPPORTED`, whatever the handle.
///
/// # Safety
/// `encoding` is NULL or a handle pointer of this library.
unsafe fn encoding_of(encoding: *const ctxpack_encoding) -> FfiResult<&'static Encoding> {
    if cfg!(not(feature = "tokenizer")) {
        return Err(tokenizer::unsupported().into());
    }
    // SAFETY: forwarded from the caller.
    let index = unsafe { handles::borrow(encoding, "encoding") }?;
    Ok(Encoding::by_index(*index)?)
}

/// A token count or limit as C sees it (`int64_t`).
fn tokens_out(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A non-negative `int64_t` token number as `usize` (`what` names it in the error).
fn tokens_in(n: i64, what: &str) -> FfiResult<usize> {
    usize::try_from(n).map_err(|_| FfiError::invalid(format!("{what} must be >= 0 (got {n})")))
}

/// Gets a built-in encoding by name: `"o200k_base"` or `"cl100k_base"`, in any ASCII
/// case. The first call for an encoding loads it (builds its lookup tables from the
/// vocabulary compiled into the library; tens of milliseconds, see docs/tokenizer.md);
/// later calls return the same handle at once. Thread-safe. `*out_encoding` is set to
/// NULL first and receives the encoding on success; it is never freed. An unknown name is
/// `CTXPACK_INVALID_ARGUMENT` with a message listing the known names; a build without the
/// tokenizer feature answers `CTXPACK_UNSUPPORTED`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_encoding_get(
    name: ctxpack_str,
    out_encoding: *mut *const ctxpack_encoding,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    guard(out_error, || {
        if out_encoding.is_null() {
            return Err(FfiError::null("out_encoding"));
        }
        // SAFETY: `out_encoding` is not NULL and writable by the caller's contract.
        unsafe { out_encoding.write(std::ptr::null()) };
        // SAFETY: `name` is valid for its length (or NULL).
        let name = unsafe { to_str(&name, "name") }?;
        let index = Encoding::index_of(name)?;
        Encoding::by_index(index)?;
        // SAFETY: as above.
        unsafe { out_encoding.write(HANDLES[index].as_ptr()) };
        Ok(())
    })
}

/// The encoding's name (`"o200k_base"`, `"cl100k_base"`) as a static string, also
/// NUL-terminated (the NUL is not counted in `len`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_encoding_name(
    encoding: *const ctxpack_encoding,
    out_name: *mut ctxpack_str,
) -> ctxpack_status {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `encoding` is NULL or a handle pointer.
        let e = unsafe { encoding_of(encoding) }?;
        let index = ENCODING_NAMES
            .iter()
            .position(|n| *n == e.name())
            .unwrap_or(0);
        let name = ctxpack_str {
            ptr: C_NAMES[index].as_ptr().cast(),
            len: C_NAMES[index].len() - 1,
        };
        // SAFETY: `out_name` is NULL or writable.
        unsafe { handles::write_out(out_name, name, "out_name") }
    })
}

/// Counts the tokens of `text` (UTF-8; `CTXPACK_INVALID_UTF8` with the byte offset
/// otherwise) into `*out_tokens`. Special tokens such as `<|endoftext|>` are counted as
/// ordinary text.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_encoding_count(
    encoding: *const ctxpack_encoding,
    text: ctxpack_str,
    out_tokens: *mut i64,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    guard(out_error, || {
        // SAFETY: `encoding` is NULL or a handle pointer.
        let e = unsafe { encoding_of(encoding) }?;
        if out_tokens.is_null() {
            return Err(FfiError::null("out_tokens"));
        }
        // SAFETY: `text` is valid for its length (or NULL).
        let text = unsafe { to_str(&text, "text") }?;
        let n = tokens_out(e.count(text));
        // SAFETY: `out_tokens` is not NULL and writable.
        unsafe { handles::write_out(out_tokens, n, "out_tokens") }
    })
}

/// Counts the tokens of `text` up to `limit` (>= 0): `*out_tokens` receives the exact
/// count when it is at most `limit`, and `limit + 1` when the text has more tokens — then
/// the counting stopped early, at the first piece of text that took the total past
/// `limit`, so rejecting a huge text costs about as much as counting `limit` tokens. A
/// negative `limit` is `CTXPACK_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_encoding_count_with_limit(
    encoding: *const ctxpack_encoding,
    text: ctxpack_str,
    limit: i64,
    out_tokens: *mut i64,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    guard(out_error, || {
        // SAFETY: `encoding` is NULL or a handle pointer.
        let e = unsafe { encoding_of(encoding) }?;
        if out_tokens.is_null() {
            return Err(FfiError::null("out_tokens"));
        }
        let limit_n = tokens_in(limit, "limit")?;
        // SAFETY: `text` is valid for its length (or NULL).
        let text = unsafe { to_str(&text, "text") }?;
        let n = match e.count_with_limit(text, limit_n) {
            Some(n) => tokens_out(n),
            None => limit.saturating_add(1),
        };
        // SAFETY: `out_tokens` is not NULL and writable.
        unsafe { handles::write_out(out_tokens, n, "out_tokens") }
    })
}

/// Truncates `text` to at most `max_tokens` (>= 0) tokens without copying it:
/// `*out_len` receives the length in bytes of the kept prefix (`text.ptr[0 .. *out_len]`,
/// which is valid UTF-8 and ends on a character boundary), and `*out_tokens`, when
/// `out_tokens` is not NULL, its token count (at most `max_tokens`). The prefix is the
/// longest one made of the text's first `k <= max_tokens` tokens that ends on a character
/// boundary and counts, on its own, at most `max_tokens` tokens (docs/tokenizer.md,
/// "Truncation"); a text that fits is kept whole, and `max_tokens == 0` keeps nothing.
/// A negative `max_tokens` is `CTXPACK_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_encoding_truncate(
    encoding: *const ctxpack_encoding,
    text: ctxpack_str,
    max_tokens: i64,
    out_len: *mut usize,
    out_tokens: *mut i64,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    guard(out_error, || {
        // SAFETY: `encoding` is NULL or a handle pointer.
        let e = unsafe { encoding_of(encoding) }?;
        if out_len.is_null() {
            return Err(FfiError::null("out_len"));
        }
        let max = tokens_in(max_tokens, "max_tokens")?;
        // SAFETY: `text` is valid for its length (or NULL).
        let text = unsafe { to_str(&text, "text") }?;
        let cut = e.truncate(text, max);
        // SAFETY: `out_len` is not NULL and writable; `out_tokens` is NULL or writable.
        unsafe {
            out_len.write(cut.text.len());
            if !out_tokens.is_null() {
                out_tokens.write(tokens_out(cut.tokens));
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    fn s(text: &str) -> ctxpack_str {
        ctxpack_str {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    #[cfg(feature = "tokenizer")]
    #[test]
    fn counts_through_the_abi() {
        let mut enc = ptr::null();
        // SAFETY: valid arguments throughout.
        unsafe {
            let status = ctxpack_encoding_get(s("cl100k_base"), &mut enc, ptr::null_mut());
            assert_eq!(status, ctxpack_status::CTXPACK_OK);
            let mut n = -1;
            let st = ctxpack_encoding_count(enc, s("hello world"), &mut n, ptr::null_mut());
            assert_eq!((st, n), (ctxpack_status::CTXPACK_OK, 2));
            let st = ctxpack_encoding_count_with_limit(
                enc,
                s("hello world"),
                1,
                &mut n,
                ptr::null_mut(),
            );
            assert_eq!((st, n), (ctxpack_status::CTXPACK_OK, 2));
            let mut len = 0;
            let st = ctxpack_encoding_truncate(
                enc,
                s("hello world"),
                1,
                &mut len,
                &mut n,
                ptr::null_mut(),
            );
            assert_eq!((st, len, n), (ctxpack_status::CTXPACK_OK, 5, 1));
        }
    }

    /// Without the feature, every function answers CTXPACK_UNSUPPORTED with a message
    /// naming the feature (run by `cargo test --no-default-features --lib`).
    #[cfg(not(feature = "tokenizer"))]
    #[test]
    fn every_function_is_unsupported_without_the_feature() {
        use crate::ffi::status::{ctxpack_error_free, ctxpack_error_message};
        let bogus = HANDLES[0].as_ptr::<ctxpack_encoding>();
        let mut err = ptr::null_mut();
        let mut n = 0i64;
        let mut len = 0usize;
        let mut enc = bogus;
        let mut name = ctxpack_str::EMPTY;
        let unsupported = ctxpack_status::CTXPACK_UNSUPPORTED;
        // SAFETY: valid arguments throughout; errors are freed.
        unsafe {
            assert_eq!(
                ctxpack_encoding_get(s("o200k_base"), &mut enc, &mut err),
                unsupported
            );
            assert!(enc.is_null());
            assert!(ctxpack_error_message(err)
                .to_str_lossy()
                .contains("tokenizer feature"));
            ctxpack_error_free(err);
            assert_eq!(
                ctxpack_encoding_get(s("nope"), &mut enc, ptr::null_mut()),
                unsupported
            );
            assert_eq!(ctxpack_encoding_name(bogus, &mut name), unsupported);
            assert_eq!(
                ctxpack_encoding_count(bogus, s("x"), &mut n, ptr::null_mut()),
                unsupported
            );
            assert_eq!(
                ctxpack_encoding_count_with_limit(bogus, s("x"), 1, &mut n, ptr::null_mut()),
                unsupported
            );
            assert_eq!(
                ctxpack_encoding_truncate(bogus, s("x"), 1, &mut len, &mut n, ptr::null_mut()),
                unsupported
            );
            assert_eq!(
                ctxpack_encoding_count(ptr::null(), s("x"), &mut n, ptr::null_mut()),
                unsupported
            );
        }
        assert!(crate::tokenizer::Encoding::by_name("o200k_base").is_err());
    }
}
