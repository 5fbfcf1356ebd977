//! The [`Engine`] that drives ctxpack through its C ABI.
//!
//! Every operation goes through the exported `extern "C"` functions of `ctxpack::ffi`,
//! with raw pointers, `ctxpack_str` strings, descriptor structs, status codes and error
//! objects, exactly as a C host calls them: components are built from their
//! configuration with the `ctxpack_*_new_*` constructors, items are pushed as
//! `ctxpack_item_desc` arrays, budgets are built with `ctxpack_budget_new` from a
//! `ctxpack_budget_desc`, and results are read back through the result accessors. Nothing here touches the Rust API.
//! Selected with `CTXPACK_CONFORMANCE_ENGINE=ffi cargo test --test conformance`.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use ctxpack::ffi::*;

use crate::engine::{
    Engine, EngineError, EngineResult, ExcludedRecord, GroupRecord, IncludedRecord, OverflowRecord,
    PipelineResult, ReasonRecord, ReportRecord, SliceResult,
};
use crate::spec::{
    BudgetSpec, Component, CountEntrySpec, CurveSpec, FieldValue, GroupValueSpec, ItemSpec,
    OverflowSpec, PipelineSpec, PlacerSpec, Scarcity, ScoredItemSpec, ScorerSpec, ShortfallSpec,
    SlicerSpec,
};

/// Runs vectors through the C ABI.
#[derive(Debug, Default, Clone, Copy)]
pub struct FfiEngine;

/// A handle owned by the engine, freed on drop with its `ctxpack_*_free` function.
struct Owned<T> {
    ptr: *mut T,
    free: unsafe extern "C" fn(*mut T),
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from a successful constructor and is freed once.
        unsafe { (self.free)(self.ptr) }
    }
}

/// Turns a status (and the error object of the call) into a message.
fn check(status: ctxpack_status, error: *mut ctxpack_error) -> Result<(), String> {
    if status == ctxpack_status::CTXPACK_OK {
        return Ok(());
    }
    // SAFETY: `error` is NULL or the error object the failed call stored; read, then freed.
    unsafe {
        let name = std::ffi::CStr::from_ptr(ctxpack_status_name(status as i32));
        let m = ctxpack_error_message(error);
        let message =
            String::from_utf8_lossy(std::slice::from_raw_parts(m.ptr.cast::<u8>(), m.len));
        let text = format!("{}: {message}", name.to_string_lossy());
        ctxpack_error_free(error);
        Err(text)
    }
}

/// Calls a constructor `f(&out, &error)` and owns what it made.
fn create<T>(
    free: unsafe extern "C" fn(*mut T),
    f: impl FnOnce(*mut *mut T, *mut *mut ctxpack_error) -> ctxpack_status,
) -> Result<Owned<T>, String> {
    let mut out: *mut T = ptr::null_mut();
    let mut error: *mut ctxpack_error = ptr::null_mut();
    check(f(&mut out, &mut error), error)?;
    Ok(Owned { ptr: out, free })
}

/// Calls an accessor and turns a non-OK status into a run error.
fn access(status: ctxpack_status, what: &str) -> EngineResult<()> {
    check(status, ptr::null_mut()).map_err(|e| EngineError::Run(format!("{what}: {e}")))
}

/// A `ctxpack_str` borrowing `s`.
fn cstr(s: &str) -> ctxpack_str {
    ctxpack_str {
        ptr: s.as_ptr().cast(),
        len: s.len(),
    }
}

/// Copies a `ctxpack_str` returned by the library.
fn owned_str(s: ctxpack_str) -> String {
    // SAFETY: the library returns valid UTF-8 at a non-NULL pointer.
    unsafe {
        String::from_utf8_lossy(std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len)).into_owned()
    }
}

/// Copies an array returned by the library.
fn owned_array<T: Copy>(ptr: *const T, len: usize) -> Vec<T> {
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: the library returns `len` valid elements at `ptr`.
    unsafe { std::slice::from_raw_parts(ptr, len).to_vec() }
}

