//! Scorer handles: one constructor per built-in scorer, and custom scorers.

use std::ffi::c_void;
use std::sync::Arc;

use crate::ffi::callbacks::{
    ctxpack_destroy_fn, ctxpack_score_all_fn, ctxpack_score_item_fn, required, CustomScorer,
    ScoreFn, UserData,
};
use crate::ffi::enums::{ctxpack_clock_kind, ctxpack_decay_curve_kind, enum_arg};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiResult};
use crate::ffi::strings::{array, ctxpack_str, to_str};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::model::ContextKind;
use crate::scorer::{
    Clock, CompositeScorer, DecayCurve, DecayScorer, FixedClock, FrequencyScorer, KindScorer,
    MetadataKeyScorer, MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer,
    ScaledScorer, Scorer, SystemClock, TagScorer,
};

/// A scorer. Immutable and reference-counted: composites, scaled scorers and pipelines
/// built from it keep their own reference, so the caller may free its handle at any time.
pub struct ctxpack_scorer {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_scorer {
    type Value = Arc<dyn Scorer>;
    const TAG: u32 = u32::from_be_bytes(*b"CPSC");
    const NAME: &'static str = "ctxpack_scorer";
}

/// Default `null_timestamp_score` of a decay scorer.
pub const CTXPACK_DECAY_DEFAULT_NULL_TIMESTAMP_SCORE: f64 = 0.5;
/// Default `default_score` of a metadata-trust scorer.
pub const CTXPACK_METADATA_TRUST_DEFAULT_SCORE: f64 = 0.5;

/// A weight for one kind (KindScorer).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_kind_weight {
    /// The kind (ASCII case-insensitive).
    pub kind: ctxpack_str,
    /// Its weight (finite, >= 0).
    pub weight: f64,
}

/// A weight for one tag (TagScorer).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_tag_weight {
    /// The tag (case-sensitive).
    pub tag: ctxpack_str,
    /// Its weight (finite, >= 0).
    pub weight: f64,
}

/// A child of a composite scorer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_composite_child {
    /// The child scorer (the composite keeps its own reference).
    pub scorer: *const ctxpack_scorer,
    /// Its raw weight (finite, > 0); weights are normalised by their sum.
    pub weight: f64,
}

/// One step of a Step decay curve.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_decay_window {
    /// Upper bound of the age, exclusive, in nanoseconds (> 0).
    pub max_age_ns: i64,
    /// The score for ages below `max_age_ns` (finite).
    pub score: f64,
}

/// Configuration of a decay scorer. Initialise with `CTXPACK_DECAY_CONFIG_INIT` or
/// `ctxpack_decay_config_init` (an exponential curve on the system clock, no values).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_decay_config {
    /// `sizeof(ctxpack_decay_config)`.
    pub struct_size: usize,
    /// Exponential: the half-life in nanoseconds (> 0).
    pub half_life_ns: i64,
    /// Window: the window length in nanoseconds (> 0).
    pub max_age_ns: i64,
    /// Step: the windows, youngest first.
    pub windows: *const ctxpack_decay_window,
    /// Step: the number of windows (>= 1).
    pub window_count: usize,
    /// Fixed clock: "now" in nanoseconds since the Unix epoch (UTC).
    pub fixed_now_ns: i64,
    /// Score of items without a timestamp, in [0, 1], read when
    /// `has_null_timestamp_score` (else `CTXPACK_DECAY_DEFAULT_NULL_TIMESTAMP_SCORE`).
    pub null_timestamp_score: f64,
    /// The curve, a `ctxpack_decay_curve_kind` value.
    pub curve: i32,
    /// The clock, a `ctxpack_clock_kind` value.
    pub clock: i32,
    /// 1: `null_timestamp_score` is set (0 or 1).
    pub has_null_timestamp_score: u8,
    /// Must be zero.
    pub reserved: [u8; 7],
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
unsafe impl Versioned for ctxpack_decay_config {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_decay_config>();
    const NAME: &'static str = "ctxpack_decay_config";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_decay_config) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_decay_config x = CTXPACK_DECAY_CONFIG_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_decay_config_init(
    out: *mut ctxpack_decay_config,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Borrows a scorer handle and clones its reference.
///
/// # Safety
/// `scorer` is NULL or a live handle.
unsafe fn scorer_ref(scorer: *const ctxpack_scorer, what: &str) -> FfiResult<Arc<dyn Scorer>> {
    // SAFETY: forwarded from the caller.
    unsafe { handles::borrow(scorer, what).cloned() }
}

/// KindScorer with the default weights (SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6,
/// Document 0.4, Message 0.2).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_kind(
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(KindScorer::new())))
}

