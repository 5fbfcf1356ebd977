//! Chat requests through the ABI: one call trims an OpenAI Chat Completions or Anthropic
//! Messages request body (JSON in, JSON out) with a pipeline and a budget, and a result
//! handle gives the trimmed body, the kept and dropped message positions, the JSON path of
//! every item the pipeline ran on, the after-run adjustments, and the pipeline's selection
//! (with its report when traced) as an ordinary `ctxpack_result`.

use std::sync::Arc;

use crate::chat::{self, ChatOptions, CountTokens, Overheads, Provider};
use crate::diagnostics::TraceDetail;
use crate::ffi::budget::ctxpack_budget;
use crate::ffi::cancel::ctxpack_cancel_token;
use crate::ffi::enums::{ctxpack_chat_format, ctxpack_trace_detail, enum_arg};
use crate::ffi::handles::{self, HandleType, Held};
use crate::ffi::items::ItemVec;
use crate::ffi::pipeline::ctxpack_pipeline;
use crate::ffi::policy::ctxpack_string;
use crate::ffi::prefix::{
    ctxpack_prefix_options, ctxpack_prefix_reuse, ctxpack_prefix_state, prefix_options_from,
    reuse_struct,
};
use crate::ffi::result::{ctxpack_result, entry, write_array, ResultData, RunContext};
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiError, FfiResult};
use crate::ffi::strings::{ctxpack_str, to_str, OwnedCString};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::model::HeadTail;
use crate::pipeline::Selection;
use crate::prefix::{PrefixState, ReuseReport};
use crate::tokenizer::Encoding;

/// Options of `ctxpack_chat_trim`. Initialise with `CTXPACK_CHAT_OPTIONS_INIT` or
/// `ctxpack_chat_options_init`: every field zero means the defaults, the same as passing
/// NULL (the default encoding, the provider's overheads, the last turn pinned, no report).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_chat_options {
    /// `sizeof(ctxpack_chat_options)`.
    pub struct_size: usize,
    /// The encoding that counts the texts, by name (`"o200k_base"`, `"cl100k_base"`, any
    /// ASCII case). Empty: `o200k_base`, or, in a build without the `tokenizer` feature,
    /// the built-in estimate (docs/chat.md, "Counting tokens"). A name in a build without
    /// the feature is `CTXPACK_UNSUPPORTED`; an unknown name `CTXPACK_INVALID_ARGUMENT`.
    pub encoding: ctxpack_str,
    /// With `has_overheads`: framing tokens every message carries (>= 0).
    pub overhead_per_message: i64,
    /// With `has_overheads`: extra tokens of a message with a `name` (>= 0).
    pub overhead_per_name: i64,
    /// With `has_overheads`: tokens of the request as a whole, the reply priming (>= 0).
    pub overhead_per_request: i64,
    /// With `has_overheads`: the stand-in for one image, audio clip or binary document
    /// (>= 0).
    pub overhead_media: i64,
    /// A `ctxpack_trace_detail` value: STAGE or ITEM records the report, read through
    /// `ctxpack_chat_result_selection` and the `ctxpack_result_report_*` functions.
    pub trace_detail: i32,
    /// 1: do not pin the last turn (by default the last unit of the conversation, and the
    /// user-led unit before it when it does not start with a user message, are pinned).
    pub unpin_last_turn: u8,
    /// 1: use the four `overhead_*` fields instead of the provider's defaults.
    pub has_overheads: u8,
    /// Must be zero.
    pub reserved: [u8; 2],
    /// Prefix state across turns (`docs/prefix-cache.md`): NULL for none (the default);
    /// otherwise the mode, conversation key, thresholds and caching rule, as for
    /// `ctxpack_pipeline_run_prefix`. The result then has a reuse report
    /// (`ctxpack_chat_result_prefix_reuse`) and a state for the next turn
    /// (`ctxpack_chat_result_prefix_state`), both describing the trimmed request.
    pub prefix: *const ctxpack_prefix_options,
    /// The previous turn's state (from `ctxpack_chat_result_prefix_state`, or read back
    /// with `ctxpack_prefix_state_from_bytes`); NULL on a first turn. Set without `prefix`
    /// it is `CTXPACK_INVALID_ARGUMENT`.
    pub previous_state: *const ctxpack_prefix_state,
    /// A token that cancels the trim (`ctxpack_cancel_token`): once it is cancelled, from
    /// any thread, the call returns `CTXPACK_CANCELLED` (before it starts, or at the run's
    /// next check: between stages and inside long loops). NULL: the trim cannot be
    /// cancelled. Added after `previous_state`; zero (NULL) for older callers.
    pub cancel: *const ctxpack_cancel_token,
    /// Shorten long tool outputs instead of only dropping them (docs/chat.md, "Shortening
    /// tool outputs"): when `shorten_head_tokens` or `shorten_tail_tokens` is not 0, every
    /// text of a tool result longer than both together gives its message a cheaper form,
    /// those texts cut to their first `shorten_head_tokens` and last `shorten_tail_tokens`
    /// tokens with a marker between. When the pipeline places that form, the message is
    /// sent with only those strings replaced (`ctxpack_chat_result_shortened` lists it).
    /// Both 0 (the default): off. Not available with `prefix` yet
    /// (`CTXPACK_INVALID_ARGUMENT`). Added after `cancel`, like the three fields after it;
    /// zero for older callers.
    pub shorten_head_tokens: u64,
    /// Tokens kept from the end of a shortened text; see `shorten_head_tokens`.
    pub shorten_tail_tokens: u64,
    /// The quality of a shortened form, in (0, 1]; 0: the share of the message's tokens the
    /// form keeps (the default). Anything else (negative, NaN, above 1) is
    /// `CTXPACK_INVALID_ARGUMENT`.
    pub shorten_quality: f64,
    /// The marker put between head and tail; `{omitted}` in it is replaced by the number
    /// of tokens left out. Empty: `"\n[… {omitted} tokens omitted …]\n"`.
    pub shorten_marker: ctxpack_str,
}

