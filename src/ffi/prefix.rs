//! Prefix states across turns (`docs/prefix-cache.md`): the prefix run, its reuse report
//! and the state handle with its two serialised forms.

use std::ptr;

use crate::ffi::budget::ctxpack_budget;
use crate::ffi::enums::{enum_arg, CEnum};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::items::{ctxpack_items, snapshot};
use crate::ffi::pipeline::{ctxpack_pipeline, ctxpack_run_options, RunSetup};
use crate::ffi::policy::ctxpack_string;
use crate::ffi::result::{ctxpack_result, ResultData, RunContext};
use crate::ffi::status::{ctxpack_error, ctxpack_status, guard, FfiError, FfiResult};
use crate::ffi::strings::{self, ctxpack_str, OwnedCString};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::prefix::{
    CacheRule, DifferenceReason, PrefixMode, PrefixOptions, PrefixState, ReuseReport, TurnOutcome,
    DEFAULT_LOW_WATERMARK, DEFAULT_MAX_VALUE_LOSS,
};

/// A prefix state: what a turn placed, in order, for the next turn to compare with or to
/// keep (`docs/prefix-cache.md`). Immutable, so it may be read from many threads and
/// passed to many runs; freed with `ctxpack_prefix_state_free`.
pub struct ctxpack_prefix_state {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_prefix_state {
    type Value = PrefixState;
    const TAG: u32 = u32::from_be_bytes(*b"CPPX");
    const NAME: &'static str = "ctxpack_prefix_state";
}

/// What a prefix run does with the previous turn's window.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_prefix_mode {
    /// Keep the longest previous prefix that is still present and still fits, in the same
    /// order, and select the rest after it; re-anchor when that gives up too much value
    /// (the default).
    Hold = 0,
    /// Select as usual and report how much of the previous window survives.
    Measure = 1,
}

/// How a prefix run's turn went (`ctxpack_prefix_reuse.outcome`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_turn_outcome {
    /// Measure mode: the usual selection, measured against the previous window.
    Measured = 0,
    /// Hold mode: the previous prefix was kept and the rest selected after it.
    Held = 1,
    /// Hold mode without a previous state (or with an empty one): a fresh selection to
    /// the low watermark.
    Anchored = 2,
    /// Hold mode: keeping the prefix would have given up more than the allowed share of
    /// value, so the turn selected afresh to the low watermark.
    Reanchored = 3,
}

/// Why the new window stops matching the previous one
/// (`ctxpack_prefix_reuse.difference_reason`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_difference_reason {
    /// The previous item is in no item of the input any more.
    Removed = 0,
    /// The previous item's content (or tokens) changed in place.
    Edited = 1,
    /// The previous item is still placed, later: an item the previous window placed after
    /// it now comes first.
    Reordered = 2,
    /// The previous item is still placed, later: an item the previous window did not have
    /// now comes first.
    Inserted = 3,
    /// The previous item is still in the input but the budget left it out.
    Budget = 4,
    /// The previous item's group gained or lost members.
    GroupChanged = 5,
}

impl CEnum for ctxpack_prefix_mode {
    const ALL: &'static [Self] = &[Self::Hold, Self::Measure];
    const NAME: &'static str = "ctxpack_prefix_mode";
    fn value(self) -> i32 {
        self as i32
    }
}

impl From<TurnOutcome> for ctxpack_turn_outcome {
    fn from(o: TurnOutcome) -> Self {
        match o {
            TurnOutcome::Measured => Self::Measured,
            TurnOutcome::Held => Self::Held,
            TurnOutcome::Anchored => Self::Anchored,
            TurnOutcome::Reanchored => Self::Reanchored,
        }
    }
}

impl From<DifferenceReason> for ctxpack_difference_reason {
    fn from(r: DifferenceReason) -> Self {
        match r {
            DifferenceReason::Removed => Self::Removed,
            DifferenceReason::Edited => Self::Edited,
            DifferenceReason::Reordered => Self::Reordered,
            DifferenceReason::Inserted => Self::Inserted,
            DifferenceReason::Budget => Self::Budget,
            DifferenceReason::GroupChanged => Self::GroupChanged,
        }
    }
}

