//! Structs that start with `size_t struct_size`, so they can grow without breaking
//! callers compiled against an older header.
//!
//! Rule (the Linux `copy_struct_from_user` rule): the caller sets `struct_size` to
//! `sizeof` the struct in the header it was compiled with.
//! * Input: the library reads `min(struct_size, its own size)` bytes; fields the caller's
//!   struct does not have take their zero value, which every field added after version 1
//!   must give its default meaning. A larger `struct_size` (a newer header) is accepted
//!   when the bytes the library does not know are all zero, and is
//!   `CTXPACK_INVALID_ARGUMENT` otherwise. A `struct_size` below the version-1 size is
//!   `CTXPACK_INVALID_ARGUMENT`, and so is a `struct_size` above 4096 (an uninitialised
//!   struct) or one that is not a multiple of the struct's alignment (no compiler's
//!   `sizeof` is; such a size could end in the middle of a pointer field, which the
//!   library would then read as a pointer made of some of its bytes and zeros).
//! * Output: the library writes `min(struct_size, its own size)` bytes and leaves the rest
//!   of a newer caller's struct untouched.
//!
//! Caller-written structs have no implicit padding on 64-bit targets: after their flag
//! bytes comes an explicit `reserved` array that must be zero, so every byte of the
//! struct is either a field or checked, and a later version appends its fields after
//! `reserved` at an aligned offset. Flags are `uint8_t` read as bytes ([`flag`]): 0 or 1,
//! anything else is `CTXPACK_INVALID_ARGUMENT` naming the field.

use std::mem::{size_of, MaybeUninit};
use std::ptr;

use crate::ffi::status::{ctxpack_status, guard, FfiError, FfiResult};

/// No struct of this ABI will ever be this large: a bigger `struct_size` is taken for an
/// uninitialised struct and rejected before anything else is read.
const MAX_STRUCT_SIZE: usize = 4096;

/// A `#[repr(C)]` struct whose first field is `struct_size: usize` and for which the
/// all-zero bit pattern is a valid value.
///
/// # Safety
/// Implementors guarantee both properties.
pub(crate) unsafe trait Versioned: Copy {
    /// `sizeof` the first version of the struct.
    const V1_SIZE: usize;
    /// The C name, for messages.
    const NAME: &'static str;
}

/// A caller-written flag byte: 0 is false, 1 is true, anything else is
/// `CTXPACK_INVALID_ARGUMENT` naming the field (`what`).
#[inline(always)]
pub(crate) fn flag(byte: u8, what: &str) -> FfiResult<bool> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(flag_error(b, what)),
    }
}

/// The error of a flag byte `b` that is neither 0 nor 1 (out of line: callers check
/// flags on every push).
#[cold]
#[inline(never)]
fn flag_error(b: u8, what: &str) -> FfiError {
    FfiError::invalid(format!("{what} is {b}; a flag must be 0 or 1"))
}

/// Checks that a struct's `reserved` bytes are zero.
#[inline(always)]
pub(crate) fn reserved(bytes: &[u8], what: &str) -> FfiResult<()> {
    match bytes.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(i) => Err(reserved_error(bytes, i, what)),
    }
}

/// The error of `bytes[i]`, the first non-zero reserved byte (out of line, like
/// [`flag_error`]).
#[cold]
#[inline(never)]
fn reserved_error(bytes: &[u8], i: usize, what: &str) -> FfiError {
    FfiError::invalid(format!(
        "{what}[{i}] is {}; reserved bytes must be zero",
        bytes[i]
    ))
}

/// Reads the caller's `struct_size`.
///
/// # Safety
/// `ptr` is non-NULL and points to at least a `usize`.
unsafe fn struct_size<T>(ptr: *const T) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.cast::<usize>().read_unaligned() }
}

fn size_error<T: Versioned>(size: usize) -> FfiError {
    FfiError::invalid(format!(
        "{}.struct_size is {size}; set it to sizeof({}) ({} in this library's header)",
        T::NAME,
        T::NAME,
        size_of::<T>()
    ))
}

