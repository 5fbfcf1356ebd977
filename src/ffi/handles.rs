//! Opaque handles: a type tag followed by the value, boxed.
//!
//! Every exported handle type (`ctxpack_scorer`, ...) is a zero-sized marker that C only
//! sees behind a pointer. The allocation behind the pointer is a `Handle<V>`: `#[repr(C)]`
//! with the `u32` tag first, so any handle pointer can be checked by reading its first
//! four bytes before it is used as a particular type. A mismatch is
//! `CTXPACK_WRONG_HANDLE_TYPE`, never undefined behaviour. `free` overwrites the tag, so
//! using a freed handle is caught too as long as the memory has not been reused (best
//! effort: a freed handle is still a caller bug).

use std::ptr;

use crate::ffi::status::{ctxpack_status, FfiError, FfiResult};

/// Links an exported opaque marker type to the Rust value its handles hold.
pub(crate) trait HandleType {
    /// What the handle owns.
    type Value;
    /// The tag stored first in every handle of this type (four ASCII bytes).
    const TAG: u32;
    /// The C type name, for messages.
    const NAME: &'static str;
}

/// The tag a handle gets when it is freed.
const FREED_TAG: u32 = u32::from_be_bytes(*b"FREE");

#[repr(C)]
struct Handle<V> {
    tag: u32,
    value: V,
}

/// A handle that lives as long as the process (never freed): laid out as a boxed one, so
/// it is checked by its tag like any other. For library-owned singletons.
#[repr(transparent)]
pub(crate) struct StaticHandle<V>(Handle<V>);

impl<V> StaticHandle<V> {
    /// A static handle of type `K` holding `value`.
    pub(crate) const fn new<K: HandleType<Value = V>>(value: V) -> Self {
        StaticHandle(Handle { tag: K::TAG, value })
    }

    /// The handle pointer C sees.
    pub(crate) fn as_ptr<K: HandleType<Value = V>>(&'static self) -> *const K {
        (&self.0 as *const Handle<V>).cast()
    }
}

/// Boxes `value` into a new handle of type `K`.
pub(crate) fn into_raw<K: HandleType>(value: K::Value) -> *mut K {
    Box::into_raw(Box::new(Handle { tag: K::TAG, value })).cast()
}

/// Checks that `ptr` is a live handle of type `K`.
///
/// # Safety
/// `ptr` is NULL or points to a handle allocation made by this library (of any type).
unsafe fn check<K: HandleType>(ptr: *const K, what: &str) -> FfiResult<*mut Handle<K::Value>> {
    if ptr.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: every handle allocation starts with a `u32` tag (see `Handle`).
    let tag = unsafe { ptr.cast::<u32>().read() };
    if tag == K::TAG {
        return Ok(ptr.cast_mut().cast());
    }
    let found = if tag == FREED_TAG {
        "a freed handle"
    } else {
        "another handle type"
    };
    Err(FfiError::new(
        ctxpack_status::CTXPACK_WRONG_HANDLE_TYPE,
        format!("{what} must be a {} handle, got {found}", K::NAME),
    ))
}

/// Borrows the value of a handle for the duration of the call.
///
/// # Safety
/// As [`check`]; the handle is not freed or mutated while the borrow lives.
pub(crate) unsafe fn borrow<'a, K: HandleType>(
    ptr: *const K,
    what: &str,
) -> FfiResult<&'a K::Value> {
    // SAFETY: `check` verified the tag, so the allocation is a `Handle<K::Value>`.
    unsafe { check(ptr, what).map(|h| &(*h).value) }
}

/// Borrows the value of a handle mutably for the duration of the call.
///
/// # Safety
/// As [`check`]; no other borrow of the handle lives at the same time.
pub(crate) unsafe fn borrow_mut<'a, K: HandleType>(
    ptr: *mut K,
    what: &str,
) -> FfiResult<&'a mut K::Value> {
    // SAFETY: `check` verified the tag, so the allocation is a `Handle<K::Value>`.
    unsafe { check(ptr, what).map(|h| &mut (*h).value) }
}

/// Frees a handle of type `K`. NULL, and a pointer of another handle type, are no-ops.
///
/// # Safety
/// As [`check`]; the handle is not used afterwards.
pub(crate) unsafe fn free<K: HandleType>(ptr: *mut K) {
    // SAFETY: forwarded from the caller.
    if let Ok(handle) = unsafe { check(ptr, "handle") } {
        // SAFETY: the tag matched, so this is a `Box<Handle<K::Value>>` made by `into_raw`.
        unsafe {
            (*handle).tag = FREED_TAG;
            drop(Box::from_raw(handle));
        }
    }
}

/// Stores a new handle built by `make` into `*out`. `*out` is set to NULL first, so it is
/// NULL whenever this fails; `make` does not run when `out` is NULL.
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn new_into<K: HandleType>(
    out: *mut *mut K,
    make: impl FnOnce() -> FfiResult<K::Value>,
) -> FfiResult<()> {
    if out.is_null() {
        return Err(FfiError::null("out"));
    }
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { out.write(ptr::null_mut()) };
    let handle = into_raw::<K>(make()?);
    // SAFETY: as above.
    unsafe { out.write(handle) };
    Ok(())
}

/// Writes `value` into an out-parameter, failing on NULL.
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> FfiResult<()> {
    if out.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: not NULL; writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// The body of every `ctxpack_*_free` function: frees behind the panic boundary.
///
/// # Safety
/// As [`free`].
pub(crate) unsafe fn release<K: HandleType>(ptr: *mut K) {
    let _ = crate::ffi::status::guard(ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        unsafe { free(ptr) };
        Ok(())
    });
}

/// The body of every constructor: behind the shim, stores a new handle built by `make`
/// in `*out` (NULL on failure) and reports failure through `out_error`.
pub(crate) fn create<K: HandleType>(
    out: *mut *mut K,
    out_error: *mut *mut crate::ffi::status::ctxpack_error,
    make: impl FnOnce() -> FfiResult<K::Value>,
) -> ctxpack_status {
    // SAFETY: every exported constructor documents `out` as NULL or writable.
    crate::ffi::status::guard(out_error, || unsafe { new_into(out, make) })
}

/// The body of every accessor (`ctxpack_result_indices`, ...): behind the shim, runs
/// `body` on the value of a live handle of type `K`. Accessors report a status only (no
/// error object).
pub(crate) fn access<K: HandleType>(
    ptr: *const K,
    what: &str,
    body: impl FnOnce(&K::Value) -> FfiResult<()>,
) -> ctxpack_status {
    crate::ffi::status::guard(ptr::null_mut(), || {
        // SAFETY: every accessor documents its handle argument as NULL or a live handle.
        body(unsafe { borrow(ptr, what) }?)
    })
}