/// Options of `ctxpack_pipeline_run_prefix`. Initialise with `CTXPACK_PREFIX_OPTIONS_INIT`
/// or `ctxpack_prefix_options_init`: Hold, no conversation key, no caching rule, the
/// default thresholds. Passing NULL instead means the same.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_prefix_options {
    /// `sizeof(ctxpack_prefix_options)`.
    pub struct_size: usize,
    /// A `ctxpack_prefix_mode` value (0 hold, 1 measure).
    pub mode: i32,
    /// 0: the default thresholds (`max_value_loss` 0.05, `low_watermark` 0.8) and the two
    /// fields below are ignored; 1: use the two fields below.
    pub custom_thresholds: u8,
    /// Must be zero.
    pub reserved: [u8; 3],
    /// Hold: the largest share of a fresh selection's value a turn may give up, in [0, 1]
    /// (read when `custom_thresholds` is 1).
    pub max_value_loss: f64,
    /// Hold: an anchor selects to at least this share of the budget's target, in (0, 1]
    /// (read when `custom_thresholds` is 1).
    pub low_watermark: f64,
    /// A key naming the conversation: any bytes (a conversation id), empty for none. Its
    /// hash is stored in the state; a previous state made with another key, or with a
    /// key when none is given (and the other way round), is `CTXPACK_INVALID_STATE`.
    pub conversation: ctxpack_str,
    /// The provider's caching rule for `cached_tokens`: empty or `none`, `openai`,
    /// `anthropic` or `anthropic:MIN`, `vllm` (16-token blocks) or `blocks:N`; anything
    /// else is `CTXPACK_INVALID_ARGUMENT`.
    pub cache_rule: ctxpack_str,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (empty strings).
unsafe impl Versioned for ctxpack_prefix_options {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_prefix_options>();
    const NAME: &'static str = "ctxpack_prefix_options";
}