fn build_scorer(spec: &ScorerSpec) -> Result<Owned<ctxpack_scorer>, String> {
    let free = ctxpack_scorer_free as unsafe extern "C" fn(*mut ctxpack_scorer);
    // SAFETY (every constructor call): arguments point to live local data.
    match spec {
        ScorerSpec::Recency => create(free, |o, e| unsafe { ctxpack_scorer_new_recency(o, e) }),
        ScorerSpec::Priority => create(free, |o, e| unsafe { ctxpack_scorer_new_priority(o, e) }),
        ScorerSpec::Frequency => create(free, |o, e| unsafe { ctxpack_scorer_new_frequency(o, e) }),
        ScorerSpec::Reflexive => create(free, |o, e| unsafe { ctxpack_scorer_new_reflexive(o, e) }),
        ScorerSpec::Kind(None) => create(free, |o, e| unsafe { ctxpack_scorer_new_kind(o, e) }),
        ScorerSpec::Kind(Some(weights)) => {
            let table: Vec<ctxpack_kind_weight> = weights
                .iter()
                .map(|(k, w)| ctxpack_kind_weight {
                    kind: cstr(k),
                    weight: *w,
                })
                .collect();
            create(free, |o, e| unsafe {
                ctxpack_scorer_new_kind_weights(table.as_ptr(), table.len(), o, e)
            })
        }
        ScorerSpec::Tag(weights) => {
            let table: Vec<ctxpack_tag_weight> = weights
                .iter()
                .map(|(t, w)| ctxpack_tag_weight {
                    tag: cstr(t),
                    weight: *w,
                })
                .collect();
            create(free, |o, e| unsafe {
                ctxpack_scorer_new_tag(table.as_ptr(), table.len(), o, e)
            })
        }
        ScorerSpec::Composite(children) => {
            // The composite keeps its own references; ours are freed on return.
            let built = children
                .iter()
                .map(|(child, _)| build_scorer(child))
                .collect::<Result<Vec<_>, _>>()?;
            let table: Vec<ctxpack_composite_child> = built
                .iter()
                .zip(children)
                .map(|(h, (_, w))| ctxpack_composite_child {
                    scorer: h.ptr,
                    weight: *w,
                })
                .collect();
            create(free, |o, e| unsafe {
                ctxpack_scorer_new_composite(table.as_ptr(), table.len(), o, e)
            })
        }
        ScorerSpec::Scaled(inner) => {
            let inner = build_scorer(inner)?;
            create(free, |o, e| unsafe {
                ctxpack_scorer_new_scaled(inner.ptr, o, e)
            })
        }
        ScorerSpec::Decay {
            reference_time,
            curve,
            null_timestamp_score,
        } => {
            let windows: Vec<ctxpack_decay_window> = match curve {
                CurveSpec::Step { windows } => windows
                    .iter()
                    .map(|&(max_age_ns, score)| ctxpack_decay_window { max_age_ns, score })
                    .collect(),
                _ => Vec::new(),
            };
            let (kind, half_life_ns, max_age_ns) = match curve {
                CurveSpec::Exponential { half_life_ns } => {
                    (ctxpack_decay_curve_kind::Exponential, *half_life_ns, 0)
                }
                CurveSpec::Window { max_age_ns } => {
                    (ctxpack_decay_curve_kind::Window, 0, *max_age_ns)
                }
                CurveSpec::Step { .. } => (ctxpack_decay_curve_kind::Step, 0, 0),
            };
            let config = ctxpack_decay_config {
                struct_size: std::mem::size_of::<ctxpack_decay_config>(),
                curve: kind as i32,
                half_life_ns,
                max_age_ns,
                windows: windows.as_ptr(),
                window_count: windows.len(),
                clock: ctxpack_clock_kind::Fixed as i32,
                fixed_now_ns: *reference_time,
                null_timestamp_score: *null_timestamp_score,
                has_null_timestamp_score: 1,
                reserved: [0; 7],
            };
            create(free, |o, e| unsafe {
                ctxpack_scorer_new_decay(&config, o, e)
            })
        }
        ScorerSpec::MetadataTrust { default_score } => create(free, |o, e| unsafe {
            ctxpack_scorer_new_metadata_trust(*default_score, o, e)
        }),
        ScorerSpec::MetadataKey { key, value, boost } => create(free, |o, e| unsafe {
            ctxpack_scorer_new_metadata_key(cstr(key), cstr(value), *boost, o, e)
        }),
    }
}