/// Checks the caller's `struct_size` against the first version's size, the sanity bound
/// and the struct's alignment.
fn check_size<T: Versioned>(size: usize) -> FfiResult<()> {
    // Every version's size is a `sizeof`, a multiple of the alignment.
    const { assert!(T::V1_SIZE % std::mem::align_of::<T>() == 0) };
    if size < T::V1_SIZE || size > MAX_STRUCT_SIZE || size % std::mem::align_of::<T>() != 0 {
        return Err(size_error::<T>(size));
    }
    Ok(())
}

/// The body of every `ctxpack_*_init` function: sets the `size` bytes at `out` to zero
/// and `struct_size` to `size` (`sizeof` the struct in the caller's header).
///
/// # Safety
/// `out` is NULL or valid for writes of `size` bytes.
pub(crate) unsafe fn init<T: Versioned>(out: *mut T, size: usize) -> ctxpack_status {
    guard(ptr::null_mut(), || {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        check_size::<T>(size)?;
        if out as usize % std::mem::align_of::<T>() != 0 {
            return Err(FfiError::invalid(format!(
                "out is not aligned for {}",
                T::NAME
            )));
        }
        // SAFETY: the caller declared `size` writable bytes at `out`, which is aligned.
        unsafe {
            ptr::write_bytes(out.cast::<u8>(), 0, size);
            out.cast::<usize>().write(size);
        }
        Ok(())
    })
}

/// Reads a versioned input struct (see the module rule).
///
/// # Safety
/// `ptr` is NULL or valid for reads of its `struct_size` bytes.
pub(crate) unsafe fn read<T: Versioned>(ptr: *const T, what: &str) -> FfiResult<T> {
    if ptr.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: not NULL; the caller's contract covers `struct_size` bytes.
    let size = unsafe { struct_size(ptr) };
    check_size::<T>(size)?;
    let known = size_of::<T>();
    if size > known {
        // SAFETY: the caller declared `size` readable bytes.
        let tail = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>().add(known), size - known) };
        if tail.iter().any(|&b| b != 0) {
            return Err(FfiError::invalid(format!(
                "{what} sets fields this library version does not know ({}.struct_size {size} > {known})",
                T::NAME
            )));
        }
    }
    let mut value = MaybeUninit::<T>::zeroed();
    // SAFETY: `T` is valid when zeroed (trait contract); we copy at most `known` bytes of
    // a valid caller struct over it.
    unsafe {
        ptr::copy_nonoverlapping(
            ptr.cast::<u8>(),
            value.as_mut_ptr().cast::<u8>(),
            size.min(known),
        );
        Ok(value.assume_init())
    }
}

/// Reads element `index` of an array of versioned structs whose stride is the first
/// element's `struct_size` (every element must carry the same `struct_size`).
///
/// # Safety
/// `base` points to `count > index` elements of `struct_size` bytes each.
pub(crate) unsafe fn read_element<T: Versioned>(
    base: *const T,
    index: usize,
    what: &str,
) -> FfiResult<T> {
    if base.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: forwarded from the caller.
    let stride = unsafe { struct_size(base) };
    check_size::<T>(stride)?;
    if stride % std::mem::align_of::<T>() != 0 {
        return Err(size_error::<T>(stride));
    }
    let element = base
        .cast::<u8>()
        .wrapping_add(stride.wrapping_mul(index))
        .cast::<T>();
    // SAFETY: forwarded from the caller.
    if unsafe { struct_size(element) } != stride {
        return Err(FfiError::invalid(format!(
            "{what}[{index}].struct_size differs from {what}[0].struct_size"
        )));
    }
    // SAFETY: forwarded from the caller.
    unsafe { read(element, what) }
}

/// Writes a versioned output struct into the caller's `out` (see the module rule).
///
/// # Safety
/// `out` is NULL or valid for writes of its `struct_size` bytes.
pub(crate) unsafe fn write<T: Versioned>(out: *mut T, value: T, what: &str) -> FfiResult<()> {
    if out.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: not NULL; the caller's contract covers `struct_size` bytes.
    let size = unsafe { struct_size(out) };
    check_size::<T>(size)?;
    let bytes = size.min(size_of::<T>());
    // SAFETY: the caller's struct has room for `bytes`; `struct_size` (the first field) is
    // rewritten with the caller's own value.
    unsafe {
        ptr::copy_nonoverlapping((&value as *const T).cast::<u8>(), out.cast::<u8>(), bytes);
        out.cast::<usize>().write_unaligned(size);
    }
    Ok(())
}
