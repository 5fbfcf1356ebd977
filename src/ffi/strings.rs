//! Strings and arrays crossing the boundary: `ctxpack_str` in and out, validated slices.

use std::ffi::{c_char, CStr};
use std::mem::{align_of, size_of};
use std::slice;

use crate::ffi::status::{ctxpack_status, FfiError, FfiResult};
use crate::hash::{hash_bytes, hash_if_ascii};
use crate::scorer::head_words;

/// A UTF-8 string that is not necessarily NUL-terminated: `len` bytes at `ptr`.
///
/// As an argument, `{NULL, 0}` is the empty string, `{NULL, n > 0}` is
/// `CTXPACK_NULL_ARGUMENT`, and bytes that are not UTF-8 are `CTXPACK_INVALID_UTF8`; the
/// library copies what it keeps. As a return value, `ptr` is never NULL and points to
/// memory owned by the object it came from.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_str {
    /// First byte (may be NULL when `len` is 0).
    pub ptr: *const c_char,
    /// Length in bytes, not counting any NUL terminator.
    pub len: usize,
}

impl ctxpack_str {
    /// The empty string as the library returns it (a non-NULL pointer to a NUL byte).
    pub const EMPTY: ctxpack_str = ctxpack_str {
        ptr: c"".as_ptr(),
        len: 0,
    };

    /// Borrows a Rust string (the caller keeps it alive).
    pub(crate) fn borrowed(s: &str) -> Self {
        if s.is_empty() {
            return Self::EMPTY;
        }
        ctxpack_str {
            ptr: s.as_ptr().cast(),
            len: s.len(),
        }
    }

    /// Reads the string as UTF-8, replacing invalid sequences (for callback messages,
    /// where a bad message must not hide the failure it reports).
    ///
    /// # Safety
    /// `ptr` is valid for `len` bytes (or `len` is 0).
    pub(crate) unsafe fn to_str_lossy(self) -> String {
        // SAFETY: forwarded from the caller.
        match unsafe { bytes(&self, "message") } {
            Ok(b) => String::from_utf8_lossy(b).into_owned(),
            Err(_) => String::new(),
        }
    }
}

/// The bytes of a string argument.
///
/// # Safety
/// `s.ptr` is valid for `s.len` bytes, or NULL.
unsafe fn bytes<'a>(s: &ctxpack_str, what: &str) -> FfiResult<&'a [u8]> {
    // SAFETY: forwarded from the caller.
    unsafe { array(s.ptr.cast::<u8>(), s.len, what) }
}

/// Reads a string argument as `&str`, validating UTF-8.
///
/// The common case (empty, or ASCII at a valid pointer) is inlined into the caller and
/// returns in registers; everything else, errors included, goes through [`to_str_rest`].
///
/// # Safety
/// `s.ptr` is valid for `s.len` bytes, or NULL; the bytes outlive `'a`.
#[inline(always)]
pub(crate) unsafe fn to_str<'a>(s: &ctxpack_str, what: &str) -> FfiResult<&'a str> {
    if s.len == 0 {
        return Ok("");
    }
    // SAFETY: forwarded from the caller.
    if let Some(b) = unsafe { plain_bytes(s) } {
        if all_ascii(b) {
            // SAFETY: ASCII bytes are UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(b) });
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { to_str_rest(s, what) }
}

/// [`to_str`] and the string's [`head_words`] together, for a string looked up in a
/// scorer's table: an ASCII string of at most 16 bytes is checked on its head words (which
/// hold every one of its bytes), so it is read once.
///
/// # Safety
/// As for [`to_str`].
#[inline(always)]
pub(crate) unsafe fn to_str_with_head<'a>(
    s: &ctxpack_str,
    what: &str,
) -> FfiResult<(&'a str, [u64; 2])> {
    // SAFETY: forwarded from the caller.
    if let Some(b) = unsafe { plain_bytes(s) } {
        if b.len() <= 16 {
            let head = head_words(b);
            if (head[0] | head[1]) & NON_ASCII == 0 {
                // SAFETY: ASCII bytes are UTF-8.
                return Ok((unsafe { std::str::from_utf8_unchecked(b) }, head));
            }
        }
    }
    // SAFETY: forwarded from the caller.
    let text = unsafe { to_str(s, what) }?;
    Ok((text, head_words(text.as_bytes())))
}

/// [`to_str`] and the string's [`hash_bytes`] together: an ASCII string is checked and
/// hashed in one pass over its bytes (an item's content is the longest string a push
/// reads).
///
/// # Safety
/// As for [`to_str`].
#[inline(always)]
pub(crate) unsafe fn to_str_hashed<'a>(s: &ctxpack_str, what: &str) -> FfiResult<(&'a str, u64)> {
    // SAFETY: forwarded from the caller.
    if let Some(b) = unsafe { plain_bytes(s) } {
        if let Some(hash) = hash_if_ascii(b) {
            // SAFETY: ASCII bytes are UTF-8.
            return Ok((unsafe { std::str::from_utf8_unchecked(b) }, hash));
        }
    }
    // SAFETY: forwarded from the caller.
    let text = unsafe { to_str_rest(s, what) }?;
    Ok((text, hash_bytes(text.as_bytes())))
}