/// The size of the first version of `ctxpack_chat_options`, before the prefix fields.
const CHAT_OPTIONS_V1_SIZE: usize = std::mem::offset_of!(ctxpack_chat_options, prefix);

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (a NULL empty string, NULL
// pointers).
unsafe impl Versioned for ctxpack_chat_options {
    const V1_SIZE: usize = CHAT_OPTIONS_V1_SIZE;
    const NAME: &'static str = "ctxpack_chat_options";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_chat_options) == size`:
/// every byte zero (the defaults) and `struct_size = size`. Fill in the fields after it. (C
/// and C++ can write `ctxpack_chat_options x = CTXPACK_CHAT_OPTIONS_INIT;` instead.)
/// `CTXPACK_INVALID_ARGUMENT` when `size` is below the first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_options_init(
    out: *mut ctxpack_chat_options,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// A trimmed chat request and how it was obtained, from `ctxpack_chat_trim`. Immutable:
/// its accessors may be called from many threads. Every pointer it hands out is owned by
/// it and valid until `ctxpack_chat_result_free`, except the result handles of
/// `ctxpack_chat_result_selection`, which the caller owns.
pub struct ctxpack_chat_result {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_chat_result {
    type Value = ChatResultData;
    const TAG: u32 = u32::from_be_bytes(*b"CPCR");
    const NAME: &'static str = "ctxpack_chat_result";
}

/// One adjustment, with NUL-terminated strings.
struct AdjustmentData {
    paths: Vec<OwnedCString>,
    reason: OwnedCString,
}

/// What a chat result handle holds.
pub(crate) struct ChatResultData {
    json: OwnedCString,
    kept: Vec<usize>,
    dropped: Vec<usize>,
    item_paths: Vec<OwnedCString>,
    adjustments: Vec<AdjustmentData>,
    rule_pins: Vec<AdjustmentData>,
    shortened: Vec<usize>,
    input_tokens: i64,
    tokens: i64,
    selection: Selection,
    /// The run's items, kept when the run was traced (for the report's JSON form).
    items: Option<Arc<ItemVec>>,
    context: RunContext,
    /// With `options.prefix`: the reuse report and the state for the next turn.
    reuse: Option<ReuseReport>,
    state: Option<PrefixState>,
}

/// The head-and-tail form an options struct asks for (`None`: no shortening).
///
/// # Safety
/// `o.shorten_marker` is valid for its length.
unsafe fn shorten_of(o: &ctxpack_chat_options) -> FfiResult<Option<HeadTail>> {
    if o.shorten_head_tokens == 0 && o.shorten_tail_tokens == 0 {
        return Ok(None);
    }
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let mut spec = HeadTail::new(size(o.shorten_head_tokens), size(o.shorten_tail_tokens))?;
    match o.shorten_quality {
        0.0 => {}
        q if q > 0.0 && q <= 1.0 => spec = spec.with_quality(q),
        q => {
            return Err(FfiError::invalid(format!(
                "options.shorten_quality must be in (0, 1], or 0 for the share kept (got {q})"
            )))
        }
    }
    // SAFETY: forwarded from the caller.
    let marker = unsafe { to_str(&o.shorten_marker, "options.shorten_marker") }?;
    if !marker.is_empty() {
        spec = spec.with_marker(marker);
    }
    Ok(Some(spec))
}

/// The overheads an options struct asks for (`None`: the provider's).
fn overheads(o: &ctxpack_chat_options) -> FfiResult<Option<Overheads>> {
    if !flag(o.has_overheads, "options.has_overheads")? {
        return Ok(None);
    }
    let field = |value: i64, name: &str| {
        if value < 0 {
            return Err(FfiError::invalid(format!(
                "options.{name} must be >= 0 (got {value})"
            )));
        }
        Ok(value)
    };
    Ok(Some(Overheads {
        per_message: field(o.overhead_per_message, "overhead_per_message")?,
        per_name: field(o.overhead_per_name, "overhead_per_name")?,
        per_request: field(o.overhead_per_request, "overhead_per_request")?,
        media: field(o.overhead_media, "overhead_media")?,
    }))
}

/// The caller's prefix options of an options struct (a copy), and the previous state
/// retained for the call.
///
/// # Safety
/// `o.prefix` is NULL or valid for its `struct_size`; `o.previous_state` is NULL or a
/// live handle.
unsafe fn prefix_of(
    o: &ctxpack_chat_options,
) -> FfiResult<(
    Option<ctxpack_prefix_options>,
    Option<Held<ctxpack_prefix_state>>,
)> {
    if o.prefix.is_null() {
        if !o.previous_state.is_null() {
            return Err(FfiError::invalid(
                "options.previous_state is set but options.prefix is NULL (a previous state \
                 needs the prefix options of its run)",
            ));
        }
        return Ok((None, None));
    }
    // SAFETY: forwarded from the caller.
    let p = unsafe { versioned::read(o.prefix, "options.prefix") }?;
    let previous = if o.previous_state.is_null() {
        None
    } else {
        // SAFETY: forwarded from the caller.
        Some(unsafe { handles::retain(o.previous_state, "options.previous_state") }?)
    };
    Ok((Some(p), previous))
}

/// Trims a chat request body to `budget` with `pipeline` (any pipeline: a preset from
/// `ctxpack_pipeline_new_preset`, a policy from `ctxpack_pipeline_new_policy_json`, or
/// one built by hand) and stores the outcome in `*out` (NULL on failure).
///
/// `format` is a `ctxpack_chat_format` value; `request` the request body, UTF-8 JSON.
/// `options` may be NULL (the defaults). Each message becomes an item (system prompts
/// pinned), counted with the encoding plus the provider's framing; a tool call and its
/// results are kept or dropped together; the kept messages are written back in
/// conversation order with every other byte of the request unchanged (docs/chat.md).
///
/// Errors: a malformed request, or one that breaks the provider's rules, is
/// `CTXPACK_INVALID_REQUEST` with a message that starts with the JSON path
/// (`invalid request: messages[4].tool_call_id: ...`); a format of another provider's
/// request is one of those too. The pipeline's own errors keep their statuses
/// (`CTXPACK_PINNED_EXCEEDS_BUDGET` when the system prompts and the pinned last turn do
/// not fit, ...). Like `ctxpack_pipeline_run`, the call holds its own references to the
/// pipeline and the budget.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_trim(
    format: i32,
    request: ctxpack_str,
    budget: *const ctxpack_budget,
    pipeline: *const ctxpack_pipeline,
    options: *const ctxpack_chat_options,
    out: *mut *mut ctxpack_chat_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `request` is valid for its length; `options` is
    // NULL or valid for its `struct_size`.
    handles::create(out, out_error, || unsafe {
        let provider = match enum_arg::<ctxpack_chat_format>(format, "format")? {
            ctxpack_chat_format::Openai => Provider::OpenAi,
            ctxpack_chat_format::Anthropic => Provider::Anthropic,
        };
        let json = to_str(&request, "request")?;
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let budget = handles::retain(budget, "budget")?;
        let o = if options.is_null() {
            None
        } else {
            Some(versioned::read(options, "options")?)
        };
        let mut chat_options = ChatOptions::default();
        if let Some(o) = &o {
            reserved(&o.reserved, "options.reserved")?;
            let encoding = to_str(&o.encoding, "options.encoding")?;
            if !encoding.is_empty() {
                let counter: &'static dyn CountTokens = Encoding::by_name(encoding)
                    .map_err(|e| FfiError::from(e).context("options.encoding"))?;
                chat_options = ChatOptions::with_counter(counter);
            }
            chat_options.trace =
                enum_arg::<ctxpack_trace_detail>(o.trace_detail, "options.trace_detail")?.into();
            chat_options.pin_last_turn = !flag(o.unpin_last_turn, "options.unpin_last_turn")?;
            chat_options.overheads = overheads(o)?;
        }
        let (prefix, previous) = match &o {
            Some(o) => prefix_of(o)?,
            None => (None, None),
        };
        if let Some(p) = &prefix {
            let mut p = prefix_options_from(p)?;
            p.previous = previous.as_deref();
            chat_options.prefix = Some(p);
        }
        let cancel = match &o {
            Some(o) if !o.cancel.is_null() => Some(handles::retain(o.cancel, "options.cancel")?),
            _ => None,
        };
        chat_options.cancel = cancel.as_deref();
        let shorten = match &o {
            Some(o) => shorten_of(o)?,
            None => None,
        };
        chat_options.shorten = shorten.as_ref();
        let trimmed = chat::trim(provider, json, &budget, &pipeline, &chat_options)?;
        let traced = !matches!(chat_options.trace, TraceDetail::None);
        let cstrings = |v: Vec<String>| v.into_iter().map(OwnedCString::new).collect();
        let adjustments = |v: Vec<chat::Adjustment>| {
            v.into_iter()
                .map(|a| AdjustmentData {
                    paths: cstrings(a.paths),
                    reason: OwnedCString::new(a.reason),
                })
                .collect()
        };
        Ok(ChatResultData {
            json: OwnedCString::try_new(trimmed.json)?,
            kept: trimmed.kept,
            dropped: trimmed.dropped,
            item_paths: cstrings(trimmed.item_paths),
            adjustments: adjustments(trimmed.adjustments),
            rule_pins: adjustments(trimmed.rule_pins),
            shortened: trimmed.shortened,
            input_tokens: trimmed.input_tokens,
            tokens: trimmed.tokens,
            selection: trimmed.selection,
            items: traced.then(|| Arc::new(ItemVec::from(trimmed.items))),
            context: RunContext::of(&pipeline, &budget),
            reuse: trimmed.reuse,
            state: trimmed.state,
        })
    })
}

/// The trimmed request body (UTF-8 JSON, also NUL-terminated), owned by the chat result.
/// When every message was kept it is byte for byte the request.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_json(
    result: *const ctxpack_chat_result,
    out_json: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_json` is NULL or writable.
        unsafe { handles::write_out(out_json, r.json.as_ctxpack_str(), "out_json") }
    })
}

/// Tokens of the trimmed request, counted as the request was (texts by the encoding, plus
/// the overheads).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_tokens(
    result: *const ctxpack_chat_result,
    out_tokens: *mut i64,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_tokens` is NULL or writable.
        unsafe { handles::write_out(out_tokens, r.tokens, "out_tokens") }
    })
}

