//! The pipeline handle and the run.

use std::ffi::c_void;
use std::ops::Deref;
use std::ptr;
use std::sync::Arc;

use crate::diagnostics::{OverflowEvent, TraceDetail};
use crate::ffi::budget::ctxpack_budget;
use crate::ffi::callbacks::ctxpack_overflow_fn;
use crate::ffi::cancel::ctxpack_cancel_token;
use crate::ffi::columns::{content, read_columns};
use crate::ffi::enums::{
    ctxpack_group_value, ctxpack_overflow_strategy, ctxpack_trace_detail, enum_arg,
};
use crate::ffi::handles::{self, HandleType, Held};
use crate::ffi::items::{ctxpack_item_desc, ctxpack_items, items_from_descs, snapshot, ItemVec};
use crate::ffi::placer::ctxpack_placer;
use crate::ffi::result::{ctxpack_result, ResultData, RunContext};
use crate::ffi::run_memory::RunMemory;
use crate::ffi::scorer::ctxpack_scorer;
use crate::ffi::slicer::ctxpack_slicer;
use crate::ffi::status::{ctxpack_error, ctxpack_status, named, FfiError, FfiResult};
use crate::ffi::versioned::{self, flag, reserved, Versioned};
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::{ColumnarScratch, Pipeline, RunOptions};
use crate::CancelToken;