/// KindScorer with a custom weight table replacing the defaults.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_kind_weights(
    weights: *const ctxpack_kind_weight,
    count: usize,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `weights` is valid for `count` elements (the caller's contract).
    handles::create(out, out_error, || unsafe {
        let table = array(weights, count, "weights")?
            .iter()
            .enumerate()
            .map(|(i, w)| {
                Ok((
                    ContextKind::new(to_str(&w.kind, &format!("weights[{i}].kind"))?)?,
                    w.weight,
                ))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(Arc::new(KindScorer::with_weights(table)?))
    })
}

/// TagScorer from (tag, weight) pairs.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_tag(
    weights: *const ctxpack_tag_weight,
    count: usize,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `weights` is valid for `count` elements (the caller's contract).
    handles::create(out, out_error, || unsafe {
        let table = array(weights, count, "weights")?
            .iter()
            .enumerate()
            .map(|(i, w)| {
                Ok((
                    to_str(&w.tag, &format!("weights[{i}].tag"))?.to_string(),
                    w.weight,
                ))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(Arc::new(TagScorer::new(table)?))
    })
}

/// CompositeScorer: the weighted sum of its children's scores. Each child keeps a
/// reference; the caller still frees its own child handles.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_composite(
    children: *const ctxpack_composite_child,
    count: usize,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `children` is valid for `count` elements, each naming a live scorer.
    handles::create(out, out_error, || unsafe {
        let children = array(children, count, "children")?
            .iter()
            .enumerate()
            .map(|(i, c)| {
                Ok((
                    scorer_ref(c.scorer, &format!("children[{i}].scorer"))?,
                    c.weight,
                ))
            })
            .collect::<FfiResult<Vec<_>>>()?;
        Ok(Arc::new(CompositeScorer::new(children)?))
    })
}

/// ScaledScorer: min-max normalisation of `inner` (which it keeps a reference to).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_scaled(
    inner: *const ctxpack_scorer,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `inner` is NULL or a live handle.
    handles::create(out, out_error, || {
        Ok(Arc::new(ScaledScorer::new(unsafe {
            scorer_ref(inner, "inner")
        }?)))
    })
}

/// DecayScorer: freshness by age against a clock (see `ctxpack_decay_config`).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_decay(
    config: *const ctxpack_decay_config,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `config` is NULL or valid, and its `windows` valid for `window_count`.
    handles::create(out, out_error, || unsafe {
        let c = versioned::read(config, "config")?;
        let curve = match enum_arg::<ctxpack_decay_curve_kind>(c.curve, "config.curve")? {
            ctxpack_decay_curve_kind::Exponential => DecayCurve::Exponential {
                half_life_ns: c.half_life_ns,
            },
            ctxpack_decay_curve_kind::Window => DecayCurve::Window {
                max_age_ns: c.max_age_ns,
            },
            ctxpack_decay_curve_kind::Step => DecayCurve::Step {
                windows: array(c.windows, c.window_count, "config.windows")?
                    .iter()
                    .map(|w| (w.max_age_ns, w.score))
                    .collect(),
            },
        };
        let clock: Arc<dyn Clock> = match enum_arg::<ctxpack_clock_kind>(c.clock, "config.clock")? {
            ctxpack_clock_kind::System => Arc::new(SystemClock),
            ctxpack_clock_kind::Fixed => Arc::new(FixedClock(c.fixed_now_ns)),
        };
        let has_null_score = flag(
            c.has_null_timestamp_score,
            "config.has_null_timestamp_score",
        )?;
        reserved(&c.reserved, "config.reserved")?;
        let null_score = if has_null_score {
            c.null_timestamp_score
        } else {
            CTXPACK_DECAY_DEFAULT_NULL_TIMESTAMP_SCORE
        };
        Ok(Arc::new(DecayScorer::new(clock, curve, null_score)?))
    })
}

/// MetadataTrustScorer: the `cupel:trust` metadata value, clamped to [0, 1];
/// `default_score` (in [0, 1]; conventionally `CTXPACK_METADATA_TRUST_DEFAULT_SCORE`)
/// when the key is absent or unusable.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_metadata_trust(
    default_score: f64,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        Ok(Arc::new(MetadataTrustScorer::new(default_score)?))
    })
}