/// The bytes of a non-empty string whose pointer can be read as it is (not NULL, the
/// length within the address space); `None` for every other string, which the checked
/// path ([`to_str_rest`]) reads or rejects.
///
/// # Safety
/// As for [`to_str`].
#[inline(always)]
unsafe fn plain_bytes<'a>(s: &ctxpack_str) -> Option<&'a [u8]> {
    if s.len == 0 || s.ptr.is_null() || s.len > isize::MAX as usize {
        return None;
    }
    // SAFETY: not NULL, a byte array needs no alignment, and the length fits the address
    // space; validity for `len` bytes is the caller's contract.
    Some(unsafe { slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) })
}

/// [`to_str`] for the strings its inlined part does not accept: a NULL pointer, a length
/// too large, non-ASCII text (valid or not); the empty string reads as "".
///
/// # Safety
/// As for [`to_str`].
#[cold]
#[inline(never)]
unsafe fn to_str_rest<'a>(s: &ctxpack_str, what: &str) -> FfiResult<&'a str> {
    // SAFETY: forwarded from the caller.
    let b = unsafe { bytes(s, what) }?;
    std::str::from_utf8(b).map_err(|e| {
        FfiError::new(
            ctxpack_status::CTXPACK_INVALID_UTF8,
            format!(
                "{what} is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// The high bit of every byte of a word: a word of string bytes is ASCII when it has none.
const NON_ASCII: u64 = 0x8080_8080_8080_8080;

/// Whether every byte is ASCII, reading 8-byte words: the standard library's check takes
/// the bytes after its last 64-byte block one at a time, which is most of a short string
/// (tags, kinds) and a quarter of a typical message. Short strings are read as two
/// overlapping words (or halves, or three bytes), so no length needs a byte loop.
#[inline]
pub(crate) fn all_ascii(b: &[u8]) -> bool {
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let n = b.len();
    if n >= 8 {
        let mut blocks = b.chunks_exact(32);
        let mut any = 0u64;
        for block in &mut blocks {
            for w in block.chunks_exact(8) {
                any |= u64::from_le_bytes(w.try_into().expect("8 bytes"));
            }
        }
        let rest = blocks.remainder();
        for w in rest.chunks_exact(8) {
            any |= u64::from_le_bytes(w.try_into().expect("8 bytes"));
        }
        // The last word overlaps what was read: it covers the final `n % 8` bytes.
        (any | word(n - 8)) & NON_ASCII == 0
    } else if n >= 4 {
        (half(0) | half(n - 4)) & (NON_ASCII as u32) == 0
    } else if n > 0 {
        // The first, middle and last bytes cover every byte of 1 to 3.
        (b[0] | b[n / 2] | b[n - 1]) < 0x80
    } else {
        true
    }
}

/// Reads an array argument: `len` elements at `ptr`. `len == 0` is the empty array
/// whatever `ptr` is; a NULL or misaligned `ptr` with `len > 0` is an error.
///
/// # Safety
/// `ptr` is valid for `len` elements, or NULL; the elements outlive `'a`.
#[inline(always)]
pub(crate) unsafe fn array<'a, T>(ptr: *const T, len: usize, what: &str) -> FfiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    let fits = len
        .checked_mul(size_of::<T>())
        .is_some_and(|bytes| bytes <= isize::MAX as usize);
    let aligned = (ptr as usize) % align_of::<T>() == 0;
    if ptr.is_null() || !aligned || !fits {
        return Err(array_error(ptr.is_null(), aligned, len, what));
    }
    // SAFETY: non-NULL, aligned, size checked; validity is the caller's contract.
    Ok(unsafe { slice::from_raw_parts(ptr, len) })
}

/// The error of an array argument [`array`] refuses, checked in this order: a NULL
/// pointer, a misaligned one, a length whose bytes do not fit the address space.
#[cold]
#[inline(never)]
fn array_error(null: bool, aligned: bool, len: usize, what: &str) -> FfiError {
    if null {
        FfiError::new(
            ctxpack_status::CTXPACK_NULL_ARGUMENT,
            format!("{what} is NULL but its length is {len}"),
        )
    } else if !aligned {
        FfiError::invalid(format!("{what} is not aligned for its element type"))
    } else {
        FfiError::invalid(format!("{what} length {len} is too large"))
    }
}

/// Puts a NUL just after the text of `s`, in its spare capacity (reallocating when it has
/// none), so that `s` can be handed out as a NUL-terminated `ctxpack_str` (through
/// [`ctxpack_str::borrowed`]) for as long as it is not changed. Every string a handle
/// hands out goes through here, [`OwnedCString`] or a static C string literal: the one
/// rule is `{ptr, len}` with a NUL after `len`.
pub(crate) fn terminate(s: &mut String) {
    s.reserve_exact(1);
    // SAFETY: the first spare byte belongs to the String's allocation (reserved above);
    // writing it leaves the text, and so its UTF-8 validity, unchanged.
    unsafe { s.as_mut_vec() }.spare_capacity_mut()[0].write(0);
}

/// A static C string literal as a `ctxpack_str` (its NUL is not counted).
pub(crate) fn static_str(s: &'static CStr) -> ctxpack_str {
    ctxpack_str {
        ptr: s.as_ptr(),
        len: s.to_bytes().len(),
    }
}

/// An owned string that is also NUL-terminated, handed out as `ctxpack_str`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OwnedCString(Box<str>);

impl OwnedCString {
    pub(crate) fn new(mut s: String) -> Self {
        s.push('\0');
        Self(s.into_boxed_str())
    }

    /// An error message: a NUL copied from a caller's string (a kind, a name) is written
    /// as `\0`, so that C string functions see the whole message.
    pub(crate) fn message(s: String) -> Self {
        if s.contains('\0') {
            Self::new(s.replace('\0', "\\0"))
        } else {
            Self::new(s)
        }
    }

    /// As [`OwnedCString::new`], failing with `CTXPACK_OUT_OF_MEMORY` when the terminator
    /// does not fit (for strings as large as the caller's data).
    pub(crate) fn try_new(mut s: String) -> FfiResult<Self> {
        if crate::alloc::grow_string(&mut s, 1).is_err() {
            return Err(crate::alloc::out_of_memory_bytes(s.len() as u128 + 1, "a string").into());
        }
        Ok(Self::new(s))
    }

    /// The text without its terminator.
    pub(crate) fn as_str(&self) -> &str {
        &self.0[..self.0.len() - 1]
    }

    /// The string without its terminator; borrowed from `self`.
    pub(crate) fn as_ctxpack_str(&self) -> ctxpack_str {
        ctxpack_str {
            ptr: self.0.as_ptr().cast(),
            len: self.0.len() - 1,
        }
    }
}

/// Builds a `ctxpack_str` from a NUL-terminated C string (NULL gives the empty string).
/// The result borrows `s`: it is valid as long as `s` is.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_str_from_cstr(s: *const c_char) -> ctxpack_str {
    if s.is_null() {
        return ctxpack_str { ptr: s, len: 0 };
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let len = unsafe { CStr::from_ptr(s) }.to_bytes().len();
    ctxpack_str { ptr: s, len }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `array`'s errors, in their order: NULL first, then misalignment, then a length
    /// whose bytes do not fit the address space (a pointer both misaligned and too long
    /// reports the misalignment); an empty array is accepted whatever the pointer.
    #[test]
    fn array_errors_come_in_order() {
        let words = [0u64; 2];
        let misaligned = words.as_ptr().cast::<u8>().wrapping_add(1).cast::<u64>();
        let huge = usize::MAX / 4;
        let err = |ptr: *const u64, len: usize| {
            // SAFETY: every call below is refused before the pointer is read.
            let e = unsafe { array(ptr, len, "xs") }.unwrap_err();
            (e.status, e.message)
        };
        let invalid = ctxpack_status::CTXPACK_INVALID_ARGUMENT;
        assert_eq!(
            err(std::ptr::null(), huge),
            (
                ctxpack_status::CTXPACK_NULL_ARGUMENT,
                format!("xs is NULL but its length is {huge}")
            )
        );
        assert_eq!(
            err(misaligned, huge),
            (invalid, "xs is not aligned for its element type".into())
        );
        assert_eq!(
            err(misaligned, 1),
            (invalid, "xs is not aligned for its element type".into())
        );
        assert_eq!(
            err(words.as_ptr(), huge),
            (invalid, format!("xs length {huge} is too large"))
        );
        // SAFETY: an empty array reads nothing; two words are valid.
        unsafe {
            assert!(array(std::ptr::null::<u64>(), 0, "xs").unwrap().is_empty());
            assert_eq!(array(words.as_ptr(), 2, "xs").unwrap(), &[0, 0]);
        }
    }

    /// `all_ascii` agrees with the standard library at every length and with a high byte
    /// at every position (first, last, inside each word, in the overlapping last word).
    #[test]
    fn all_ascii_agrees_with_is_ascii() {
        let base: Vec<u8> = (0..200u32).map(|i| b'a' + (i % 26) as u8).collect();
        for n in 0..base.len() {
            let clean = &base[..n];
            assert!(all_ascii(clean), "length {n}");
            for at in 0..n {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut dirty = clean.to_vec();
                    dirty[at] = high;
                    assert_eq!(all_ascii(&dirty), dirty.is_ascii(), "length {n}, byte {at}");
                    assert!(!all_ascii(&dirty));
                }
            }
        }
    }

    /// `to_str` (its inlined ASCII part and its out-of-line rest) accepts exactly what
    /// `std::str::from_utf8` accepts, at every length and with a non-ASCII sequence at
    /// every position, and reports an invalid one at the standard library's offset.
    #[test]
    fn to_str_agrees_with_from_utf8() {
        let sequences: [&[u8]; 5] = [b"\xc3\xa9", b"\xe6\x97\xa5", b"\x80", b"\xe6\x97", b"\xff"];
        for n in 0..80usize {
            let ascii: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let mut cases = vec![ascii.clone()];
            for at in 0..n {
                for seq in sequences {
                    let mut bytes = ascii.clone();
                    bytes.splice(at..(at + seq.len()).min(n), seq.iter().copied());
                    cases.push(bytes);
                }
            }
            for bytes in &cases {
                let arg = ctxpack_str {
                    ptr: bytes.as_ptr().cast(),
                    len: bytes.len(),
                };
                // SAFETY: `arg` points to `bytes`, valid for its length.
                let got = unsafe { to_str(&arg, "tags[0]") };
                // The head-word form answers the same, with the string's head words.
                // SAFETY: as above.
                let with_head = unsafe { to_str_with_head(&arg, "tags[0]") };
                match (&got, with_head) {
                    (Ok(text), Ok((same, head))) => {
                        assert_eq!((*text, head), (same, head_words(bytes)));
                    }
                    (Err(e), Err(f)) => assert_eq!((e.status, &e.message), (f.status, &f.message)),
                    _ => panic!("to_str and to_str_with_head disagree on {bytes:?}"),
                }
                match std::str::from_utf8(bytes) {
                    Ok(want) => assert_eq!(got.unwrap(), want),
                    Err(e) => {
                        let err = got.unwrap_err();
                        assert_eq!(err.status, ctxpack_status::CTXPACK_INVALID_UTF8);
                        assert_eq!(
                            err.message,
                            format!(
                                "tags[0] is not valid UTF-8 (invalid byte at offset {})",
                                e.valid_up_to()
                            )
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn string_arguments_are_validated() {
        let ok = ctxpack_str {
            ptr: b"abc".as_ptr().cast(),
            len: 3,
        };
        let null_empty = ctxpack_str {
            ptr: std::ptr::null(),
            len: 0,
        };
        let null_long = ctxpack_str {
            ptr: std::ptr::null(),
            len: 2,
        };
        let bad = ctxpack_str {
            ptr: b"\xff\xfe".as_ptr().cast(),
            len: 2,
        };
        // SAFETY: the pointers above are valid for their lengths (or NULL).
        unsafe {
            assert_eq!(to_str(&ok, "s").unwrap(), "abc");
            assert_eq!(to_str(&null_empty, "s").unwrap(), "");
            let e = to_str(&null_long, "s").unwrap_err();
            assert_eq!(e.status, ctxpack_status::CTXPACK_NULL_ARGUMENT);
            let e = to_str(&bad, "kind").unwrap_err();
            assert_eq!(e.status, ctxpack_status::CTXPACK_INVALID_UTF8);
            assert!(e.message.starts_with("kind"));
            assert_eq!(bad.to_str_lossy(), "\u{fffd}\u{fffd}");
        }
        let owned = OwnedCString::new("hi".to_string());
        let s = owned.as_ctxpack_str();
        assert_eq!(s.len, 2);
        // SAFETY: `s` points into `owned`, which is NUL-terminated.
        assert_eq!(unsafe { *s.ptr.add(2) }, 0);
        let message = OwnedCString::message("kind 'a\0b'".to_string());
        assert_eq!(message.as_ctxpack_str().len, "kind 'a\\0b'".len());
        for text in ["", "exact", "ünïcode"] {
            let mut t = String::with_capacity(text.len());
            t.push_str(text);
            terminate(&mut t);
            let s = ctxpack_str::borrowed(&t);
            assert_eq!(s.len, text.len());
            // SAFETY: `terminate` wrote a NUL after the text.
            assert_eq!(unsafe { *s.ptr.add(s.len) }, 0);
            assert_eq!(t, text);
        }
    }
}