/// A configured pipeline: scorer, slicer, placer, deduplication, overflow strategy.
/// Immutable (apart from the memory it keeps for its one-shot runs:
/// `ctxpack_pipeline_release_memory`), and safe to run from many threads at once (the
/// callbacks of custom components must then be thread-safe; see docs/ffi.md). A run
/// holds its own reference: freeing the pipeline while it runs (even from one of its
/// callbacks) releases it when the run is over.
pub struct ctxpack_pipeline {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_pipeline {
    type Value = PipelineHandle;
    const TAG: u32 = u32::from_be_bytes(*b"CPPL");
    const NAME: &'static str = "ctxpack_pipeline";
}

/// What a pipeline handle holds: the pipeline, and the memory it keeps for its one-shot
/// runs ([`RunMemory`]).
pub(crate) struct PipelineHandle {
    pipeline: Pipeline,
    run_memory: RunMemory,
}

impl From<Pipeline> for PipelineHandle {
    fn from(pipeline: Pipeline) -> Self {
        Self {
            pipeline,
            run_memory: RunMemory::default(),
        }
    }
}

impl Deref for PipelineHandle {
    type Target = Pipeline;
    fn deref(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// Options of `ctxpack_pipeline_new`. Initialise with `CTXPACK_PIPELINE_OPTIONS_INIT` or
/// `ctxpack_pipeline_options_init` (deduplication off, Throw, group value SUM, pinned
/// items placed by the placer). Passing NULL instead means deduplication on, the Throw
/// strategy and the same group defaults. `group_value` and `pinned_first` were added
/// after the first version: a caller whose `struct_size` ends at `reserved` gets their
/// zero values, which are the behaviour of that version.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_pipeline_options {
    /// `sizeof(ctxpack_pipeline_options)`.
    pub struct_size: usize,
    /// A `ctxpack_overflow_strategy` value (0 throw, 1 truncate, 2 proceed).
    pub overflow_strategy: i32,
    /// 1: remove items whose content is byte-identical to a better-scored one (0 or 1).
    pub deduplication: u8,
    /// 1: select every item in full or not at all, ignoring the items' variants ("drop
    /// instead of degrade"); 0 (the default): an item may be placed as one of its cheaper
    /// variants (docs/variants.md). Matters only when items have variants (0 or 1).
    pub no_variants: u8,
    /// Must be zero.
    pub reserved: [u8; 2],
    /// A `ctxpack_group_value` value: how a group's value is computed from its members'
    /// scores (0 sum, 1 max, 2 mean; docs/groups.md). Matters only when items have group
    /// keys.
    pub group_value: i32,
    /// 1: place the pinned items first, in input order, before everything the placer
    /// orders (a pinned group stays together); 0: the placer places them like any other
    /// item, as the specification says (0 or 1).
    pub pinned_first: u8,
    /// Must be zero.
    pub reserved2: [u8; 3],
}

/// `sizeof` the first version of `ctxpack_pipeline_options`, which ended at `reserved`.
const PIPELINE_OPTIONS_V1_SIZE: usize = std::mem::offset_of!(ctxpack_pipeline_options, group_value);

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
unsafe impl Versioned for ctxpack_pipeline_options {
    const V1_SIZE: usize = PIPELINE_OPTIONS_V1_SIZE;
    const NAME: &'static str = "ctxpack_pipeline_options";
}

/// Options of one run. Initialise with `CTXPACK_RUN_OPTIONS_INIT` or
/// `ctxpack_run_options_init`. Passing NULL instead means no trace and no overflow
/// callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_run_options {
    /// `sizeof(ctxpack_run_options)`.
    pub struct_size: usize,
    /// Called when a Proceed run goes over `target_tokens` (may be NULL).
    pub on_overflow: ctxpack_overflow_fn,
    /// Passed to `on_overflow`; the run does not own it (no destructor is called).
    pub overflow_user_data: *mut c_void,
    /// A `ctxpack_trace_detail` value: NONE (0) records no report; STAGE and ITEM make
    /// the report available through the `ctxpack_result_report_*` functions.
    pub trace_detail: i32,
    /// Must be zero.
    pub reserved: [u8; 4],
    /// A token that cancels the run (`ctxpack_cancel_token`; the run then returns
    /// `CTXPACK_CANCELLED`); NULL: the run cannot be cancelled. Added after version 1:
    /// a caller whose `struct_size` ends before it has no token.
    pub cancel: *const ctxpack_cancel_token,
}

// SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid (None function pointer, NULL
// token).
unsafe impl Versioned for ctxpack_run_options {
    const V1_SIZE: usize = std::mem::offset_of!(ctxpack_run_options, cancel);
    const NAME: &'static str = "ctxpack_run_options";
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_pipeline_options) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_pipeline_options x = CTXPACK_PIPELINE_OPTIONS_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_options_init(
    out: *mut ctxpack_pipeline_options,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_run_options) == size`: every byte
/// zero and `struct_size = size`. Fill in the fields after it. (C and C++ can write
/// `ctxpack_run_options x = CTXPACK_RUN_OPTIONS_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_run_options_init(
    out: *mut ctxpack_run_options,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Creates a pipeline. It keeps its own references to the components, so the caller may
/// free them afterwards. A NULL component is `CTXPACK_PIPELINE_CONFIG` ("scorer is
/// required", checked in the order scorer, slicer, placer); `options` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_new(
    scorer: *const ctxpack_scorer,
    slicer: *const ctxpack_slicer,
    placer: *const ctxpack_placer,
    options: *const ctxpack_pipeline_options,
    out: *mut *mut ctxpack_pipeline,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `options` is NULL or valid.
    handles::create(out, out_error, || unsafe {
        let mut builder = Pipeline::builder();
        if !scorer.is_null() {
            builder = builder.scorer(handles::borrow(scorer, "scorer")?.clone());
        }
        if !slicer.is_null() {
            builder = builder.slicer(handles::borrow(slicer, "slicer")?.clone());
        }
        if !placer.is_null() {
            builder = builder.placer(handles::borrow(placer, "placer")?.clone());
        }
        if !options.is_null() {
            let o = versioned::read(options, "options")?;
            let strategy = enum_arg::<ctxpack_overflow_strategy>(
                o.overflow_strategy,
                "options.overflow_strategy",
            )?;
            let deduplication = flag(o.deduplication, "options.deduplication")?;
            let no_variants = flag(o.no_variants, "options.no_variants")?;
            reserved(&o.reserved, "options.reserved")?;
            let group_value =
                enum_arg::<ctxpack_group_value>(o.group_value, "options.group_value")?;
            let pinned_first = flag(o.pinned_first, "options.pinned_first")?;
            reserved(&o.reserved2, "options.reserved2")?;
            builder = builder
                .deduplication(deduplication)
                .overflow_strategy(strategy.into())
                .use_variants(!no_variants)
                .group_value(group_value.into())
                .pinned_first(pinned_first);
        }
        Ok(builder.build()?.into())
    })
}

/// Runs the pipeline over `items` within `budget` and stores the result in `*out`
/// (NULL on failure). `options` may be NULL. Safe to call concurrently on one pipeline,
/// one item list and one budget. The run holds its own references to the pipeline (and
/// so its components), the budget and the items as they are when it starts: callbacks
/// may free or change any of them.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_run(
    pipeline: *const ctxpack_pipeline,
    items: *const ctxpack_items,
    budget: *const ctxpack_budget,
    options: *const ctxpack_run_options,
    out: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `options` is NULL or valid.
    handles::create(out, out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let items = snapshot(items, "items")?;
        let budget = handles::retain(budget, "budget")?;
        let setup = RunSetup::read(options, "options")?;
        run_to_result(&pipeline, &budget, &setup, items)
    })
}

