//! Placer handles: both built-ins, and custom placers.

use std::ffi::c_void;
use std::sync::Arc;

use crate::ffi::callbacks::{
    ctxpack_destroy_fn, ctxpack_place_fn, required, CustomPlacer, UserData,
};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status};
use crate::placer::{ChronologicalPlacer, Placer, UShapedPlacer};

/// A placer. Immutable and reference-counted: pipelines built from it keep their own
/// reference, so the caller may free its handle at any time.
pub struct ctxpack_placer {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_placer {
    type Value = Arc<dyn Placer>;
    const TAG: u32 = u32::from_be_bytes(*b"CPPC");
    const NAME: &'static str = "ctxpack_placer";
}

/// ChronologicalPlacer: timestamped items oldest first, then the others; ties by input
/// position.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_new_chronological(
    out: *mut *mut ctxpack_placer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(ChronologicalPlacer::new())))
}

/// UShapedPlacer: the highest scores at both edges, the lowest in the middle.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_new_u_shaped(
    out: *mut *mut ctxpack_placer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(UShapedPlacer::new())))
}

/// A custom placer (see `ctxpack_place_fn`). On success the placer owns `user_data` and
/// calls `destroy` (may be NULL) once when its last reference is dropped; on failure the
/// caller keeps it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_new_custom(
    place: ctxpack_place_fn,
    user_data: *mut c_void,
    destroy: ctxpack_destroy_fn,
    out: *mut *mut ctxpack_placer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        let place = required(place, "place")?;
        Ok(Arc::new(CustomPlacer {
            place,
            user: UserData::new(user_data, destroy),
        }))
    })
}

/// Gives the caller one more reference to `placer` and returns the same pointer: each
/// reference is released by its own `ctxpack_placer_free`, and the placer is freed (a use is
/// then reported as a freed handle) when the last one is. NULL when `placer` is NULL, not a
/// `ctxpack_placer` or already freed. Thread-safe: references may be taken and released on
/// any threads at once, while the placer is in use (a caller must itself hold a reference
/// for the whole call, as for any function taking the handle).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_retain(placer: *mut ctxpack_placer) -> *mut ctxpack_placer {
    // SAFETY: `placer` is NULL or a handle the caller holds.
    unsafe { handles::retain_caller(placer) }
}

/// Releases one caller reference to a placer (see `ctxpack_placer_retain`). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_placer_free(placer: *mut ctxpack_placer) {
    // SAFETY: `placer` is NULL or a handle.
    unsafe { handles::release(placer) }
}