fn scarcity(s: Scarcity) -> i32 {
    match s {
        Scarcity::Degrade => ctxpack_scarcity::Degrade as i32,
        Scarcity::Throw => ctxpack_scarcity::Throw as i32,
    }
}

fn count_entries(entries: &[CountEntrySpec]) -> Result<Vec<ctxpack_count_quota_entry>, String> {
    let count = |n: u64| usize::try_from(n).map_err(|_| format!("count {n} does not fit"));
    entries
        .iter()
        .map(|e| {
            Ok(ctxpack_count_quota_entry {
                kind: cstr(&e.kind),
                require_count: count(e.require_count)?,
                cap_count: count(e.cap_count)?,
            })
        })
        .collect()
}

fn build_slicer(spec: &SlicerSpec) -> Result<Owned<ctxpack_slicer>, String> {
    let free = ctxpack_slicer_free as unsafe extern "C" fn(*mut ctxpack_slicer);
    // SAFETY (every constructor call): arguments point to live local data.
    match spec {
        SlicerSpec::Greedy => create(free, |o, e| unsafe { ctxpack_slicer_new_greedy(o, e) }),
        SlicerSpec::Knapsack { bucket_size } => create(free, |o, e| unsafe {
            ctxpack_slicer_new_knapsack(*bucket_size, 0, o, e)
        }),
        SlicerSpec::Quota { quotas, inner } => {
            let inner = build_slicer(inner)?;
            let table: Vec<ctxpack_quota_entry> = quotas
                .iter()
                .map(|q| ctxpack_quota_entry {
                    kind: cstr(&q.kind),
                    require: q.require,
                    cap: q.cap,
                })
                .collect();
            create(free, |o, e| unsafe {
                ctxpack_slicer_new_quota(table.as_ptr(), table.len(), inner.ptr, o, e)
            })
        }
        SlicerSpec::CountQuota {
            entries,
            inner,
            scarcity: s,
        } => {
            let inner = build_slicer(inner)?;
            let table = count_entries(entries)?;
            create(free, |o, e| unsafe {
                ctxpack_slicer_new_count_quota(
                    table.as_ptr(),
                    table.len(),
                    inner.ptr,
                    scarcity(*s),
                    o,
                    e,
                )
            })
        }
        SlicerSpec::CountConstrainedKnapsack {
            entries,
            bucket_size,
            scarcity: s,
        } => {
            let table = count_entries(entries)?;
            create(free, |o, e| unsafe {
                ctxpack_slicer_new_count_constrained_knapsack(
                    table.as_ptr(),
                    table.len(),
                    *bucket_size,
                    0,
                    scarcity(*s),
                    o,
                    e,
                )
            })
        }
    }
}

fn build_placer(spec: PlacerSpec) -> Result<Owned<ctxpack_placer>, String> {
    let free = ctxpack_placer_free as unsafe extern "C" fn(*mut ctxpack_placer);
    // SAFETY: only out-parameters.
    match spec {
        PlacerSpec::Chronological => create(free, |o, e| unsafe {
            ctxpack_placer_new_chronological(o, e)
        }),
        PlacerSpec::UShaped => create(free, |o, e| unsafe { ctxpack_placer_new_u_shaped(o, e) }),
    }
}

fn build_pipeline(spec: &PipelineSpec) -> Result<Owned<ctxpack_pipeline>, String> {
    let scorer = build_scorer(&spec.scorer)?;
    let slicer = build_slicer(&spec.slicer)?;
    let placer = build_placer(spec.placer)?;
    let strategy = match spec.overflow {
        OverflowSpec::Throw => ctxpack_overflow_strategy::Throw,
        OverflowSpec::Truncate => ctxpack_overflow_strategy::Truncate,
        OverflowSpec::Proceed => ctxpack_overflow_strategy::Proceed,
    };
    let options = ctxpack_pipeline_options {
        struct_size: std::mem::size_of::<ctxpack_pipeline_options>(),
        overflow_strategy: strategy as i32,
        deduplication: spec.deduplication.into(),
        no_variants: (!spec.use_variants).into(),
        reserved: [0; 2],
        group_value: group_value(spec.group_value),
        pinned_first: spec.pinned_first.into(),
        reserved2: [0; 3],
    };
    // SAFETY: live handles and options.
    create(ctxpack_pipeline_free, |o, e| unsafe {
        ctxpack_pipeline_new(scorer.ptr, slicer.ptr, placer.ptr, &options, o, e)
    })
}