/// Runs the pipeline once over `count` item descriptors, without an item list, and stores
/// the result in `*out` (NULL on failure): what `ctxpack_items_new`,
/// `ctxpack_items_push_many`, `ctxpack_pipeline_run` and `ctxpack_items_free` do together,
/// for a host that runs once per request. The result and its accessors are exactly those
/// of `ctxpack_pipeline_run` over a list holding the same descriptors; indices are
/// positions in `descs`. Safe to call concurrently on one pipeline and one budget.
///
/// `descs` is read as by `ctxpack_items_push_many` (stride `descs[0].struct_size`, the
/// same checks, an invalid descriptor's message starts with `item <index>:`); it may be
/// NULL when `count` is 0 (an empty run). The handles and `options` are checked first,
/// then the descriptors, then the run starts.
///
/// Caller memory: the descriptors and everything they point to (contents, kinds, sources,
/// tags, metadata, group keys, encodings, variants) must stay valid and unchanged until
/// the library runs host code (a custom component, the overflow callback) or returns,
/// whichever comes first; the library keeps no pointer into them after that, so callbacks
/// may free or reuse them, and the caller may free them as soon as the call returns. The
/// result keeps only what its accessors need: an untraced result holds the selection
/// (indices, scores, reasons, forms, the overflow event) and no copy of the items; a
/// traced one also holds copies of the items, which its report and the report's JSON
/// describe, until `ctxpack_result_free`. The run holds its own references to the
/// pipeline and the budget: callbacks may free them.
///
/// Most pipelines take a faster path that builds no items (docs/ffi.md, "The columnar
/// path"): the same result, the same errors. The pipeline keeps that path's buffers after
/// a run of at most 131 072 descriptors, for its next one-shot run (docs/ffi.md, "A
/// pipeline's run memory"): about 170 bytes per descriptor of the largest such run for an
/// agent pipeline, holding numbers (token counts, timestamps, content hashes, inclusion
/// reasons), never the caller's strings, until `ctxpack_pipeline_release_memory` or the
/// pipeline is freed. Concurrent runs on one pipeline stay safe: a run that finds the
/// buffers in use allocates its own.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_run_descs(
    pipeline: *const ctxpack_pipeline,
    descs: *const ctxpack_item_desc,
    count: usize,
    budget: *const ctxpack_budget,
    options: *const ctxpack_run_options,
    out: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `descs` holds `count` descriptors; `options` is
    // NULL or valid.
    handles::create(out, out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let budget = handles::retain(budget, "budget")?;
        let setup = RunSetup::read(options, "options")?;
        let mut scratch = pipeline.run_memory.lease(count);
        if columnar_run(&pipeline, &budget, &setup, descs, count, &mut scratch).is_some() {
            let context = RunContext::of(&pipeline, &budget);
            return Ok(ResultData::from_window(&mut scratch.stages, context));
        }
        general_run(&pipeline, &budget, &setup, descs, count)
    })
}