/// The reuse report of a prefix run: how much of the previous window the new one starts
/// with, aligned to the caching rule, and what keeping it gave up. Initialise with
/// `CTXPACK_PREFIX_REUSE_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_prefix_reuse {
    /// `sizeof(ctxpack_prefix_reuse)`, set by the caller.
    pub struct_size: usize,
    /// The run's `ctxpack_prefix_mode`.
    pub mode: i32,
    /// A `ctxpack_turn_outcome` value.
    pub outcome: i32,
    /// The turn number (1 for the first turn of a state chain).
    pub turn: u64,
    /// Turns since the latest anchor (0 on an anchor turn).
    pub turns_since_anchor: u64,
    /// Items of the previous window (0 without a previous state).
    pub previous_entries: usize,
    /// Tokens of the previous window.
    pub previous_tokens: i64,
    /// Items of the new window.
    pub window_entries: usize,
    /// Tokens of the new window.
    pub window_tokens: i64,
    /// Items the new window starts with that are the previous window's first items, in
    /// the same order.
    pub kept_entries: usize,
    /// Their tokens.
    pub kept_tokens: i64,
    /// `kept_tokens` under the caching rule: what a provider cache would serve.
    pub cached_tokens: i64,
    /// The token target of the anchor the window appends to (the target in Measure mode).
    pub anchor_target: i64,
    /// The value of a fresh selection at the full target (unpinned units' values).
    pub fresh_value: f64,
    /// The value of the window returned, counted the same way.
    pub value: f64,
    /// `fresh_value - value` (negative when a greedy fresh selection is not optimal).
    pub value_given_up: f64,
    /// 1 when the windows differ (the fields below are set), 0 when the previous window is
    /// a prefix of the new one or there was none.
    pub has_difference: u8,
    /// Must be zero; set to zero.
    pub reserved: [u8; 3],
    /// A `ctxpack_difference_reason` value (0 when `has_difference` is 0).
    pub difference_reason: i32,
    /// The index, in both windows, of the first differing item (= `kept_entries`).
    pub difference_index: usize,
    /// The input position of the item the new window has there, or `SIZE_MAX` when the
    /// new window ends there.
    pub difference_item: usize,
    /// The input position, in the previous turn, of the previous window's item there.
    pub difference_previous_position: u32,
    /// Set to zero.
    pub reserved2: [u8; 4],
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
unsafe impl Versioned for ctxpack_prefix_reuse {
    const V1_SIZE: usize = std::mem::size_of::<ctxpack_prefix_reuse>();
    const NAME: &'static str = "ctxpack_prefix_reuse";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_prefix_options) == size`:
/// every byte zero and `struct_size = size`. (C and C++ can write
/// `ctxpack_prefix_options x = CTXPACK_PREFIX_OPTIONS_INIT;` instead.)
/// `CTXPACK_INVALID_ARGUMENT` when `size` is below the first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_options_init(
    out: *mut ctxpack_prefix_options,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_prefix_reuse) == size`:
/// every byte zero and `struct_size = size`. (C and C++ can write
/// `ctxpack_prefix_reuse x = CTXPACK_PREFIX_REUSE_INIT;` instead.)
/// `CTXPACK_INVALID_ARGUMENT` when `size` is below the first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_reuse_init(
    out: *mut ctxpack_prefix_reuse,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Runs the pipeline with a prefix state (`docs/prefix-cache.md`): as
/// `ctxpack_pipeline_run`, and with `previous` (the previous turn's state, NULL on a
/// first turn) compared (Measure) or kept (Hold). Stores the result in `*out` — its
/// reuse report is read with `ctxpack_result_prefix_reuse` — and this turn's state, for
/// the next turn, in `*out_state`; both are NULL on failure. `run_options` and
/// `prefix_options` may be NULL (defaults). A `previous` state of another conversation is
/// `CTXPACK_INVALID_STATE`; thresholds out of range or an unknown caching rule are
/// `CTXPACK_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_run_prefix(
    pipeline: *const ctxpack_pipeline,
    items: *const ctxpack_items,
    budget: *const ctxpack_budget,
    run_options: *const ctxpack_run_options,
    prefix_options: *const ctxpack_prefix_options,
    previous: *const ctxpack_prefix_state,
    out: *mut *mut ctxpack_result,
    out_state: *mut *mut ctxpack_prefix_state,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: the out-parameters are NULL or writable; handles are NULL or live; the
    // option structs are NULL or valid for their `struct_size`.
    guard(out_error, || unsafe {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        if out_state.is_null() {
            return Err(FfiError::null("out_state"));
        }
        out.write(ptr::null_mut());
        out_state.write(ptr::null_mut());
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let items = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        let previous = if previous.is_null() {
            None
        } else {
            Some(handles::retain(previous, "previous")?)
        };
        let setup = RunSetup::read(run_options, "run_options")?;
        let o = if prefix_options.is_null() {
            None
        } else {
            Some(versioned::read(prefix_options, "prefix_options")?)
        };
        let mut options = PrefixOptions::new(PrefixMode::Hold);
        if let Some(o) = &o {
            options = prefix_options_from(o)?;
        }
        options.previous = previous.as_deref();
        let _cancel_scope = setup.cancel().map(crate::cancel::Scope::enter);
        let run = pipeline.run_prefix(&items, &budget, &setup.options(), &options)?;
        let traced_items = run.selection.report.is_some().then(|| items.clone());
        let context = RunContext::of(&pipeline, &budget);
        let mut data = ResultData::new(run.selection, traced_items, context);
        data.reuse = Some(run.reuse);
        out.write(handles::into_raw::<ctxpack_result>(data));
        out_state.write(handles::into_raw::<ctxpack_prefix_state>(run.state));
        Ok(())
    })
}

