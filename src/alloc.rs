//! Fallible allocation for sizes that come from a caller's numbers.
//!
//! A budget, a count or a length given by the caller can ask for more memory than the
//! machine has (a knapsack row for a budget of 10^12 tokens, a reservation for 2^40
//! descriptors). Such allocations go through this module: they fail with
//! [`Error::OutOfMemory`], naming what was being allocated and how many bytes, instead of
//! aborting the process as Rust's infallible allocation does.
//!
//! With the `ffi-test-hooks` feature, a test can set a ceiling above which every
//! allocation of this module fails (`ctxpack_test_set_allocation_limit`), to reach the
//! out-of-memory paths without exhausting the machine.

use std::mem::size_of;

use crate::error::{Error, Result};

#[cfg(feature = "ffi-test-hooks")]
static TEST_LIMIT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Sets the test ceiling (bytes) above which every allocation of this module fails.
#[cfg(feature = "ffi-test-hooks")]
pub(crate) fn set_test_limit(bytes: u64) {
    TEST_LIMIT.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the test ceiling refuses an allocation of `bytes`.
fn refused_by_test_limit(bytes: u128) -> bool {
    #[cfg(feature = "ffi-test-hooks")]
    {
        bytes > u128::from(TEST_LIMIT.load(std::sync::atomic::Ordering::Relaxed))
    }
    #[cfg(not(feature = "ffi-test-hooks"))]
    {
        let _ = bytes;
        false
    }
}

/// The error for `count` elements of `T` (bytes computed without overflow).
fn out_of_memory<T>(count: u128, what: &str) -> Error {
    out_of_memory_bytes(count * size_of::<T>().max(1) as u128, what)
}

/// The error for an allocation of `bytes` for `what`.
pub(crate) fn out_of_memory_bytes(bytes: u128, what: &str) -> Error {
    Error::OutOfMemory {
        what: what.to_owned(),
        bytes,
    }
}

/// Makes room for `additional` more bytes in `text`, growing its capacity geometrically
/// (for text built piece by piece); on failure returns the bytes the text needed.
pub(crate) fn grow_string(text: &mut String, additional: usize) -> std::result::Result<(), u128> {
    let needed = text.len() as u128 + additional as u128;
    if text.capacity() - text.len() >= additional {
        return Ok(());
    }
    if refused_by_test_limit(needed) || text.try_reserve(additional).is_err() {
        return Err(needed);
    }
    Ok(())
}

/// Reserves room for `additional` more elements in `v` (exactly that many: the caller
/// knows the final size), or fails with [`Error::OutOfMemory`] naming `what`.
pub(crate) fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    let total = v.len() as u128 + additional as u128;
    if refused_by_test_limit(total * size_of::<T>() as u128) {
        return Err(out_of_memory::<T>(total, what));
    }
    v.try_reserve_exact(additional)
        .map_err(|_| out_of_memory::<T>(total, what))
}

/// Makes room for `additional` more elements in `v`, growing its capacity geometrically
/// (for a vector that grows one element at a time), or fails with
/// [`Error::OutOfMemory`] naming `what`.
pub(crate) fn grow<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<()> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    let total = v.len() as u128 + additional as u128;
    if refused_by_test_limit(total * size_of::<T>() as u128) {
        return Err(out_of_memory::<T>(total, what));
    }
    v.try_reserve(additional)
        .map_err(|_| out_of_memory::<T>(total, what))
}

/// An empty vector with room for `capacity` elements.
pub(crate) fn vec_with_capacity<T>(capacity: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, capacity, what)?;
    Ok(v)
}

/// A vector of `len` copies of `value`.
pub(crate) fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = vec_with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// An owned copy of `s`.
pub(crate) fn copy_str(s: &str, what: &str) -> Result<String> {
    let mut bytes = vec_with_capacity::<u8>(s.len(), what)?;
    bytes.extend_from_slice(s.as_bytes());
    // The bytes were a `str`: still UTF-8.
    Ok(String::from_utf8(bytes).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn impossible_sizes_fail_with_the_size_and_what() {
        let err = vec_with_capacity::<u64>(usize::MAX / 8, "a DP row").unwrap_err();
        assert_eq!(err.code(), ErrorCode::OutOfMemory);
        let bytes = (usize::MAX / 8) as u128 * 8;
        assert_eq!(
            err.to_string(),
            format!("out of memory: a DP row needs {bytes} bytes")
        );
        // Capacity overflow (more than usize::MAX bytes) is reported the same way.
        let mut v: Vec<u64> = vec![1];
        let err = reserve(&mut v, usize::MAX, "items").unwrap_err();
        assert!(err
            .to_string()
            .contains(&format!("{}", (usize::MAX as u128 + 1) * 8)));
        assert_eq!(v, [1]);
    }

    #[test]
    fn possible_sizes_succeed() {
        assert_eq!(filled(3, 7u8, "x").unwrap(), [7, 7, 7]);
        assert_eq!(copy_str("héllo", "content").unwrap(), "héllo");
        assert!(vec_with_capacity::<u8>(0, "x").unwrap().is_empty());
    }
}
