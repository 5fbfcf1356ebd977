//! Opaque handles: a type tag followed by the value, in a reference-counted allocation.
//!
//! Every exported handle type (`ctxpack_scorer`, ...) is a zero-sized marker that C only
//! sees behind a pointer. The allocation behind the pointer is an `Arc<Handle<V>>`
//! (`Arc::into_raw`): `Handle` is `#[repr(C)]` with the `u32` tag first, so any handle
//! pointer can be checked by reading its first four bytes before it is used as a
//! particular type. A mismatch is `CTXPACK_WRONG_HANDLE_TYPE`, never undefined behaviour.
//!
//! References: the caller holds one (the pointer it was given), and `_free` releases it.
//! The `_retain` functions ([`retain_caller`]) give the caller one more reference on the
//! same pointer: a handle counts its caller references apart from the references calls
//! and other handles hold, and each `_free` releases one caller reference. The handle is
//! marked freed only when the last caller reference goes.
//! A call that runs callbacks (a pipeline run, a stage alone, an analytics function)
//! takes its own reference on every handle it uses ([`retain`]) and releases it when it
//! returns, so a callback that frees those handles only drops the caller's reference:
//! the value lives until the call is over, and a custom component's `destroy` runs after
//! the last call using it returned.
//!
//! The `_free` releasing the last caller reference overwrites the tag (`FREE`) before it
//! drops that reference. While
//! another holder keeps the allocation alive, any later use of the pointer is reported as
//! a freed handle, always. Once the last reference is gone the memory is returned to the
//! allocator: the tag sits after the reference counts, where allocators keep their
//! free-list links, so it usually survives and a use is still reported as freed — but
//! memory that has been reused cannot be recognised, and using it is the caller's bug.

use std::ops::Deref;
use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::ffi::status::{ctxpack_status, FfiError, FfiResult};

/// Links an exported opaque marker type to the Rust value its handles hold.
pub(crate) trait HandleType {
    /// What the handle owns.
    type Value;
    /// The tag stored first in every handle of this type (four ASCII bytes).
    const TAG: u32;
    /// The C type name, for messages.
    const NAME: &'static str;
    /// Whether handles of this type are reference-counted allocations made by
    /// [`into_raw`] (every type but the library's static singletons, [`StaticHandle`]).
    const SHARED: bool = true;
}

/// The tag a handle gets when the caller frees it.
const FREED_TAG: u32 = u32::from_be_bytes(*b"FREE");

#[repr(C)]
struct Handle<V> {
    tag: AtomicU32,
    /// The caller references: 1 from the constructor, one more per `_retain`, one less
    /// per `_free`; each is also one strong count of the `Arc`. Zero once freed.
    callers: AtomicUsize,
    value: V,
}

/// A handle that lives as long as the process, for library-owned singletons: laid out
/// like the value behind a shared handle's pointer, so it is checked by its tag like any
/// other. It is not reference-counted, so its type must set [`HandleType::SHARED`] to
/// `false`: [`retain`] and [`free`] then never treat it as an `Arc` (the type has no
/// `_free`, and a call that must hold a handle uses it directly, as it is never freed).
#[repr(transparent)]
pub(crate) struct StaticHandle<V>(Handle<V>);

impl<V> StaticHandle<V> {
    /// A static handle of type `K` holding `value`.
    pub(crate) const fn new<K: HandleType<Value = V>>(value: V) -> Self {
        assert!(!K::SHARED, "a static handle's type must not be shared");
        StaticHandle(Handle {
            tag: AtomicU32::new(K::TAG),
            callers: AtomicUsize::new(1),
            value,
        })
    }

    /// The handle pointer C sees.
    pub(crate) fn as_ptr<K: HandleType<Value = V>>(&'static self) -> *const K {
        (&self.0 as *const Handle<V>).cast()
    }
}

/// Moves `value` into a new handle of type `K` (the caller's reference).
pub(crate) fn into_raw<K: HandleType>(value: K::Value) -> *mut K {
    const { assert!(K::SHARED, "a static handle type has no allocated handles") };
    let handle = Arc::new(Handle {
        tag: AtomicU32::new(K::TAG),
        callers: AtomicUsize::new(1),
        value,
    });
    Arc::into_raw(handle).cast_mut().cast()
}

/// Checks that `ptr` is a live handle of type `K`.
///
/// # Safety
/// `ptr` is NULL or points to a handle allocation made by this library (of any type).
unsafe fn check<K: HandleType>(ptr: *const K, what: &str) -> FfiResult<*const Handle<K::Value>> {
    if ptr.is_null() {
        return Err(FfiError::null(what));
    }
    // SAFETY: every handle allocation starts with an atomic `u32` tag (see `Handle`).
    let tag = unsafe { (*ptr.cast::<AtomicU32>()).load(Ordering::Acquire) };
    if tag == K::TAG {
        return Ok(ptr.cast());
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

/// Borrows the value of a handle for the duration of a call that runs no callback.
///
/// # Safety
/// As [`check`]; the handle is not freed while the borrow lives (no callback runs).
pub(crate) unsafe fn borrow<'a, K: HandleType>(
    ptr: *const K,
    what: &str,
) -> FfiResult<&'a K::Value> {
    // SAFETY: `check` verified the tag, so the allocation is a `Handle<K::Value>`.
    unsafe { check(ptr, what).map(|h| &(*h).value) }
}