/// Tokens of the whole input request, counted the same way.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_input_tokens(
    result: *const ctxpack_chat_result,
    out_tokens: *mut i64,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_tokens` is NULL or writable.
        unsafe { handles::write_out(out_tokens, r.input_tokens, "out_tokens") }
    })
}

/// The positions in the request's `messages` array of the kept messages, ascending
/// (an array owned by the chat result).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_kept(
    result: *const ctxpack_chat_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: the out-parameters are NULL or writable.
        unsafe { write_array(&r.kept, out_ptr, out_len) }
    })
}

/// The positions in the request's `messages` array of the dropped messages, ascending
/// (an array owned by the chat result; empty when everything fits).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_dropped(
    result: *const ctxpack_chat_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: the out-parameters are NULL or writable.
        unsafe { write_array(&r.dropped, out_ptr, out_len) }
    })
}

/// The positions in the request's `messages` array of the kept messages sent shortened
/// (`options.shorten_head_tokens`), ascending (an array owned by the chat result; empty
/// without shortening). Each is also in `ctxpack_chat_result_kept`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_shortened(
    result: *const ctxpack_chat_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: the out-parameters are NULL or writable.
        unsafe { write_array(&r.shortened, out_ptr, out_len) }
    })
}

/// The number of items the pipeline ran on. The indices of the selection and of its
/// report (`ctxpack_result_indices`, `ctxpack_included_entry.index`, ...) are positions
/// in this list; `ctxpack_chat_result_item_path` maps them back to the request.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_item_count(
    result: *const ctxpack_chat_result,
    out_count: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_count` is NULL or writable.
        unsafe { handles::write_out(out_count, r.item_paths.len(), "out_count") }
    })
}