/// `ctxpack_pipeline_run_descs`, reusing the memory of an earlier result: for a host that
/// runs once per request and wants no allocation per run. `*result` is NULL or a result
/// this library returned, which the call takes over.
///
/// On success `*result` is the new run's result, to read as any result and to free with
/// `ctxpack_result_free` (once). It is normally that same result, rewritten: the run
/// reuses its memory, and a columnar run (docs/ffi.md, "The columnar path") no larger
/// than earlier runs into it allocates nothing (docs/ffi.md, "Reusing a result"); every
/// pointer an accessor gave for the earlier run (indices, scores, reasons, forms, report,
/// JSON) is then invalid. Should another call still hold the earlier result, it is a new
/// result, and the caller's reference to the earlier one is released, as by
/// `ctxpack_result_free`. A result made or rewritten here keeps the columnar run's memory
/// (about 225 bytes per descriptor of the largest run into it for a typical agent
/// pipeline) until it is freed.
///
/// On failure `*result` is unchanged: still the earlier result (or NULL), readable as
/// before. `result` itself must not be NULL (`CTXPACK_NULL_ARGUMENT`); a `*result` that
/// is not a live result is `CTXPACK_WRONG_HANDLE_TYPE`. `result` and `*result` are
/// checked after the pipeline, the budget and `options`, before the descriptors.
/// Everything else (the descriptors, the caller-memory rule, the errors) is as for
/// `ctxpack_pipeline_run_descs`. Do not use the earlier result from another thread during
/// the call.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_run_descs_into(
    pipeline: *const ctxpack_pipeline,
    descs: *const ctxpack_item_desc,
    count: usize,
    budget: *const ctxpack_budget,
    options: *const ctxpack_run_options,
    result: *mut *mut ctxpack_result,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    // SAFETY: handles are NULL or live; `descs` holds `count` descriptors; `options` is
    // NULL or valid; `result` is NULL or points to NULL or the caller's result.
    crate::ffi::status::guard(out_error, || unsafe {
        let pipeline = handles::retain(pipeline, "pipeline")?;
        let budget = handles::retain(budget, "budget")?;
        let setup = RunSetup::read(options, "options")?;
        if result.is_null() {
            return Err(FfiError::null("result"));
        }
        let earlier = result.read();
        let reused = match earlier.is_null() {
            true => None,
            false => handles::exclusive(earlier, "*result")?,
        };
        let (reused, mut scratch) = match reused {
            Some(data) => {
                let scratch = data.scratch.take().unwrap_or_default();
                (Some(data), scratch)
            }
            None => (None, Box::default()),
        };
        let context = || RunContext::of(&pipeline, &budget);
        let general = match columnar_run(&pipeline, &budget, &setup, descs, count, &mut scratch) {
            Some(()) => None,
            None => Some(general_run(&pipeline, &budget, &setup, descs, count)),
        };
        match (reused, general) {
            // The earlier result rewritten in place; its memory kept (and on failure, its
            // contents too).
            (Some(data), None) => {
                data.refill(&mut scratch.stages, &pipeline, &budget);
                data.scratch = Some(scratch);
                Ok(())
            }
            (Some(data), Some(outcome)) => {
                let kept = outcome.map(|new| *data = new);
                data.scratch = Some(scratch);
                kept
            }
            // A new result; the caller's reference to the earlier one (if any) released.
            (None, outcome) => {
                let mut data = match outcome {
                    None => ResultData::new(scratch.stages.take_selection(), None, context()),
                    Some(outcome) => outcome?,
                };
                data.scratch = Some(scratch);
                let new = handles::into_raw::<ctxpack_result>(data);
                handles::free(earlier);
                result.write(new);
                Ok(())
            }
        }
    })
}