/// The core's options from the caller's struct (without the previous state).
///
/// # Safety
/// The struct's strings are valid for their lengths.
pub(crate) unsafe fn prefix_options_from(
    o: &ctxpack_prefix_options,
) -> FfiResult<PrefixOptions<'_>> {
    let mode = match enum_arg::<ctxpack_prefix_mode>(o.mode, "prefix_options.mode")? {
        ctxpack_prefix_mode::Hold => PrefixMode::Hold,
        ctxpack_prefix_mode::Measure => PrefixMode::Measure,
    };
    let custom = flag(o.custom_thresholds, "prefix_options.custom_thresholds")?;
    reserved(&o.reserved, "prefix_options.reserved")?;
    let mut options = PrefixOptions::new(mode);
    if custom {
        options.max_value_loss = o.max_value_loss;
        options.low_watermark = o.low_watermark;
    } else {
        options.max_value_loss = DEFAULT_MAX_VALUE_LOSS;
        options.low_watermark = DEFAULT_LOW_WATERMARK;
    }
    // SAFETY: forwarded from the caller.
    let key = unsafe {
        strings::array(
            o.conversation.ptr.cast::<u8>(),
            o.conversation.len,
            "prefix_options.conversation",
        )
    }?;
    options.conversation = (!key.is_empty()).then_some(key);
    // SAFETY: forwarded from the caller.
    let rule = unsafe { strings::to_str(&o.cache_rule, "prefix_options.cache_rule") }?;
    options.cache = if rule.is_empty() {
        CacheRule::None
    } else {
        CacheRule::from_name(rule).map_err(|_| {
            FfiError::invalid(format!(
                "prefix_options.cache_rule is '{rule}', not none, openai, anthropic, \
                 anthropic:MIN, vllm or blocks:N"
            ))
        })?
    };
    Ok(options)
}

/// The reuse report of a result of `ctxpack_pipeline_run_prefix`; `CTXPACK_NO_REPORT`
/// for a result of another call. `out` is the caller's struct (its `struct_size` set,
/// e.g. by its `_INIT` macro); a wrong `struct_size` fails with a message in `out_error`
/// (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_prefix_reuse(
    result: *const ctxpack_result,
    out: *mut ctxpack_prefix_reuse,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::access_into(result, "result", out_error, |r| {
        let value = reuse_struct(reuse_of(r)?);
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// The caller's form of a reuse report.
pub(crate) fn reuse_struct(reuse: &ReuseReport) -> ctxpack_prefix_reuse {
    let d = reuse.first_difference;
    ctxpack_prefix_reuse {
        struct_size: std::mem::size_of::<ctxpack_prefix_reuse>(),
        mode: match reuse.mode {
            PrefixMode::Hold => ctxpack_prefix_mode::Hold as i32,
            PrefixMode::Measure => ctxpack_prefix_mode::Measure as i32,
        },
        outcome: ctxpack_turn_outcome::from(reuse.outcome) as i32,
        turn: reuse.turn,
        turns_since_anchor: reuse.turns_since_anchor,
        previous_entries: reuse.previous_entries,
        previous_tokens: reuse.previous_tokens,
        window_entries: reuse.window_entries,
        window_tokens: reuse.window_tokens,
        kept_entries: reuse.kept_entries,
        kept_tokens: reuse.kept_tokens,
        cached_tokens: reuse.cached_tokens,
        anchor_target: reuse.anchor_target,
        fresh_value: reuse.fresh_value,
        value: reuse.value,
        value_given_up: reuse.value_given_up,
        has_difference: u8::from(d.is_some()),
        reserved: [0; 3],
        difference_reason: d.map_or(0, |d| ctxpack_difference_reason::from(d.reason) as i32),
        difference_index: d.map_or(0, |d| d.index),
        difference_item: d.and_then(|d| d.item).unwrap_or(usize::MAX),
        difference_previous_position: d.map_or(0, |d| d.previous_position),
        reserved2: [0; 4],
    }
}

/// The reuse report of a result of `ctxpack_pipeline_run_prefix` as JSON (the form of
/// `docs/prefix-cache.md`) in a new `ctxpack_string`; `CTXPACK_NO_REPORT` for a result of
/// another call.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_prefix_reuse_json(
    result: *const ctxpack_result,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `result` is NULL or a live handle.
    handles::create(out, out_error, || {
        let r = unsafe { handles::borrow(result, "result") }?;
        Ok(OwnedCString::new(reuse_of(r)?.to_json()))
    })
}

/// The reuse report of a result, or `CTXPACK_NO_REPORT`.
fn reuse_of(r: &ResultData) -> FfiResult<&ReuseReport> {
    r.reuse.as_ref().ok_or_else(|| {
        FfiError::new(
            ctxpack_status::CTXPACK_NO_REPORT,
            "the result has no reuse report (it did not come from ctxpack_pipeline_run_prefix)",
        )
    })
}

/// Reads a state from its binary form (`len` bytes at `bytes`) into a new handle in
/// `*out` (NULL on failure). Anything but a complete, uncorrupted state of a format
/// version this library reads — truncated, a bit flipped, another magic, a newer
/// version — is `CTXPACK_INVALID_STATE` with the reason in the message.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_from_bytes(
    bytes: *const u8,
    len: usize,
    out: *mut *mut ctxpack_prefix_state,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        // SAFETY: `bytes` is NULL or valid for `len` bytes.
        let bytes = unsafe { strings::array(bytes, len, "bytes") }?;
        Ok(PrefixState::from_bytes(bytes)?)
    })
}