/// A reference a call holds on a handle for its whole duration (see [`retain`]).
pub(crate) struct Held<K: HandleType>(Arc<Handle<K::Value>>);

impl<K: HandleType> Deref for Held<K> {
    type Target = K::Value;
    fn deref(&self) -> &K::Value {
        &self.0.value
    }
}

/// The value of a live handle of type `K` to change in place, when the caller's reference
/// is the only reference to it (no `_retain`, no call holding it); `Ok(None)` when other
/// references exist.
///
/// # Safety
/// As [`check`]; the caller's reference stays valid for `'a`, and no other thread uses
/// the handle meanwhile (the caller handed it over to this call).
pub(crate) unsafe fn exclusive<'a, K: HandleType>(
    ptr: *mut K,
    what: &str,
) -> FfiResult<Option<&'a mut K::Value>> {
    const { assert!(K::SHARED, "a static handle is never changed") };
    // SAFETY: `check` verified the tag, so `h` came from `Arc::into_raw` and the caller's
    // reference is still held. The `Arc` rebuilt here stands for that reference and is
    // never dropped.
    unsafe {
        let h = check(ptr.cast_const(), what)?;
        let mut arc = std::mem::ManuallyDrop::new(Arc::from_raw(h));
        let value = Arc::get_mut(&mut arc).map(|handle| ptr::addr_of_mut!(handle.value));
        Ok(value.map(|value| &mut *value))
    }
}

/// Takes a reference on a live handle of type `K`, for a call during which callbacks may
/// free it: the value stays alive until the returned [`Held`] is dropped.
///
/// # Safety
/// As [`check`].
pub(crate) unsafe fn retain<K: HandleType>(ptr: *const K, what: &str) -> FfiResult<Held<K>> {
    const { assert!(K::SHARED, "a static handle is never retained") };
    // SAFETY: `check` verified the tag, so `h` came from `Arc::into_raw` and the caller's
    // reference is still held (the tag is overwritten before it is released).
    unsafe {
        let h = check(ptr, what)?;
        Arc::increment_strong_count(h);
        Ok(Held(Arc::from_raw(h)))
    }
}

/// Gives the caller one more reference on a live handle of type `K` and returns the same
/// pointer; NULL when `ptr` is NULL, of another type or freed (the body of every
/// `ctxpack_*_retain`).
///
/// # Safety
/// As [`check`]; the caller holds a caller reference on `ptr` for the whole call.
pub(crate) unsafe fn retain_caller<K: HandleType>(ptr: *mut K) -> *mut K {
    const { assert!(K::SHARED, "a static handle is never retained") };
    // SAFETY: forwarded from the caller.
    let Ok(handle) = (unsafe { check(ptr, "handle") }) else {
        return ptr::null_mut();
    };
    // SAFETY: the tag matched, so this is a live `Arc<Handle<K::Value>>` from `into_raw`.
    let callers = unsafe { &(*handle).callers };
    // A count that already reached zero belongs to a handle being freed: no new caller.
    if callers
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
            c.checked_add(1).filter(|&n| n > 1)
        })
        .is_err()
    {
        return ptr::null_mut();
    }
    // SAFETY: as above; the caller's reference keeps the strong count above zero.
    unsafe { Arc::increment_strong_count(handle) };
    ptr
}

/// Releases one caller reference to a handle of type `K`. NULL, a pointer of another
/// handle type and a handle already freed are no-ops.
///
/// # Safety
/// As [`check`].
pub(crate) unsafe fn free<K: HandleType>(ptr: *mut K) {
    const { assert!(K::SHARED, "a static handle is never freed") };
    // SAFETY: forwarded from the caller.
    if let Ok(handle) = unsafe { check(ptr, "handle") } {
        // SAFETY: the tag matched, so this is an `Arc<Handle<K::Value>>` from `into_raw`.
        // Each caller reference is one strong count; only a free that takes the caller
        // count down drops one, so a free after the last one (while the value is alive)
        // is a no-op. The last caller reference marks the handle freed first.
        unsafe {
            let callers = &(*handle).callers;
            let Ok(before) =
                callers.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_sub(1))
            else {
                return;
            };
            if before == 1 {
                (*handle).tag.store(FREED_TAG, Ordering::Release);
            }
            drop(Arc::from_raw(handle));
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
/// error object), except those that fill a caller's versioned struct ([`access_into`]).
pub(crate) fn access<K: HandleType>(
    ptr: *const K,
    what: &str,
    body: impl FnOnce(&K::Value) -> FfiResult<()>,
) -> ctxpack_status {
    access_into(ptr, what, ptr::null_mut(), body)
}

/// [`access`] for the accessors that fill a caller's versioned struct: they also take
/// `out_error`, so that a wrong `struct_size` comes with a message.
pub(crate) fn access_into<K: HandleType>(
    ptr: *const K,
    what: &str,
    out_error: *mut *mut crate::ffi::status::ctxpack_error,
    body: impl FnOnce(&K::Value) -> FfiResult<()>,
) -> ctxpack_status {
    crate::ffi::status::guard(out_error, || {
        // SAFETY: every accessor documents its handle argument as NULL or a live handle.
        body(unsafe { borrow(ptr, what) }?)
    })
}