/// The general path of a one-shot run: the descriptors copied into items, then the run.
///
/// # Safety
/// `descs` is NULL or holds `count` descriptors.
unsafe fn general_run(
    pipeline: &Pipeline,
    budget: &ContextBudget,
    setup: &RunSetup,
    descs: *const ctxpack_item_desc,
    count: usize,
) -> FfiResult<ResultData> {
    // SAFETY: forwarded from the caller.
    let items = unsafe { items_from_descs(descs, count) }?;
    // Only a traced result describes the items; an untraced one drops them here.
    run_to_result(pipeline, budget, setup, items)
}

/// The one-shot run over columns read from the descriptors (`ffi/columns.rs`) in
/// `scratch`, whose stages then hold the window, when the options (no trace), the
/// pipeline and every descriptor allow it and the run neither fails, overflows nor is
/// cancelled; `None` sends the call down the general path, which
/// gives the same result or reports the error (a cancelled token: `CTXPACK_CANCELLED`).
///
/// # Safety
/// `descs` is NULL or holds `count` descriptors.
unsafe fn columnar_run(
    pipeline: &Pipeline,
    budget: &ContextBudget,
    setup: &RunSetup,
    descs: *const ctxpack_item_desc,
    count: usize,
    scratch: &mut ColumnarScratch,
) -> Option<()> {
    if setup.trace != TraceDetail::None {
        return None;
    }
    // A cancelled run declines (the general path then reports the cancellation); the
    // columnar run checks the token as the stages do.
    let _scope = setup.cancel().map(crate::cancel::Scope::enter);
    let plan = pipeline.column_plan()?;
    let ColumnarScratch { columns, stages } = scratch;
    // SAFETY: forwarded from the caller; the columns hold no pointer into the caller's
    // memory.
    unsafe { read_columns(&plan, descs, count, columns) }?;
    // SAFETY: as above; the caller's strings are unchanged during the call.
    let content_of = |i: usize| unsafe { content(descs, i) };
    plan.run(columns, content_of, budget, stages)
}

/// Runs `pipeline` over `items` with the caller's options (cancellable when they carry a
/// token) and makes the result: a traced one keeps the items (a list's snapshot is
/// shared, a one-shot run's copies are moved), an untraced one drops them.
fn run_to_result<I>(
    pipeline: &Pipeline,
    budget: &ContextBudget,
    setup: &RunSetup,
    items: I,
) -> FfiResult<ResultData>
where
    I: Deref + Into<Arc<ItemVec>>,
    I::Target: AsRef<[ContextItem]>,
{
    let list = (*items).as_ref();
    let selection = match setup.cancel() {
        None => pipeline.run_with(list, budget, &setup.options())?,
        Some(token) => pipeline.run_cancellable(list, budget, &setup.options(), token)?,
    };
    let traced_items = selection.report.is_some().then(|| items.into());
    Ok(ResultData::new(
        selection,
        traced_items,
        RunContext::of(pipeline, budget),
    ))
}

/// The caller's overflow callback adapted for the core.
type OverflowObserver = Box<dyn Fn(&OverflowEvent)>;

/// A run's options read from the caller's struct: the trace detail and the overflow
/// callback, adapted for the core by [`RunSetup::options`], and the cancellation token.
pub(crate) struct RunSetup {
    trace: TraceDetail,
    callback: Option<OverflowObserver>,
    /// The token of `cancel`, held for the whole run (NULL: none).
    cancel: Option<Held<ctxpack_cancel_token>>,
}