/// The `ctxpack_group_value` value of a vector's group value mode.
fn group_value(spec: GroupValueSpec) -> i32 {
    let value = match spec {
        GroupValueSpec::Sum => ctxpack_group_value::Sum,
        GroupValueSpec::Max => ctxpack_group_value::Max,
        GroupValueSpec::Mean => ctxpack_group_value::Mean,
    };
    value as i32
}

/// Pushes the items as one `ctxpack_item_desc` array (the library copies everything).
fn build_items<'a>(
    specs: impl IntoIterator<Item = &'a ItemSpec>,
) -> EngineResult<Owned<ctxpack_items>> {
    let specs: Vec<&ItemSpec> = specs.into_iter().collect();
    let tags: Vec<Vec<ctxpack_str>> = specs
        .iter()
        .map(|s| s.tags.iter().map(|t| cstr(t)).collect())
        .collect();
    let metadata: Vec<Vec<ctxpack_metadata_entry>> = specs
        .iter()
        .map(|s| {
            s.metadata
                .iter()
                .map(|(k, v)| ctxpack_metadata_entry {
                    key: cstr(k),
                    value: cstr(v),
                })
                .collect()
        })
        .collect();
    let variants: Vec<Vec<ctxpack_variant_desc>> = specs
        .iter()
        .map(|s| {
            s.variants
                .iter()
                .map(|v| ctxpack_variant_desc {
                    struct_size: std::mem::size_of::<ctxpack_variant_desc>(),
                    content: cstr(&v.content),
                    tokens: v.tokens,
                    quality: v.quality,
                })
                .collect()
        })
        .collect();
    let descs: Vec<ctxpack_item_desc> = specs
        .iter()
        .zip(tags.iter().zip(&metadata).zip(&variants))
        .map(|(s, ((t, m), v))| ctxpack_item_desc {
            struct_size: std::mem::size_of::<ctxpack_item_desc>(),
            content: cstr(&s.content),
            tokens: s.tokens,
            kind: s.kind.as_deref().map_or(
                ctxpack_str {
                    ptr: ptr::null(),
                    len: 0,
                },
                cstr,
            ),
            source: s.source.as_deref().map_or(
                ctxpack_str {
                    ptr: ptr::null(),
                    len: 0,
                },
                cstr,
            ),
            priority: s.priority.unwrap_or(0),
            has_priority: s.priority.is_some().into(),
            tags: t.as_ptr(),
            tag_count: t.len(),
            metadata: m.as_ptr(),
            metadata_count: m.len(),
            timestamp_ns: s.timestamp.unwrap_or(0),
            has_timestamp: s.timestamp.is_some().into(),
            future_relevance_hint: s.future_relevance_hint.unwrap_or(0.0),
            has_future_relevance_hint: s.future_relevance_hint.is_some().into(),
            pinned: s.pinned.into(),
            original_tokens: s.original_tokens.unwrap_or(0),
            has_original_tokens: s.original_tokens.is_some().into(),
            reserved: [0; 3],
            group: s.group.as_deref().map_or(ctxpack_str::EMPTY, cstr),
            encoding: ctxpack_str::EMPTY,
            variants: v.as_ptr(),
            variant_count: v.len(),
        })
        .collect();
    // SAFETY: out-parameters only, then a live handle and the array above.
    let items = create(ctxpack_items_free, |o, e| unsafe {
        ctxpack_items_new(o, e)
    })
    .map_err(EngineError::Input)?;
    let mut error = ptr::null_mut();
    let status =
        unsafe { ctxpack_items_push_many(items.ptr, descs.as_ptr(), descs.len(), &mut error) };
    check(status, error).map_err(EngineError::Input)?;
    Ok(items)
}