/// The JSON path item `i` stands for (also NUL-terminated, owned by the chat result):
/// `"messages[3]"` for a message, `"system"` for Anthropic's top-level system prompt, `"$"`
/// for the request's own framing and tool definitions. `CTXPACK_OUT_OF_RANGE` past the
/// count.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_item_path(
    result: *const ctxpack_chat_result,
    i: usize,
    out_path: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        let path = entry(&r.item_paths, i, "item")?;
        // SAFETY: `out_path` is NULL or writable.
        unsafe { handles::write_out(out_path, path.as_ctxpack_str(), "out_path") }
    })
}

/// The number of adjustments: units the pipeline selected that were dropped after the
/// run to satisfy a provider rule it does not know (Anthropic's first message and thinking
/// blocks; docs/chat.md). Usually 0.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_adjustment_count(
    result: *const ctxpack_chat_result,
    out_count: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_count` is NULL or writable.
        unsafe { handles::write_out(out_count, r.adjustments.len(), "out_count") }
    })
}

/// Adjustment `i`: why (`*out_reason`, also NUL-terminated) and how many messages it
/// dropped (`*out_path_count`; read their paths with `ctxpack_chat_result_adjustment_path`).
/// `CTXPACK_OUT_OF_RANGE` past the count.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_adjustment(
    result: *const ctxpack_chat_result,
    i: usize,
    out_reason: *mut ctxpack_str,
    out_path_count: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        let a = entry(&r.adjustments, i, "adjustment")?;
        if out_path_count.is_null() {
            return Err(FfiError::null("out_path_count"));
        }
        // SAFETY: the out-parameters are NULL or writable.
        unsafe {
            handles::write_out(out_reason, a.reason.as_ctxpack_str(), "out_reason")?;
            out_path_count.write(a.paths.len());
        }
        Ok(())
    })
}

/// The JSON path (`"messages[0]"`) of message `j` dropped by adjustment `i` (also
/// NUL-terminated, owned by the chat result). `CTXPACK_OUT_OF_RANGE` past either count.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_adjustment_path(
    result: *const ctxpack_chat_result,
    i: usize,
    j: usize,
    out_path: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        let a = entry(&r.adjustments, i, "adjustment")?;
        let path = entry(&a.paths, j, "adjustment path")?;
        // SAFETY: `out_path` is NULL or writable.
        unsafe { handles::write_out(out_path, path.as_ctxpack_str(), "out_path") }
    })
}

/// The number of rule pins: user messages that ctxpack pinned, beyond the system messages
/// and the last turn, for the run whose selection the result holds. When the first run's
/// selection breaks an Anthropic ordering rule (it starts with an assistant message, or a
/// thinking turn would merge into an earlier assistant message), ctxpack also runs the
/// pipeline with a user message that repairs it pinned, and keeps that run when it keeps
/// more of the first run's selection (in tokens) than dropping units (docs/chat.md,
/// "Repairing a selection"). 0 or 1; always 0 for OpenAI requests.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_rule_pin_count(
    result: *const ctxpack_chat_result,
    out_count: *mut usize,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        // SAFETY: `out_count` is NULL or writable.
        unsafe { handles::write_out(out_count, r.rule_pins.len(), "out_count") }
    })
}

/// Rule pin `i`: the JSON path of the pinned message (`*out_path`, `"messages[0]"`) and why
/// (`*out_reason`), both NUL-terminated and owned by the chat result. A rule pin is always
/// one user message. `CTXPACK_OUT_OF_RANGE` past the count.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_rule_pin(
    result: *const ctxpack_chat_result,
    i: usize,
    out_path: *mut ctxpack_str,
    out_reason: *mut ctxpack_str,
) -> ctxpack_status {
    handles::access(result, "result", |r| {
        let pin = entry(&r.rule_pins, i, "rule pin")?;
        let path = entry(&pin.paths, 0, "rule pin path")?;
        if out_reason.is_null() {
            return Err(FfiError::null("out_reason"));
        }
        // SAFETY: the out-parameters are NULL or writable.
        unsafe {
            handles::write_out(out_path, path.as_ctxpack_str(), "out_path")?;
            out_reason.write(pin.reason.as_ctxpack_str());
        }
        Ok(())
    })
}

/// The pipeline's selection as a **new** result handle (the caller frees it with
/// `ctxpack_result_free`; it may outlive the chat result): `ctxpack_result_indices` and
/// the other selection accessors, and, when `options.trace_detail` asked for it, the
/// report through `ctxpack_result_report_*`, `ctxpack_result_report_json` and the report
/// helpers. Its indices are positions in the chat result's item list
/// (`ctxpack_chat_result_item_path`). The messages of a tool call and its results share a
/// group: the report explains an excluded unit's other members with the reason
/// `GroupExcluded`. Adjustments made after the run are not in it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_selection(
    result: *const ctxpack_chat_result,
    out: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `result` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let r = handles::borrow(result, "result")?;
        Ok(ResultData::new(
            r.selection.clone(),
            r.items.clone(),
            r.context.clone(),
        ))
    })
}

/// The reuse report of a trim with `options.prefix` (how much of the previous turn's
/// trimmed request this one starts with, after the provider rules' adjustments);
/// `CTXPACK_NO_REPORT` for a trim without it. `out` is the caller's struct (its
/// `struct_size` set, e.g. by `CTXPACK_PREFIX_REUSE_INIT`); a wrong `struct_size` fails
/// with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_prefix_reuse(
    result: *const ctxpack_chat_result,
    out: *mut ctxpack_prefix_reuse,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    handles::access_into(result, "result", out_error, |r| {
        let value = reuse_struct(r.reuse.as_ref().ok_or_else(no_prefix)?);
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// The reuse report of a trim with `options.prefix` as JSON (the form of
/// `docs/prefix-cache.md`) in a new `ctxpack_string`; `CTXPACK_NO_REPORT` for a trim
/// without it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_prefix_reuse_json(
    result: *const ctxpack_chat_result,
    out: *mut *mut ctxpack_string,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `result` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let r = handles::borrow(result, "result")?;
        Ok(OwnedCString::new(
            r.reuse.as_ref().ok_or_else(no_prefix)?.to_json(),
        ))
    })
}

/// The state of a trim with `options.prefix`, for the next turn's
/// `options.previous_state`, in a new handle in `*out` (NULL on failure; the caller frees
/// it with `ctxpack_prefix_state_free`, and it outlives the chat result);
/// `CTXPACK_NO_REPORT` for a trim without it.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_prefix_state(
    result: *const ctxpack_chat_result,
    out: *mut *mut ctxpack_prefix_state,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: `result` is NULL or a live handle.
    handles::create(out, out_error, || unsafe {
        let r = handles::borrow(result, "result")?;
        r.state.clone().ok_or_else(no_prefix)
    })
}

/// The error of a prefix accessor on a trim without `options.prefix`.
fn no_prefix() -> FfiError {
    FfiError::new(
        ctxpack_status::CTXPACK_NO_REPORT,
        "the chat result has no prefix state (options.prefix was NULL)",
    )
}

/// Frees a chat result (result handles taken from it live on). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_chat_result_free(result: *mut ctxpack_chat_result) {
    // SAFETY: `result` is NULL or a handle.
    unsafe { handles::release(result) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::budget::ctxpack_budget_free;
    use crate::ffi::json::ctxpack_budget_new_json;
    use crate::ffi::policy::ctxpack_pipeline_new_preset;
    use crate::ffi::status::{ctxpack_error_free, ctxpack_error_message};
    use std::ptr;

    fn s(text: &str) -> ctxpack_str {
        ctxpack_str {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    /// Trims `request` (OpenAI) with `options`; the status, and the trimmed tokens or the
    /// error message.
    fn trim(request: &str, options: *const ctxpack_chat_options) -> (ctxpack_status, String) {
        let (mut pipeline, mut budget, mut out, mut err) = (
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        );
        // SAFETY: valid arguments throughout; every handle is freed.
        unsafe {
            ctxpack_pipeline_new_preset(s("chat"), &mut pipeline, ptr::null_mut());
            let json = r#"{"maxTokens": 1000, "targetTokens": 1000}"#;
            ctxpack_budget_new_json(
                s(json),
                ptr::null(),
                &mut budget,
                ptr::null_mut(),
                ptr::null_mut(),
            );
            let status =
                ctxpack_chat_trim(0, s(request), budget, pipeline, options, &mut out, &mut err);
            let text = if status == ctxpack_status::CTXPACK_OK {
                let mut tokens = 0;
                ctxpack_chat_result_tokens(out, &mut tokens);
                tokens.to_string()
            } else {
                ctxpack_error_message(err).to_str_lossy()
            };
            ctxpack_error_free(err);
            ctxpack_chat_result_free(out);
            ctxpack_budget_free(budget);
            crate::ffi::pipeline::ctxpack_pipeline_free(pipeline);
            (status, text)
        }
    }

    const REQUEST: &str = r#"{"messages": [{"role": "user", "content": "abcdefghi"}]}"#;

    /// The default counter is what the Rust API uses (the encoding, or the estimate in a
    /// build without the tokenizer), and a named encoding follows `Encoding::by_name`.
    #[test]
    fn counting_follows_the_rust_defaults() {
        let (status, tokens) = trim(REQUEST, ptr::null());
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        let budget = crate::ContextBudget::new(1000, 1000).unwrap();
        let pipeline = crate::policy::Policy::preset("chat")
            .unwrap()
            .build_pipeline()
            .unwrap();
        let rust = chat::trim_openai(REQUEST, &budget, &pipeline, &ChatOptions::default()).unwrap();
        assert_eq!(tokens, rust.tokens.to_string());

        let mut o = std::mem::MaybeUninit::<ctxpack_chat_options>::zeroed();
        // SAFETY: a writable struct of its own size.
        let mut o = unsafe {
            ctxpack_chat_options_init(o.as_mut_ptr(), std::mem::size_of::<ctxpack_chat_options>());
            o.assume_init()
        };
        o.encoding = s("cl100k_base");
        let (status, message) = trim(REQUEST, &o);
        if cfg!(feature = "tokenizer") {
            assert_eq!(status, ctxpack_status::CTXPACK_OK, "{message}");
        } else {
            assert_eq!(status, ctxpack_status::CTXPACK_UNSUPPORTED);
            assert!(
                message.starts_with("options.encoding: unsupported"),
                "{message}"
            );
            // The default still counts, with the estimate: 9 ASCII bytes are 3 tokens,
            // the role's 4 bytes 2, plus the framing (3 per message, 3 per request).
            assert_eq!(tokens, (3 + 2 + 3 + 3).to_string());
        }
    }
}