impl RunSetup {
    /// Reads `options` (NULL means the defaults), named `what` in messages.
    ///
    /// # Safety
    /// `options` is NULL or valid for its `struct_size`.
    pub(crate) unsafe fn read(options: *const ctxpack_run_options, what: &str) -> FfiResult<Self> {
        let o = if options.is_null() {
            ctxpack_run_options {
                struct_size: 0,
                on_overflow: None,
                overflow_user_data: ptr::null_mut(),
                trace_detail: 0,
                reserved: [0; 4],
                cancel: ptr::null(),
            }
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { versioned::read(options, what) }?
        };
        named(
            |name| reserved(&o.reserved, name),
            || format!("{what}.reserved"),
        )?;
        let trace: TraceDetail = named(
            |name| enum_arg::<ctxpack_trace_detail>(o.trace_detail, name),
            || format!("{what}.trace_detail"),
        )?
        .into();
        let callback = o
            .on_overflow
            .map(|f| Box::new(overflow_observer(f, o.overflow_user_data)) as OverflowObserver);
        let cancel = if o.cancel.is_null() {
            None
        } else {
            Some(named(
                // SAFETY: the token is NULL or a live handle (the caller's contract).
                |name| unsafe { handles::retain(o.cancel, name) },
                || format!("{what}.cancel"),
            )?)
        };
        Ok(Self {
            trace,
            callback,
            cancel,
        })
    }

    /// The core's run options, borrowing the callback.
    pub(crate) fn options(&self) -> RunOptions<'_> {
        RunOptions {
            trace: self.trace,
            on_overflow: self.callback.as_deref(),
        }
    }

    /// The caller's cancellation token, if the options carry one.
    pub(crate) fn cancel(&self) -> Option<&CancelToken> {
        self.cancel.as_deref()
    }
}

/// Adapts the caller's overflow callback to the core's observer.
fn overflow_observer(
    f: unsafe extern "C" fn(*mut c_void, i64, *const usize, usize),
    user_data: *mut c_void,
) -> impl Fn(&OverflowEvent) {
    move |event| {
        let merged = &event.overflowing_items;
        // SAFETY: the caller's callback; the array lives across the call.
        unsafe {
            f(
                user_data,
                event.tokens_over_budget,
                merged.as_ptr(),
                merged.len(),
            )
        }
    }
}

/// Gives the caller one more reference to `pipeline` and returns the same pointer: each
/// reference is released by its own `ctxpack_pipeline_free`, and the pipeline is freed (a use is
/// then reported as a freed handle) when the last one is. NULL when `pipeline` is NULL, not a
/// `ctxpack_pipeline` or already freed. Thread-safe: references may be taken and released on
/// any threads at once, while the pipeline is in use (a caller must itself hold a reference
/// for the whole call, as for any function taking the handle).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_retain(
    pipeline: *mut ctxpack_pipeline,
) -> *mut ctxpack_pipeline {
    // SAFETY: `pipeline` is NULL or a handle the caller holds.
    unsafe { handles::retain_caller(pipeline) }
}

/// Frees the memory a pipeline keeps for its one-shot runs (see
/// `ctxpack_pipeline_run_descs`); the next such run allocates it again. A run in progress
/// keeps the memory it holds until it returns, and the pipeline then keeps it again.
/// Safe to call at any time from any thread, from a callback too. NULL is
/// `CTXPACK_NULL_ARGUMENT`, a pointer that is not a live pipeline
/// `CTXPACK_WRONG_HANDLE_TYPE`.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_release_memory(
    pipeline: *const ctxpack_pipeline,
) -> ctxpack_status {
    handles::access(pipeline, "pipeline", |pipeline| {
        pipeline.run_memory.release();
        Ok(())
    })
}

/// Releases one caller reference to a pipeline (see `ctxpack_pipeline_retain`); the last
/// one frees it (components it shares with others live on). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pipeline_free(pipeline: *mut ctxpack_pipeline) {
    // SAFETY: `pipeline` is NULL or a handle.
    unsafe { handles::release(pipeline) }
}