fn build_budget(spec: &BudgetSpec) -> EngineResult<Owned<ctxpack_budget>> {
    let slots: Vec<ctxpack_reserved_slot> = spec
        .reserved_slots
        .iter()
        .map(|(k, n)| ctxpack_reserved_slot {
            kind: cstr(k),
            count: *n,
        })
        .collect();
    let desc = ctxpack_budget_desc {
        struct_size: std::mem::size_of::<ctxpack_budget_desc>(),
        max_tokens: spec.max_tokens,
        target_tokens: spec.target_tokens,
        output_reserve: spec.output_reserve,
        slots: slots.as_ptr(),
        slot_count: slots.len(),
        estimation_safety_margin_percent: spec.estimation_safety_margin_percent,
    };
    // SAFETY: the descriptor and its slots array are live.
    create(ctxpack_budget_free, |o, e| unsafe {
        ctxpack_budget_new(&desc, o, e)
    })
    .map_err(EngineError::Input)
}

fn shortfall(s: &ctxpack_shortfall) -> ShortfallSpec {
    ShortfallSpec {
        kind: owned_str(s.kind),
        required_count: s.required_count,
        satisfied_count: s.satisfied_count,
    }
}

impl Engine for FfiEngine {
    fn name(&self) -> &'static str {
        "c-abi"
    }

    fn construct(&self, component: &Component) -> EngineResult<()> {
        match component {
            Component::Scorer(s) => build_scorer(s).map(drop),
            Component::Slicer(s) => build_slicer(s).map(drop),
            Component::Placer(p) => build_placer(*p).map(drop),
            Component::Pipeline(p) => build_pipeline(p).map(drop),
        }
        .map_err(EngineError::Construction)
    }

    fn score(&self, scorer: &ScorerSpec, items: &[ItemSpec]) -> EngineResult<Vec<f64>> {
        let scorer = build_scorer(scorer).map_err(EngineError::Construction)?;
        let items = build_items(items.iter())?;
        let mut len = 0;
        // SAFETY: live handles; `out` holds `len` doubles.
        unsafe {
            access(ctxpack_items_len(items.ptr, &mut len), "ctxpack_items_len")?;
            let mut out = vec![0.0; len];
            let mut error = ptr::null_mut();
            let status =
                ctxpack_scorer_score(scorer.ptr, items.ptr, out.as_mut_ptr(), len, &mut error);
            check(status, error).map_err(EngineError::Run)?;
            Ok(out)
        }
    }

    fn slice(
        &self,
        slicer: &SlicerSpec,
        items: &[ScoredItemSpec],
        budget: &BudgetSpec,
        group_value_spec: GroupValueSpec,
    ) -> EngineResult<SliceResult> {
        let slicer = build_slicer(slicer).map_err(EngineError::Construction)?;
        let list = build_items(items.iter().map(|s| &s.item))?;
        let budget = build_budget(budget)?;
        let scores: Vec<f64> = items.iter().map(|s| s.score).collect();
        // SAFETY: live handles and arrays; accessors write into locals.
        unsafe {
            let result = create(ctxpack_slice_result_free, |o, e| {
                ctxpack_slicer_slice_with_group_value(
                    slicer.ptr,
                    list.ptr,
                    scores.as_ptr(),
                    scores.len(),
                    budget.ptr,
                    group_value(group_value_spec),
                    o,
                    e,
                )
            })
            .map_err(EngineError::Run)?;
            let (mut p, mut n) = (ptr::null(), 0);
            access(
                ctxpack_slice_result_selected(result.ptr, &mut p, &mut n),
                "selected",
            )?;
            let selected = owned_array(p, n);
            access(
                ctxpack_slice_result_cap_excluded(result.ptr, &mut p, &mut n),
                "cap_excluded",
            )?;
            let cap_excluded = owned_array(p, n);
            access(
                ctxpack_slice_result_forms(result.ptr, &mut p, &mut n),
                "forms",
            )?;
            let forms = owned_array(p, n);
            access(
                ctxpack_slice_result_shortfall_count(result.ptr, &mut n),
                "shortfall_count",
            )?;
            let mut shortfalls = Vec::with_capacity(n);
            for i in 0..n {
                let mut s: ctxpack_shortfall = std::mem::zeroed();
                s.struct_size = std::mem::size_of::<ctxpack_shortfall>();
                access(
                    ctxpack_slice_result_shortfall(result.ptr, i, &mut s, ptr::null_mut()),
                    "shortfall",
                )?;
                shortfalls.push(shortfall(&s));
            }
            Ok(SliceResult {
                selected,
                shortfalls,
                cap_excluded,
                forms,
            })
        }
    }

    fn place(
        &self,
        placer: &PlacerSpec,
        items: &[ScoredItemSpec],
        group_value_spec: GroupValueSpec,
    ) -> EngineResult<Vec<usize>> {
        let placer = build_placer(*placer).map_err(EngineError::Construction)?;
        let list = build_items(items.iter().map(|s| &s.item))?;
        let scores: Vec<f64> = items.iter().map(|s| s.score).collect();
        let mut order = vec![usize::MAX; scores.len()];
        let mut error = ptr::null_mut();
        // SAFETY: live handles; `scores` and `order` hold `len` elements.
        let status = unsafe {
            ctxpack_placer_place_with_group_value(
                placer.ptr,
                list.ptr,
                scores.as_ptr(),
                scores.len(),
                group_value(group_value_spec),
                order.as_mut_ptr(),
                &mut error,
            )
        };
        check(status, error).map_err(EngineError::Run)?;
        Ok(order)
    }

    fn pipeline(
        &self,
        pipeline: &PipelineSpec,
        items: &[ItemSpec],
        budget: &BudgetSpec,
        traced: bool,
    ) -> EngineResult<PipelineResult> {
        let pipeline = build_pipeline(pipeline).map_err(EngineError::Construction)?;
        let items = build_items(items.iter())?;
        let budget = build_budget(budget)?;
        let notified: RefCell<Vec<OverflowRecord>> = RefCell::new(Vec::new());
        let options = ctxpack_run_options {
            struct_size: std::mem::size_of::<ctxpack_run_options>(),
            trace_detail: if traced {
                ctxpack_trace_detail::Item
            } else {
                ctxpack_trace_detail::None
            } as i32,
            on_overflow: Some(on_overflow),
            overflow_user_data: (&notified as *const RefCell<Vec<OverflowRecord>>)
                .cast_mut()
                .cast(),
            reserved: [0; 4],
            cancel: ptr::null(),
        };
        // SAFETY: live handles and options; `notified` outlives the run.
        let result = create(ctxpack_result_free, |o, e| unsafe {
            ctxpack_pipeline_run(pipeline.ptr, items.ptr, budget.ptr, &options, o, e)
        })
        .map_err(EngineError::Run)?;
        // SAFETY: accessors on a live result, writing into locals.
        unsafe {
            let (mut p, mut n) = (ptr::null(), 0);
            access(
                ctxpack_result_indices(result.ptr, &mut p, &mut n),
                "indices",
            )?;
            let placed = owned_array(p, n);
            let (mut present, mut over) = (false, 0);
            access(
                ctxpack_result_overflow(result.ptr, &mut present, &mut over, &mut p, &mut n),
                "overflow",
            )?;
            let overflow = present.then(|| OverflowRecord {
                tokens_over_budget: over,
                items: owned_array(p, n),
            });
            if notified.borrow().as_slice() != overflow.as_slice() {
                return Err(EngineError::Run(format!(
                    "overflow callback received {:?} but the result carries {overflow:?}",
                    notified.borrow()
                )));
            }
            let mut has_report = false;
            access(
                ctxpack_result_has_report(result.ptr, &mut has_report),
                "has_report",
            )?;
            let report = if has_report {
                Some(report_record(result.ptr)?)
            } else {
                None
            };
            access(ctxpack_result_forms(result.ptr, &mut p, &mut n), "forms")?;
            let forms = owned_array(p, n);
            Ok(PipelineResult {
                placed,
                forms,
                report,
                overflow,
            })
        }
    }
}