/// Reads a state from its JSON form into a new handle in `*out` (NULL on failure). A
/// malformed document, an unknown or missing member, a checksum that does not match the
/// fields or a newer version is `CTXPACK_INVALID_STATE`, naming the member.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_from_json(
    json: ctxpack_str,
    out: *mut *mut ctxpack_prefix_state,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::create(out, out_error, || {
        // SAFETY: `json` is valid for its length.
        let text = unsafe { strings::to_str(&json, "json") }?;
        Ok(PrefixState::from_json(text)?)
    })
}

/// Writes the binary form of a state. `*out_len` receives its length in bytes. When
/// `buffer` is NULL only the length is written (a query); otherwise the bytes are copied
/// into `buffer` when `capacity` holds them, else nothing is copied and the status is
/// `CTXPACK_OUT_OF_RANGE`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_to_bytes(
    state: *const ctxpack_prefix_state,
    buffer: *mut u8,
    capacity: usize,
    out_len: *mut usize,
) -> ctxpack_status {
    handles::access(state, "state", |s| {
        let bytes = s.to_bytes();
        // SAFETY: `out_len` is NULL or writable.
        unsafe { handles::write_out(out_len, bytes.len(), "out_len") }?;
        if buffer.is_null() {
            return Ok(());
        }
        if capacity < bytes.len() {
            return Err(FfiError::new(
                ctxpack_status::CTXPACK_OUT_OF_RANGE,
                format!(
                    "capacity {capacity} is below the state's {} bytes",
                    bytes.len()
                ),
            ));
        }
        // SAFETY: `buffer` is valid for `capacity` bytes, which hold them.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, bytes.len()) };
        Ok(())
    })
}

/// Writes the JSON form of a state into a new `ctxpack_string`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_json(
    state: *const ctxpack_prefix_state,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `state` is NULL or a live handle.
    handles::create(out, out_error, || {
        let s = unsafe { handles::borrow(state, "state") }?;
        Ok(OwnedCString::new(s.to_json()))
    })
}

/// The turn number of a state (1 for the first turn of a chain), its number of entries
/// (items of its window) and their tokens. Any out-parameter may be NULL.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_info(
    state: *const ctxpack_prefix_state,
    out_turn: *mut u64,
    out_entries: *mut usize,
    out_tokens: *mut i64,
) -> ctxpack_status {
    handles::access(state, "state", |s| {
        // SAFETY: each out-parameter is NULL or writable.
        unsafe {
            if !out_turn.is_null() {
                out_turn.write(s.turn());
            }
            if !out_entries.is_null() {
                out_entries.write(s.entries().len());
            }
            if !out_tokens.is_null() {
                out_tokens.write(s.tokens());
            }
        }
        Ok(())
    })
}

/// Frees a state. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_prefix_state_free(state: *mut ctxpack_prefix_state) {
    // SAFETY: `state` is NULL or a handle.
    unsafe { handles::release(state) }
}