/// MetadataKeyScorer: `boost` (finite, > 0) when `metadata[key] == value`, else 1.0.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_metadata_key(
    key: ctxpack_str,
    value: ctxpack_str,
    boost: f64,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: the strings are valid for their lengths (the caller's contract).
    handles::create(out, out_error, || unsafe {
        Ok(Arc::new(MetadataKeyScorer::new(
            to_str(&key, "key")?,
            to_str(&value, "value")?,
            boost,
        )?))
    })
}

/// RecencyScorer: rank by timestamp.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_recency(
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(RecencyScorer::new())))
}

/// PriorityScorer: rank by priority.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_priority(
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(PriorityScorer::new())))
}

/// FrequencyScorer: share of peers sharing a tag.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_frequency(
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(FrequencyScorer::new())))
}

/// ReflexiveScorer: the future-relevance hint, clamped to [0, 1].
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_reflexive(
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || Ok(Arc::new(ReflexiveScorer::new())))
}

/// A custom scorer that scores all items of a run in one call. On success the scorer
/// owns `user_data` and calls `destroy` (may be NULL) once when its last reference is
/// dropped; on failure the caller keeps it. See `ctxpack_score_all_fn` and the threading
/// rule of custom components in docs/ffi.md.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_custom_batch(
    score_all: ctxpack_score_all_fn,
    user_data: *mut c_void,
    destroy: ctxpack_destroy_fn,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        let score = ScoreFn::Batch(required(score_all, "score_all")?);
        Ok(Arc::new(CustomScorer {
            score,
            user: UserData::new(user_data, destroy),
        }))
    })
}

/// A custom scorer called once per item. Ownership of `user_data` as in
/// `ctxpack_scorer_new_custom_batch`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_new_custom_item(
    score_item: ctxpack_score_item_fn,
    user_data: *mut c_void,
    destroy: ctxpack_destroy_fn,
    out: *mut *mut ctxpack_scorer,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        let score = ScoreFn::PerItem(required(score_item, "score_item")?);
        Ok(Arc::new(CustomScorer {
            score,
            user: UserData::new(user_data, destroy),
        }))
    })
}

/// Gives the caller one more reference to `scorer` and returns the same pointer: each
/// reference is released by its own `ctxpack_scorer_free`, and the scorer is freed (a use is
/// then reported as a freed handle) when the last one is. NULL when `scorer` is NULL, not a
/// `ctxpack_scorer` or already freed. Thread-safe: references may be taken and released on
/// any threads at once, while the scorer is in use (a caller must itself hold a reference
/// for the whole call, as for any function taking the handle).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_retain(scorer: *mut ctxpack_scorer) -> *mut ctxpack_scorer {
    // SAFETY: `scorer` is NULL or a handle the caller holds.
    unsafe { handles::retain_caller(scorer) }
}

/// Releases one caller reference to a scorer (see `ctxpack_scorer_retain`). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_scorer_free(scorer: *mut ctxpack_scorer) {
    // SAFETY: `scorer` is NULL or a handle.
    unsafe { handles::release(scorer) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_core() {
        assert_eq!(
            CTXPACK_DECAY_DEFAULT_NULL_TIMESTAMP_SCORE,
            DecayScorer::DEFAULT_NULL_TIMESTAMP_SCORE
        );
        assert_eq!(
            CTXPACK_METADATA_TRUST_DEFAULT_SCORE,
            MetadataTrustScorer::DEFAULT_SCORE
        );
    }
}