/// The run's overflow callback: records the event in the `RefCell` behind `user_data`.
unsafe extern "C" fn on_overflow(
    user_data: *mut c_void,
    tokens_over_budget: i64,
    items: *const usize,
    count: usize,
) {
    // SAFETY: `user_data` is the engine's `RefCell`, alive for the whole run.
    let notified = unsafe { &*(user_data as *const RefCell<Vec<OverflowRecord>>) };
    notified.borrow_mut().push(OverflowRecord {
        tokens_over_budget,
        items: owned_array(items, count),
    });
}

/// Reads the whole report through the accessors.
///
/// # Safety
/// `result` is a live, traced result.
unsafe fn report_record(result: *const ctxpack_result) -> EngineResult<ReportRecord> {
    // SAFETY: forwarded; every struct gets its `struct_size` before the call.
    unsafe {
        let mut summary: ctxpack_report_summary = std::mem::zeroed();
        summary.struct_size = std::mem::size_of::<ctxpack_report_summary>();
        access(
            ctxpack_result_report_summary(result, &mut summary, ptr::null_mut()),
            "report_summary",
        )?;
        let mut record = ReportRecord {
            total_candidates: summary.total_candidates as i64,
            total_tokens_considered: summary.total_tokens_considered.into(),
            ..ReportRecord::default()
        };
        for i in 0..summary.included_count {
            let mut e: ctxpack_included_entry = std::mem::zeroed();
            e.struct_size = std::mem::size_of::<ctxpack_included_entry>();
            access(
                ctxpack_result_report_included(result, i, &mut e, ptr::null_mut()),
                "report_included",
            )?;
            let reason = match e.reason {
                r if r == ctxpack_inclusion_reason::Scored as i32 => "Scored",
                r if r == ctxpack_inclusion_reason::Pinned as i32 => "Pinned",
                r if r == ctxpack_inclusion_reason::ZeroToken as i32 => "ZeroToken",
                r if r == ctxpack_inclusion_reason::Downgraded as i32 => "Downgraded",
                other => {
                    return Err(EngineError::Run(format!(
                        "unknown inclusion reason {other}"
                    )))
                }
            };
            let fields = if reason == "Downgraded" {
                downgrade_fields(&e)?
            } else {
                Vec::new()
            };
            record.included.push(IncludedRecord {
                index: e.index,
                score: e.score,
                reason: reason.to_string(),
                fields,
            });
        }
        for i in 0..summary.excluded_count {
            let mut e: ctxpack_excluded_entry = std::mem::zeroed();
            e.struct_size = std::mem::size_of::<ctxpack_excluded_entry>();
            access(
                ctxpack_result_report_excluded(result, i, &mut e, ptr::null_mut()),
                "report_excluded",
            )?;
            record.excluded.push(ExcludedRecord {
                index: e.index,
                score: e.score,
                reason: reason_record(&e),
            });
        }
        for i in 0..summary.pruned_form_count {
            let mut f: ctxpack_pruned_form = std::mem::zeroed();
            f.struct_size = std::mem::size_of::<ctxpack_pruned_form>();
            access(
                ctxpack_result_report_pruned_form(result, i, &mut f, ptr::null_mut()),
                "report_pruned_form",
            )?;
            record.pruned_forms.push((f.index, f.form, f.dominated_by));
        }
        for i in 0..summary.shortfall_count {
            let mut s: ctxpack_shortfall = std::mem::zeroed();
            s.struct_size = std::mem::size_of::<ctxpack_shortfall>();
            access(
                ctxpack_result_report_shortfall(result, i, &mut s, ptr::null_mut()),
                "report_shortfall",
            )?;
            record.shortfalls.push(shortfall(&s));
        }
        for i in 0..summary.group_count {
            let mut g: ctxpack_group_entry = std::mem::zeroed();
            g.struct_size = std::mem::size_of::<ctxpack_group_entry>();
            access(
                ctxpack_result_report_group(result, i, &mut g, ptr::null_mut()),
                "report_group",
            )?;
            record.groups.push(group_record(&g)?);
        }
        Ok(record)
    }
}

/// A group of the report, from its C entry.
///
/// # Safety
/// `g` was filled by `ctxpack_result_report_group` of a live result.
unsafe fn group_record(g: &ctxpack_group_entry) -> EngineResult<GroupRecord> {
    let excluded = g.decision == ctxpack_group_decision::Excluded as i32;
    let decision = match g.decision {
        d if d == ctxpack_group_decision::Included as i32 => "Included",
        _ if excluded => "Excluded",
        other => return Err(EngineError::Run(format!("unknown group decision {other}"))),
    };
    let stage = if excluded {
        Some(stage_name(g.stage)?.to_string())
    } else {
        None
    };
    Ok(GroupRecord {
        key: owned_str(g.key),
        members: owned_array(g.members, g.member_count),
        tokens: g.tokens,
        decision: decision.to_string(),
        stage,
        member_index: excluded.then_some(g.member_index),
        pinned_by: g.has_pinned_by.then_some(g.pinned_by),
        partial_selection: g.partial_selection,
    })
}

/// The name of a `ctxpack_pipeline_stage` value.
fn stage_name(stage: i32) -> EngineResult<&'static str> {
    use ctxpack_pipeline_stage as S;
    [
        (S::Classify, "Classify"),
        (S::Score, "Score"),
        (S::Deduplicate, "Deduplicate"),
        (S::Slice, "Slice"),
        (S::Place, "Place"),
    ]
    .into_iter()
    .find(|(s, _)| *s as i32 == stage)
    .map(|(_, name)| name)
    .ok_or_else(|| EngineError::Run(format!("unknown pipeline stage {stage}")))
}

/// The fields of a DOWNGRADED entry, as the wire form names them.
fn downgrade_fields(e: &ctxpack_included_entry) -> EngineResult<Vec<(String, FieldValue)>> {
    use ctxpack_downgrade_cause as C;
    let cause = match e.cause {
        c if c == C::BudgetExceeded as i32 => "BudgetExceeded",
        c if c == C::SlicerChoice as i32 => "SlicerChoice",
        c if c == C::Truncated as i32 => "Truncated",
        other => return Err(EngineError::Run(format!("unknown downgrade cause {other}"))),
    };
    Ok(vec![
        ("form".to_string(), FieldValue::Int(e.form as i64)),
        ("full_tokens".to_string(), FieldValue::Int(e.full_tokens)),
        (
            "chosen_tokens".to_string(),
            FieldValue::Int(e.chosen_tokens),
        ),
        (
            "available_tokens".to_string(),
            FieldValue::Int(e.available_tokens),
        ),
        ("cause".to_string(), FieldValue::Str(cause.to_string())),
    ])
}

/// The wire form of an exclusion reason, from the entry's code and fields.
fn reason_record(e: &ctxpack_excluded_entry) -> ReasonRecord {
    use ctxpack_exclusion_reason as R;
    use FieldValue::{Float, Int, Str};
    let s = |v: ctxpack_str| Str(owned_str(v));
    let u = |v: u64| Int(i64::try_from(v).unwrap_or(i64::MAX));
    let code = |r: R| r as i32;
    let fields: Vec<(&str, FieldValue)> = match e.reason {
        r if r == code(R::BudgetExceeded) => {
            vec![
                ("item_tokens", Int(e.item_tokens)),
                ("available_tokens", Int(e.available_tokens)),
            ]
        }
        r if r == code(R::ScoredTooLow) => vec![
            ("score", Float(e.reason_score)),
            ("threshold", Float(e.threshold)),
        ],
        r if r == code(R::Deduplicated) => {
            vec![("deduplicated_against", s(e.deduplicated_against))]
        }
        r if r == code(R::QuotaCapExceeded) => {
            vec![
                ("kind", s(e.kind)),
                ("cap", Int(e.cap)),
                ("actual", Int(e.actual)),
            ]
        }
        r if r == code(R::QuotaRequireDisplaced) => {
            vec![("displaced_by_kind", s(e.displaced_by_kind))]
        }
        r if r == code(R::NegativeTokens) => vec![("tokens", Int(e.tokens))],
        r if r == code(R::PinnedOverride) => vec![("displaced_by", s(e.displaced_by))],
        r if r == code(R::Filtered) => vec![("filter_name", s(e.filter_name))],
        r if r == code(R::CountCapExceeded) => {
            vec![
                ("kind", s(e.kind)),
                ("cap", u(e.count_cap)),
                ("count", u(e.count)),
            ]
        }
        r if r == code(R::CountRequireCandidatesExhausted) => vec![("kind", s(e.kind))],
        r if r == code(R::GroupExcluded) => vec![
            ("group", s(e.group)),
            ("member_index", u(e.member_index as u64)),
            ("member_content", s(e.member_content)),
            ("member_reason", s(e.member_reason)),
        ],
        _ => Vec::new(),
    };
    ReasonRecord {
        name: owned_str(e.name),
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}
