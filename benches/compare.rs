//! ctxpack (through its C ABI) against the reference crate `cupel` 1.2.0, side by side.
//!
//! ```sh
//! cargo bench --bench compare                      # the full table (docs/performance.md)
//! cargo bench --bench compare -- --sizes 100,1000  # fewer sizes
//! cargo bench --bench compare -- --workloads 1,3b  # some workloads only
//! cargo bench --bench compare -- --workloads 0     # the agent workload (issue 16's
//!                                                  # inputs), up to N = 1 000 000
//! cargo bench --bench compare -- --workloads 6 --sizes 10000,100000
//!                                                  # item groups: grouped chat vs plain chat
//! cargo bench --bench compare -- --workloads 7 --sizes 10000
//!                                                  # variants: their cost, and the value
//!                                                  # they keep on the agent transcript
//! cargo bench --bench compare -- --quick           # fewer samples per row
//! cargo bench --bench compare -- --no-ref          # ctxpack only
//! cargo bench --bench compare -- --wall            # wall-clock instead of thread CPU time
//! cargo bench --bench compare -- --alloc-log       # list the allocations of one untraced run
//! cargo bench --bench compare -- --workloads 1 --sizes 100000 --profile 5
//!                                                  # loop one row for perf (push/run/free split)
//! cargo bench --bench compare -- --workloads 0 --sizes 100 --profile 5 --cold
//!                                                  # the same with the caches evicted
//!                                                  # (8 MiB written) before every run
//! cargo bench --bench compare -- --workloads 0 --sizes 100 --profile 5 --cold 64
//!                                                  # 64 MiB written: the last-level
//!                                                  # cache evicted too
//! cargo bench --bench compare -- --workloads 0 --sizes 100 --profile 5 --after-ref
//!                                                  # the same with an untimed reference
//!                                                  # run before every run, as in the table
//! cargo bench --bench compare -- --workloads 0 --sizes 100000 --profile 5 --oneshot --after-list
//!                                                  # the one-shot run after an untimed list
//!                                                  # run, as in the agent rows
//! cargo bench --bench compare -- --workloads 0 --sizes 10000 --profile 5 --oneshot
//!                                                  # loop the one-shot run instead
//! cargo bench --bench compare -- --workloads 0 --sizes 100 --profile 5 --into
//!                                                  # or the one-shot run into a kept result
//! ```
//!
//! For every workload and size, both libraries get the same generated items. One
//! measured ctxpack run is everything a C host does: `ctxpack_items_new`,
//! `ctxpack_items_push_many` (copying every descriptor), `ctxpack_pipeline_run`,
//! `ctxpack_result_indices` (copied out), `ctxpack_result_free`, `ctxpack_items_free`,
//! called through the exported `extern "C"` functions. One measured reference run builds
//! its `Vec<cupel::ContextItem>` from the same data, runs `cupel::Pipeline::run` (or
//! `run_traced` for workload 5) and drops both. The pipeline, components and budget are
//! built once per workload (configuration, not per-request work) on both sides.
//!
//! ctxpack runs, reference runs and the sort floor (see [`Floor`]) are sampled alternately
//! in one process; the table shows medians of thread CPU time (`--wall` for wall-clock
//! time), which equals wall time for this single-threaded work on an idle machine and is
//! not inflated by other processes on a busy one. A reference run whose estimate (its time
//! at the previous size, scaled quadratically) exceeds `--ref-limit` seconds (default 60)
//! is skipped, with a note.
//!
//! Every ctxpack row also gets a phase split (push, run, read, free; medians of runs timed
//! phase by phase, sampled alternately with the complete runs) and the number of
//! allocations of one complete run.
//!
//! Memory: a counting global allocator. "Peak extra" is the highest heap level during one
//! complete ctxpack run above the level before it; "input" is the caller's own data: the
//! descriptor array plus every string and array the descriptors point to.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::ffi::c_char;
use std::fmt::Write as _;
use std::hint::black_box;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use ctxpack::ffi::*;

#[path = "../tests/common/rng.rs"]
mod rng;
use rng::Rng;

// ---------------------------------------------------------------------------------------
// Counting allocator
// ---------------------------------------------------------------------------------------

/// Counts heap use while `ENABLED`; costs one relaxed load per call otherwise, so timed
/// runs are not slowed down (memory is measured on separate, untimed runs).
struct Counting;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static LOG_ON: AtomicBool = AtomicBool::new(false);
static LOG_LEN: AtomicUsize = AtomicUsize::new(0);
static LOG: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];

fn on_alloc(size: usize) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    let now = CURRENT.fetch_add(size as isize, Relaxed) + size as isize;
    PEAK.fetch_max(now, Relaxed);
    COUNT.fetch_add(1, Relaxed);
    BYTES.fetch_add(size, Relaxed);
    LARGEST.fetch_max(size, Relaxed);
    if LOG_ON.load(Relaxed) {
        let i = LOG_LEN.fetch_add(1, Relaxed);
        if i < LOG.len() {
            LOG[i].store(size, Relaxed);
        }
    }
}

fn on_free(size: usize) {
    if ENABLED.load(Relaxed) {
        CURRENT.fetch_sub(size as isize, Relaxed);
    }
}

// SAFETY: forwards to the system allocator; the bookkeeping never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        on_free(layout.size());
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        on_free(layout.size());
        on_alloc(new_size);
        // SAFETY: forwarded.
        unsafe { System.realloc(p, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What the allocator saw during one closure call.
#[derive(Debug, Clone, Copy, Default)]
struct AllocStats {
    /// Highest heap level above the level at the start.
    peak: usize,
    /// Number of allocations (a realloc counts as one).
    count: usize,
    /// Bytes requested in total.
    bytes: usize,
    /// The largest single allocation.
    largest: usize,
    /// Bytes still allocated at the end (what the closure left behind).
    held: isize,
}

fn counted<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    CURRENT.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNT.store(0, Relaxed);
    BYTES.store(0, Relaxed);
    LARGEST.store(0, Relaxed);
    ENABLED.store(true, Relaxed);
    let r = f();
    ENABLED.store(false, Relaxed);
    let stats = AllocStats {
        peak: PEAK.load(Relaxed).max(0) as usize,
        count: COUNT.load(Relaxed),
        bytes: BYTES.load(Relaxed),
        largest: LARGEST.load(Relaxed),
        held: CURRENT.load(Relaxed),
    };
    (r, stats)
}

// ---------------------------------------------------------------------------------------
// Generated inputs
// ---------------------------------------------------------------------------------------

/// One item as the caller holds it.
struct Spec {
    content: String,
    tokens: i64,
    kind: &'static str,
    source: &'static str,
    priority: Option<i64>,
    tags: Vec<String>,
    timestamp: Option<i64>,
    hint: Option<f64>,
}

const WORDS: [&str; 32] = [
    "the",
    "context",
    "window",
    "model",
    "token",
    "budget",
    "retrieval",
    "answer",
    "user",
    "assistant",
    "query",
    "document",
    "summary",
    "function",
    "result",
    "error",
    "file",
    "search",
    "index",
    "memory",
    "prompt",
    "policy",
    "score",
    "rank",
    "slice",
    "place",
    "quota",
    "report",
    "value",
    "update",
    "review",
    "plan",
];

const TOPICS: [&str; 24] = [
    "rust", "Rust", "python", "api", "API", "billing", "auth", "database", "cache", "deploy", "ci",
    "docs", "latency", "memory", "gpu", "search", "ranking", "security", "logging", "metrics",
    "ui", "mobile", "pricing", "legal",
];

/// Unique text of 40 to 400 bytes (mean about 220); tokens = ceil(bytes / 4).
fn text(rng: &mut Rng, label: &str, i: usize) -> (String, i64) {
    let len = 40 + rng.below(361);
    let mut s = String::with_capacity(len + 16);
    let _ = write!(s, "{label} {i}:");
    while s.len() < len {
        s.push(' ');
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
    let tokens = s.len().div_ceil(4) as i64;
    (s, tokens)
}

const T0: i64 = 1_700_000_000_000_000_000;
const SECOND: i64 = 1_000_000_000;

fn pick_kind(rng: &mut Rng, table: &[(&'static str, f64)]) -> &'static str {
    let mut x = rng.unit();
    for &(kind, p) in table {
        if x < p {
            return kind;
        }
        x -= p;
    }
    table[table.len() - 1].0
}

/// Chat: messages with distinct timestamps (2 % without), mostly `Message`.
fn chat_items(n: usize, seed: u64, with_priority: bool) -> Vec<Spec> {
    let mut rng = Rng::new(seed);
    let kinds = [
        ("Message", 0.85),
        ("ToolOutput", 0.10),
        ("Memory", 0.04),
        ("Document", 0.01),
    ];
    (0..n)
        .map(|i| {
            let (content, tokens) = text(&mut rng, "msg", i);
            let kind = pick_kind(&mut rng, &kinds);
            Spec {
                content,
                tokens,
                kind,
                source: if kind == "ToolOutput" { "Tool" } else { "Chat" },
                priority: (with_priority && rng.chance(0.9)).then(|| rng.below(10) as i64),
                tags: Vec::new(),
                timestamp: (!rng.chance(0.02))
                    .then(|| T0 + i as i64 * SECOND + rng.below(SECOND as usize) as i64),
                hint: None,
            }
        })
        .collect()
}

/// RAG: retrieved chunks with 1–3 topic tags (24 topics, case variants included) and a
/// future-relevance hint (10 % without).
fn rag_items(n: usize, seed: u64) -> Vec<Spec> {
    let mut rng = Rng::new(seed);
    let kinds = [("Document", 0.80), ("Memory", 0.15), ("ToolOutput", 0.05)];
    (0..n)
        .map(|i| {
            let (content, tokens) = text(&mut rng, "chunk", i);
            let tag_count = 1 + rng.below(3);
            Spec {
                content,
                tokens,
                kind: pick_kind(&mut rng, &kinds),
                source: "Rag",
                priority: None,
                tags: (0..tag_count)
                    .map(|_| TOPICS[rng.below(TOPICS.len())].to_string())
                    .collect(),
                timestamp: None,
                hint: (!rng.chance(0.1)).then(|| rng.unit()),
            }
        })
        .collect()
}

/// Quota: three kinds in proportions 60 / 25 / 15, chat-like otherwise.
fn quota_items(n: usize, seed: u64) -> Vec<Spec> {
    let mut items = chat_items(n, seed, false);
    let mut rng = Rng::new(seed ^ 0x5555);
    let kinds = [("Message", 0.60), ("Document", 0.25), ("ToolOutput", 0.15)];
    for it in &mut items {
        it.kind = pick_kind(&mut rng, &kinds);
        it.source = if it.kind == "ToolOutput" {
            "Tool"
        } else {
            "Chat"
        };
    }
    items
}

/// The eight tags of the agent workload, with the weights its tag scorer gives them.
const AGENT_TAGS: [(&str, f64); 8] = [
    ("user-pref", 1.0),
    ("plan", 0.9),
    ("bug", 0.8),
    ("code", 0.6),
    ("api", 0.5),
    ("test", 0.4),
    ("docs", 0.3),
    ("deploy", 0.2),
];

/// Agent: the inputs of issue 16's independent benchmark. Every item has 1–3 distinct tags
/// out of [`AGENT_TAGS`], a kind out of five (Message 45 %, ToolOutput 25 %, Document 13 %,
/// Memory 12 %, SystemPrompt 5 %), a priority 0–9, a future-relevance hint in [0, 1) and a
/// timestamp in whole seconds (0–2 s after the previous item's, so about a third of the
/// neighbours share a second).
fn agent_items(n: usize, seed: u64) -> Vec<Spec> {
    let mut rng = Rng::new(seed);
    let kinds = [
        ("Message", 0.45),
        ("ToolOutput", 0.25),
        ("Document", 0.13),
        ("Memory", 0.12),
        ("SystemPrompt", 0.05),
    ];
    let mut second = T0 / SECOND;
    (0..n)
        .map(|i| {
            let (content, tokens) = text(&mut rng, "turn", i);
            let kind = pick_kind(&mut rng, &kinds);
            let mut tags: Vec<String> = Vec::with_capacity(3);
            let tag_count = 1 + rng.below(3);
            while tags.len() < tag_count {
                let tag = AGENT_TAGS[rng.below(AGENT_TAGS.len())].0;
                if !tags.iter().any(|t| t == tag) {
                    tags.push(tag.to_string());
                }
            }
            second += rng.below(3) as i64;
            Spec {
                content,
                tokens,
                kind,
                source: match kind {
                    "ToolOutput" => "Tool",
                    "Document" => "Rag",
                    _ => "Chat",
                },
                priority: Some(rng.below(10) as i64),
                tags,
                timestamp: Some(second * SECOND),
                hint: Some(rng.unit()),
            }
        })
        .collect()
}

/// The caller's descriptor array (pointing into the specs) and its byte count.
struct Descs {
    descs: Vec<ctxpack_item_desc>,
    _tags: Vec<Vec<ctxpack_str>>,
    input_bytes: usize,
}

fn cstr(s: &str) -> ctxpack_str {
    ctxpack_str {
        ptr: s.as_ptr().cast::<c_char>(),
        len: s.len(),
    }
}

fn descriptors(specs: &[Spec]) -> Descs {
    let tags: Vec<Vec<ctxpack_str>> = specs
        .iter()
        .map(|s| s.tags.iter().map(|t| cstr(t)).collect())
        .collect();
    let mut input_bytes = 0usize;
    let descs = specs
        .iter()
        .zip(&tags)
        .map(|(s, t)| {
            input_bytes += std::mem::size_of::<ctxpack_item_desc>()
                + s.content.len()
                + s.kind.len()
                + s.source.len()
                + s.tags.iter().map(String::len).sum::<usize>()
                + t.len() * std::mem::size_of::<ctxpack_str>();
            ctxpack_item_desc {
                struct_size: std::mem::size_of::<ctxpack_item_desc>(),
                content: cstr(&s.content),
                tokens: s.tokens,
                kind: cstr(s.kind),
                source: cstr(s.source),
                priority: s.priority.unwrap_or(0),
                has_priority: s.priority.is_some().into(),
                tags: if t.is_empty() {
                    ptr::null()
                } else {
                    t.as_ptr()
                },
                tag_count: t.len(),
                metadata: ptr::null(),
                metadata_count: 0,
                timestamp_ns: s.timestamp.unwrap_or(0),
                has_timestamp: s.timestamp.is_some().into(),
                future_relevance_hint: s.hint.unwrap_or(0.0),
                has_future_relevance_hint: s.hint.is_some().into(),
                pinned: 0,
                original_tokens: 0,
                has_original_tokens: 0,
                reserved: [0; 3],
                group: ctxpack_str::EMPTY,
                encoding: ctxpack_str::EMPTY,
                variants: ptr::null(),
                variant_count: 0,
            }
        })
        .collect();
    Descs {
        descs,
        _tags: tags,
        input_bytes,
    }
}

// ---------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    /// Issue 16's realistic inputs ([`agent_items`]): composite recency 2 + priority 1 +
    /// kind 1 + tag 1 + reflexive 1, greedy, chronological; target half the tokens.
    Agent,
    /// Composite recency 3 + kind 1, greedy, chronological.
    Chat,
    /// Reflexive 3 + kind 1 + frequency 1 over tagged items, greedy, u-shaped.
    Rag,
    /// Priority 1 + recency 1, knapsack with this bucket size, chronological.
    Knapsack(i64),
    /// Recency 3 + kind 1, QuotaSlice over three kinds with a greedy inner slicer,
    /// chronological.
    Quota,
    /// The chat workload traced at Item detail.
    ChatTraced,
}

impl Workload {
    fn id(self) -> &'static str {
        match self {
            Workload::Agent => "0",
            Workload::Chat => "1",
            Workload::Rag => "2",
            Workload::Knapsack(100) => "3",
            Workload::Knapsack(_) => "3b",
            Workload::Quota => "4",
            Workload::ChatTraced => "5",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Workload::Agent => "agent",
            Workload::Chat => "chat",
            Workload::Rag => "rag",
            Workload::Knapsack(100) => "knapsack q=100",
            Workload::Knapsack(_) => "knapsack q=10",
            Workload::Quota => "quota",
            Workload::ChatTraced => "chat, traced (Item)",
        }
    }
    fn items(self, n: usize) -> Vec<Spec> {
        let seed = 0xC0FFEE ^ n as u64;
        match self {
            Workload::Agent => agent_items(n, seed),
            Workload::Chat | Workload::ChatTraced => chat_items(n, seed, false),
            Workload::Rag => rag_items(n, seed),
            Workload::Knapsack(_) => chat_items(n, seed, true),
            Workload::Quota => quota_items(n, seed),
        }
    }
}

const QUOTAS: [(&str, f64, f64); 3] = [
    ("Message", 30.0, 70.0),
    ("Document", 10.0, 40.0),
    ("ToolOutput", 5.0, 20.0),
];

/// Budget: target 20 % of the total tokens, max 25 %, no reserve.
fn budget_numbers(specs: &[Spec]) -> (i64, i64) {
    let total: i64 = specs.iter().map(|s| s.tokens).sum();
    (total / 4, total / 5)
}

impl Workload {
    /// The budget's `(max, target)` for this workload's items: the agent workload targets
    /// half the total tokens (max 60 %), the others [`budget_numbers`].
    fn budget(self, specs: &[Spec]) -> (i64, i64) {
        if self == Workload::Agent {
            let total: i64 = specs.iter().map(|s| s.tokens).sum();
            (total / 10 * 6, total / 2)
        } else {
            budget_numbers(specs)
        }
    }
}

// ---------------------------------------------------------------------------------------
// ctxpack through the C ABI
// ---------------------------------------------------------------------------------------

fn ok(status: ctxpack_status, error: *mut ctxpack_error) -> Result<(), String> {
    if status == ctxpack_status::CTXPACK_OK {
        return Ok(());
    }
    // SAFETY: `error` is the error object the failed call stored (or NULL).
    unsafe {
        let m = ctxpack_error_message(error);
        let text = String::from_utf8_lossy(std::slice::from_raw_parts(m.ptr.cast::<u8>(), m.len))
            .into_owned();
        ctxpack_error_free(error);
        Err(format!("{status:?}: {text}"))
    }
}

/// Calls a constructor `f(&mut out, &mut error)`.
fn make<T>(f: impl FnOnce(*mut *mut T, *mut *mut ctxpack_error) -> ctxpack_status) -> *mut T {
    let mut out = ptr::null_mut();
    let mut error = ptr::null_mut();
    ok(f(&mut out, &mut error), error).expect("constructor");
    out
}

struct CtxSetup {
    pipeline: *mut ctxpack_pipeline,
    budget: *mut ctxpack_budget,
}

impl Drop for CtxSetup {
    fn drop(&mut self) {
        // SAFETY: both handles came from successful constructors.
        unsafe {
            ctxpack_pipeline_free(self.pipeline);
            ctxpack_budget_free(self.budget);
        }
    }
}

fn composite(children: &[(*mut ctxpack_scorer, f64)]) -> *mut ctxpack_scorer {
    let entries: Vec<ctxpack_composite_child> = children
        .iter()
        .map(|&(scorer, weight)| ctxpack_composite_child { scorer, weight })
        .collect();
    // SAFETY: valid array of live scorers.
    let s =
        make(|o, e| unsafe { ctxpack_scorer_new_composite(entries.as_ptr(), entries.len(), o, e) });
    for &(child, _) in children {
        // SAFETY: the composite keeps its own reference.
        unsafe { ctxpack_scorer_free(child) };
    }
    s
}

fn ctx_setup(w: Workload, specs: &[Spec]) -> CtxSetup {
    // SAFETY (whole body): every pointer passed is valid or a live handle.
    unsafe {
        let recency = || make(|o, e| ctxpack_scorer_new_recency(o, e));
        let kind = || make(|o, e| ctxpack_scorer_new_kind(o, e));
        let greedy = || make(|o, e| ctxpack_slicer_new_greedy(o, e));
        let (scorer, slicer, placer) = match w {
            Workload::Agent => {
                let weights: Vec<ctxpack_tag_weight> = AGENT_TAGS
                    .iter()
                    .map(|&(tag, weight)| ctxpack_tag_weight {
                        tag: cstr(tag),
                        weight,
                    })
                    .collect();
                let tag =
                    make(|o, e| ctxpack_scorer_new_tag(weights.as_ptr(), weights.len(), o, e));
                (
                    composite(&[
                        (recency(), 2.0),
                        (make(|o, e| ctxpack_scorer_new_priority(o, e)), 1.0),
                        (kind(), 1.0),
                        (tag, 1.0),
                        (make(|o, e| ctxpack_scorer_new_reflexive(o, e)), 1.0),
                    ]),
                    greedy(),
                    make(|o, e| ctxpack_placer_new_chronological(o, e)),
                )
            }
            Workload::Chat | Workload::ChatTraced => (
                composite(&[(recency(), 3.0), (kind(), 1.0)]),
                greedy(),
                make(|o, e| ctxpack_placer_new_chronological(o, e)),
            ),
            Workload::Rag => (
                composite(&[
                    (make(|o, e| ctxpack_scorer_new_reflexive(o, e)), 3.0),
                    (kind(), 1.0),
                    (make(|o, e| ctxpack_scorer_new_frequency(o, e)), 1.0),
                ]),
                greedy(),
                make(|o, e| ctxpack_placer_new_u_shaped(o, e)),
            ),
            Workload::Knapsack(q) => (
                composite(&[
                    (make(|o, e| ctxpack_scorer_new_priority(o, e)), 1.0),
                    (recency(), 1.0),
                ]),
                make(|o, e| ctxpack_slicer_new_knapsack(q, 0, o, e)),
                make(|o, e| ctxpack_placer_new_chronological(o, e)),
            ),
            Workload::Quota => {
                let inner = greedy();
                let entries: Vec<ctxpack_quota_entry> = QUOTAS
                    .iter()
                    .map(|&(k, require, cap)| ctxpack_quota_entry {
                        kind: cstr(k),
                        require,
                        cap,
                    })
                    .collect();
                let quota = make(|o, e| {
                    ctxpack_slicer_new_quota(entries.as_ptr(), entries.len(), inner, o, e)
                });
                ctxpack_slicer_free(inner);
                (
                    composite(&[(recency(), 3.0), (kind(), 1.0)]),
                    quota,
                    make(|o, e| ctxpack_placer_new_chronological(o, e)),
                )
            }
        };
        let pipeline = make(|o, e| ctxpack_pipeline_new(scorer, slicer, placer, ptr::null(), o, e));
        ctxpack_scorer_free(scorer);
        ctxpack_slicer_free(slicer);
        ctxpack_placer_free(placer);
        let (max, target) = w.budget(specs);
        let desc = ctxpack_budget_desc {
            struct_size: std::mem::size_of::<ctxpack_budget_desc>(),
            max_tokens: max,
            target_tokens: target,
            output_reserve: 0,
            slots: ptr::null(),
            slot_count: 0,
            estimation_safety_margin_percent: 0.0,
        };
        let budget = make(|o, e| ctxpack_budget_new(&desc, o, e));
        CtxSetup { pipeline, budget }
    }
}

/// One complete ctxpack run as a C host does it; the selected indices or the error.
fn ctx_run(setup: &CtxSetup, descs: &Descs, trace: i32) -> Result<Vec<usize>, String> {
    ctx_run_marked(setup, descs, trace, &mut || {})
}

/// The times of a run's phases, for the phase split: `push` is `ctxpack_items_new` and
/// `ctxpack_items_push_many`, `run` is `ctxpack_pipeline_run`, `read` copies the indices
/// out, `free` is `ctxpack_result_free` and `ctxpack_items_free`.
#[derive(Debug, Clone, Copy, Default)]
struct Phases {
    push: Duration,
    run: Duration,
    read: Duration,
    free: Duration,
}

/// [`ctx_run`], timing each phase (the clock is read five times, so the total of the
/// phases is a little above an unmarked run's).
fn ctx_run_phased(setup: &CtxSetup, descs: &Descs, trace: i32) -> Phases {
    let mut marks = [0u64; 5];
    let mut next = 1;
    marks[0] = clock_ns();
    black_box(
        ctx_run_marked(setup, descs, trace, &mut || {
            marks[next] = clock_ns();
            next += 1;
        })
        .ok(),
    );
    let span = |a: usize| Duration::from_nanos(marks[a + 1].saturating_sub(marks[a]));
    Phases {
        push: span(0),
        run: span(1),
        read: span(2),
        free: span(3),
    }
}

/// [`ctx_run`], calling `mark` after each phase (push, run, read, free); a failed push or
/// run skips the later phases' marks.
fn ctx_run_marked(
    setup: &CtxSetup,
    descs: &Descs,
    trace: i32,
    mark: &mut impl FnMut(),
) -> Result<Vec<usize>, String> {
    // SAFETY (whole body): handles are live, arrays valid for their lengths.
    unsafe {
        let items = make(|o, e| ctxpack_items_new(o, e));
        let mut error = ptr::null_mut();
        let pushed = ok(
            ctxpack_items_push_many(items, descs.descs.as_ptr(), descs.descs.len(), &mut error),
            error,
        );
        mark();
        let options = run_options(trace);
        let mut result = ptr::null_mut();
        let mut error = ptr::null_mut();
        let outcome = pushed.and_then(|()| {
            ok(
                ctxpack_pipeline_run(
                    setup.pipeline,
                    items,
                    setup.budget,
                    options_ptr(&options),
                    &mut result,
                    &mut error,
                ),
                error,
            )
        });
        let selection = outcome.map(|()| {
            mark();
            let indices = read_indices(result);
            mark();
            ctxpack_result_free(result);
            indices
        });
        ctxpack_items_free(items);
        if selection.is_ok() {
            mark();
        }
        selection
    }
}

/// One complete one-shot run as a C host does it: `ctxpack_pipeline_run_descs` over the
/// descriptors, the indices copied out, `ctxpack_result_free`.
fn ctx_run_oneshot(setup: &CtxSetup, descs: &Descs, trace: i32) -> Result<Vec<usize>, String> {
    let options = run_options(trace);
    let mut result = ptr::null_mut();
    let mut error = ptr::null_mut();
    // SAFETY: live handles, a descriptor array valid for its length.
    unsafe {
        ok(
            ctxpack_pipeline_run_descs(
                setup.pipeline,
                descs.descs.as_ptr(),
                descs.descs.len(),
                setup.budget,
                options_ptr(&options),
                &mut result,
                &mut error,
            ),
            error,
        )?;
        let indices = read_indices(result);
        ctxpack_result_free(result);
        Ok(indices)
    }
}

/// One one-shot run into a kept result, as a C host that reuses its result does it:
/// `ctxpack_pipeline_run_descs_into` with `*result` (NULL the first time), the indices
/// copied out; the result stays for the next run (`ctxpack_result_free` once at the end).
fn ctx_run_into(
    setup: &CtxSetup,
    descs: &Descs,
    trace: i32,
    result: &mut *mut ctxpack_result,
) -> Result<Vec<usize>, String> {
    let options = run_options(trace);
    let mut error = ptr::null_mut();
    // SAFETY: live handles, a descriptor array valid for its length, `*result` NULL or
    // the result of the previous call.
    unsafe {
        ok(
            ctxpack_pipeline_run_descs_into(
                setup.pipeline,
                descs.descs.as_ptr(),
                descs.descs.len(),
                setup.budget,
                options_ptr(&options),
                result,
                &mut error,
            ),
            error,
        )?;
        Ok(read_indices(*result))
    }
}

/// Run options with `trace` as the trace detail; none (NULL options) when `trace` is 0.
fn run_options(trace: i32) -> Option<ctxpack_run_options> {
    (trace != 0).then_some(ctxpack_run_options {
        struct_size: std::mem::size_of::<ctxpack_run_options>(),
        on_overflow: None,
        overflow_user_data: ptr::null_mut(),
        trace_detail: trace,
        reserved: [0; 4],
        cancel: ptr::null(),
    })
}

/// The options argument of a run: NULL for none.
fn options_ptr(options: &Option<ctxpack_run_options>) -> *const ctxpack_run_options {
    options.as_ref().map_or(ptr::null(), |o| o as *const _)
}

/// The placed indices of a live result, copied out.
///
/// # Safety
/// `result` is a live result handle.
unsafe fn read_indices(result: *const ctxpack_result) -> Vec<usize> {
    let (mut p, mut len) = (ptr::null(), 0usize);
    // SAFETY: a live handle and writable out-parameters; the array lives as long as it.
    unsafe {
        ok(
            ctxpack_result_indices(result, &mut p, &mut len),
            ptr::null_mut(),
        )
        .expect("indices");
        std::slice::from_raw_parts(p, len).to_vec()
    }
}

// ---------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------

fn ref_pipeline(w: Workload) -> cupel::Pipeline {
    use cupel::*;
    let composite = |children: Vec<(Box<dyn Scorer>, f64)>| -> Box<dyn Scorer> {
        Box::new(CompositeScorer::new(children).expect("composite"))
    };
    let chat = || {
        composite(vec![
            (Box::new(RecencyScorer), 3.0),
            (Box::new(KindScorer::with_default_weights()), 1.0),
        ])
    };
    let (scorer, slicer, placer): (Box<dyn Scorer>, Box<dyn Slicer>, Box<dyn Placer>) = match w {
        Workload::Agent => (
            composite(vec![
                (Box::new(RecencyScorer), 2.0),
                (Box::new(PriorityScorer), 1.0),
                (Box::new(KindScorer::with_default_weights()), 1.0),
                (
                    Box::new(
                        TagScorer::new(
                            AGENT_TAGS
                                .iter()
                                .map(|&(tag, weight)| (tag.to_string(), weight))
                                .collect(),
                        )
                        .expect("tag scorer"),
                    ),
                    1.0,
                ),
                (Box::new(ReflexiveScorer), 1.0),
            ]),
            Box::new(GreedySlice),
            Box::new(ChronologicalPlacer),
        ),
        Workload::Chat | Workload::ChatTraced => {
            (chat(), Box::new(GreedySlice), Box::new(ChronologicalPlacer))
        }
        Workload::Rag => (
            composite(vec![
                (Box::new(ReflexiveScorer), 3.0),
                (Box::new(KindScorer::with_default_weights()), 1.0),
                (Box::new(FrequencyScorer), 1.0),
            ]),
            Box::new(GreedySlice),
            Box::new(UShapedPlacer),
        ),
        Workload::Knapsack(q) => (
            composite(vec![
                (Box::new(PriorityScorer), 1.0),
                (Box::new(RecencyScorer), 1.0),
            ]),
            Box::new(KnapsackSlice::new(q).expect("knapsack")),
            Box::new(ChronologicalPlacer),
        ),
        Workload::Quota => {
            let entries = QUOTAS
                .iter()
                .map(|&(k, r, c)| QuotaEntry::new(ContextKind::new(k).unwrap(), r, c).unwrap())
                .collect();
            (
                chat(),
                Box::new(QuotaSlice::new(entries, Box::new(GreedySlice)).expect("quota")),
                Box::new(ChronologicalPlacer),
            )
        }
    };
    Pipeline::builder()
        .scorer(scorer)
        .slicer(slicer)
        .placer(placer)
        .build()
        .expect("reference pipeline")
}

fn ref_budget(w: Workload, specs: &[Spec]) -> cupel::ContextBudget {
    let (max, target) = w.budget(specs);
    cupel::ContextBudget::new(max, target, 0, HashMap::new(), 0.0).expect("budget")
}

fn ref_items(specs: &[Spec]) -> Vec<cupel::ContextItem> {
    specs
        .iter()
        .map(|s| {
            let mut b = cupel::ContextItemBuilder::new(s.content.clone(), s.tokens)
                .kind(cupel::ContextKind::new(s.kind).unwrap())
                .source(cupel::ContextSource::new(s.source).unwrap());
            if let Some(p) = s.priority {
                b = b.priority(p);
            }
            if !s.tags.is_empty() {
                b = b.tags(s.tags.clone());
            }
            if let Some(t) = s.timestamp {
                b = b.timestamp(chrono::DateTime::<chrono::Utc>::from_timestamp_nanos(t));
            }
            if let Some(h) = s.hint {
                b = b.future_relevance_hint(h);
            }
            b.build().expect("reference item")
        })
        .collect()
}

/// One complete reference run; the selected contents or the error.
fn ref_run(
    pipeline: &cupel::Pipeline,
    budget: &cupel::ContextBudget,
    specs: &[Spec],
    traced: bool,
) -> Result<Vec<String>, String> {
    let items = ref_items(specs);
    let out = if traced {
        let mut collector = cupel::DiagnosticTraceCollector::new(cupel::TraceDetailLevel::Item);
        let r = pipeline.run_traced(&items, budget, &mut collector);
        black_box(collector.into_report());
        r
    } else {
        pipeline.run(&items, budget)
    };
    out.map(|sel| sel.iter().map(|i| i.content().to_owned()).collect())
        .map_err(|e| format!("{e:?}"))
}

// ---------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
fn thread_cpu_ns() -> u64 {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; the clock id exists on Linux.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Which clock the samples use (see `--wall`).
static WALL: AtomicBool = AtomicBool::new(false);

/// The clock the samples use, in nanoseconds: thread CPU time, or with `--wall`
/// nanoseconds since the first call.
fn clock_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    if WALL.load(Relaxed) {
        return START.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    }
    thread_cpu_ns()
}

/// Times one call: thread CPU time by default (stable on a shared machine; equal to
/// wall time for this single-threaded work when the machine is idle), or wall time.
fn time<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    if WALL.load(Relaxed) {
        let start = Instant::now();
        let r = f();
        return (r, start.elapsed());
    }
    let start = thread_cpu_ns();
    let r = f();
    (r, Duration::from_nanos(thread_cpu_ns() - start))
}

/// The floor: the time to sort `n` `(f64, u32)` keys once by score descending, then
/// index (the pipeline's Sort order), with the standard library's unstable sort: the
/// least a selection needs. Sampled alternately with the runs of the same row, so it sees
/// the same machine conditions. Small sorts are timed in batches of fresh copies (sorted
/// one after another inside one measurement) so the clock's own cost does not count.
struct Floor {
    keys: Vec<(f64, u32)>,
    batch: Vec<Vec<(f64, u32)>>,
}

impl Floor {
    fn new(n: usize) -> Self {
        let mut rng = Rng::new(n as u64 ^ 0xF100);
        let keys: Vec<(f64, u32)> = (0..n).map(|i| (rng.unit(), i as u32)).collect();
        let copies = (20_000 / n.max(1)).max(1);
        Self {
            batch: vec![keys.clone(); copies],
            keys,
        }
    }

    fn sample(&mut self) -> Duration {
        for copy in &mut self.batch {
            copy.copy_from_slice(&self.keys);
        }
        let batch = &mut self.batch;
        let ((), d) = time(|| {
            for copy in batch.iter_mut() {
                copy.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            }
            black_box(&batch);
        });
        d / self.batch.len() as u32
    }
}

fn fmt_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn fmt_bytes(b: usize) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

struct Options {
    sizes: Vec<usize>,
    /// The agent workload also runs at N = 1 000 000 (ctxpack only), unless `--sizes`
    /// chose the sizes.
    agent_million: bool,
    workloads: Vec<Workload>,
    /// Workload 6: the grouped chat rows (Rust API, grouped against plain).
    groups: bool,
    /// Workload 7: the variant rows (Rust API, with against without variants).
    variants: bool,
    ref_limit: f64,
    alloc_log: bool,
    /// Seconds of ctxpack samples per row (the reference gets at most as many samples).
    ctx_budget: f64,
    ref_budget: f64,
    /// Loop the first workload at the first size for this many seconds (for perf).
    profile: Option<f64>,
    /// With `profile`: evict the caches before every run by writing this many MiB.
    cold: Option<usize>,
    /// With `profile`: loop the one-shot run instead of the list run.
    oneshot: bool,
    /// With `profile`: loop the one-shot run into a reused result instead.
    into: bool,
    /// With `profile`: a reference run (untimed) before every run, as in the table's rows.
    after_ref: bool,
    /// With `profile`: a list run (untimed) before every run, as the one-shot runs of the
    /// table's agent rows have.
    after_list: bool,
}

impl Options {
    /// The sizes `w` runs at.
    fn sizes_for(&self, w: Workload) -> Vec<usize> {
        let mut sizes = self.sizes.clone();
        if w == Workload::Agent && self.agent_million {
            sizes.push(1_000_000);
        }
        sizes
    }
}

fn parse_options() -> Options {
    let mut o = Options {
        sizes: vec![100, 1_000, 10_000, 100_000],
        agent_million: true,
        workloads: vec![
            Workload::Agent,
            Workload::Chat,
            Workload::Rag,
            Workload::Knapsack(100),
            Workload::Knapsack(10),
            Workload::Quota,
            Workload::ChatTraced,
        ],
        groups: true,
        variants: true,
        ref_limit: 60.0,
        alloc_log: false,
        ctx_budget: 1.5,
        ref_budget: 6.0,
        profile: None,
        cold: None,
        oneshot: false,
        into: false,
        after_ref: false,
        after_list: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--sizes" => {
                o.sizes = value()
                    .split(',')
                    .map(|s| s.trim().parse().expect("size"))
                    .collect();
                o.agent_million = false;
                i += 1;
            }
            "--workloads" => {
                let list = value();
                o.groups = list.split(',').any(|s| s.trim() == "6");
                o.variants = list.split(',').any(|s| s.trim() == "7");
                o.workloads = list
                    .split(',')
                    .filter(|s| !matches!(s.trim(), "6" | "7"))
                    .map(|s| match s.trim() {
                        "0" => Workload::Agent,
                        "1" => Workload::Chat,
                        "2" => Workload::Rag,
                        "3" => Workload::Knapsack(100),
                        "3b" => Workload::Knapsack(10),
                        "4" => Workload::Quota,
                        "5" => Workload::ChatTraced,
                        other => panic!("unknown workload {other}"),
                    })
                    .collect();
                i += 1;
            }
            "--ref-limit" => {
                o.ref_limit = value().parse().expect("seconds");
                i += 1;
            }
            "--quick" => {
                o.ctx_budget = 0.3;
                o.ref_budget = 1.0;
            }
            "--alloc-log" => o.alloc_log = true,
            "--cold" => {
                // An optional size in MiB (8 unless given).
                match value().parse() {
                    Ok(mib) => {
                        o.cold = Some(mib);
                        i += 1;
                    }
                    Err(_) => o.cold = Some(8),
                }
            }
            "--oneshot" => o.oneshot = true,
            "--into" => o.into = true,
            "--after-ref" => o.after_ref = true,
            "--after-list" => o.after_list = true,
            "--no-ref" => o.ref_limit = -1.0,
            "--wall" => WALL.store(true, Relaxed),
            "--profile" => {
                o.profile = Some(value().parse().expect("seconds"));
                i += 1;
            }
            _ => {} // `--bench` and the like, passed by cargo
        }
        i += 1;
    }
    o
}

/// One table row.
struct Row {
    workload: Workload,
    n: usize,
    /// Median time of a complete run (to the refusal, when ctxpack refuses).
    ctx: Duration,
    ctx_samples: usize,
    reference: RefOutcome,
    floor: Duration,
    peak: usize,
    input: usize,
    same: &'static str,
    /// Workload 5: the untraced median measured alongside.
    untraced: Option<Duration>,
    ctx_error: Option<String>,
    /// Allocations of one complete ctxpack run.
    allocations: usize,
    /// Allocations of its phases: push, run, read, free (`None` when the run failed).
    phase_allocations: Option<[usize; 4]>,
    /// Medians of the phases (sampled on their own runs, alternately with the others).
    phases: Phases,
    /// The share of the items and of their tokens that the ctxpack run placed.
    selected: Option<(f64, f64)>,
    /// The agent workload: the one-shot run (`ctxpack_pipeline_run_descs`).
    oneshot: Option<OneShot>,
}

/// The one-shot run of a row, measured alongside the list runs.
struct OneShot {
    /// Median of run + read + free.
    median: Duration,
    /// The allocations and the peak added memory of the pipeline's first one-shot run.
    allocations: usize,
    peak: usize,
    /// The bytes the pipeline keeps after that run (its one-shot working memory).
    kept: usize,
    /// The allocations and the peak added memory of the next one-shot run.
    next_allocations: usize,
    next_peak: usize,
    /// Whether it placed what the list run placed.
    same: bool,
    /// The run into a kept result (`ctxpack_pipeline_run_descs_into`): median of run +
    /// read, the allocations of a third run into it, the bytes the result holds then, and
    /// whether it placed what the list run placed.
    into_median: Duration,
    into_allocations: usize,
    into_held: usize,
    into_same: bool,
}

enum RefOutcome {
    Ran { median: Duration, samples: usize },
    Failed { after: Duration, error: String },
    Skipped { estimate: f64 },
}

/// Compares ctxpack's placed indices with the reference's placed contents (contents are unique in
/// every workload). The reference crate places the sliced items in its slicer's output order before
/// the placer runs, and the chronological placer keeps that order among items without a timestamp
/// ("yes¹") and among items with equal timestamps ("yes²"), where ctxpack keeps its merged
/// list's order (decision D2 in docs/decisions.md); that difference is named rather than
/// reported as a disagreement.
fn compare_selection(ctx: &[usize], reference: &[String], specs: &[Spec]) -> &'static str {
    let by_content: HashMap<&str, usize> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (s.content.as_str(), i))
        .collect();
    let theirs: Vec<usize> = reference.iter().map(|c| by_content[c.as_str()]).collect();
    if theirs == ctx {
        return "yes";
    }
    let (mut a, mut b) = (theirs, ctx.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    if a != b {
        return "DIFFERENT";
    }
    let timed = |v: &[usize]| -> Vec<usize> {
        v.iter()
            .copied()
            .filter(|&i| specs[i].timestamp.is_some())
            .collect()
    };
    let untimed_tail = |v: &[usize]| {
        v.iter()
            .skip_while(|&&i| specs[i].timestamp.is_some())
            .all(|&i| specs[i].timestamp.is_none())
    };
    let theirs: Vec<usize> = reference.iter().map(|c| by_content[c.as_str()]).collect();
    if timed(&theirs) == timed(ctx) && untimed_tail(&theirs) && untimed_tail(ctx) {
        return "yes¹";
    }
    // The same order of timestamps: the two differ only among items sharing a timestamp,
    // which the reference orders as its slicer returned them and ctxpack as its merged
    // list has them (the same decision).
    let stamps =
        |v: &[usize]| -> Vec<Option<i64>> { v.iter().map(|&i| specs[i].timestamp).collect() };
    if stamps(&theirs) == stamps(ctx) && untimed_tail(&theirs) && untimed_tail(ctx) {
        "yes²"
    } else {
        "same set, other order"
    }
}

/// The largest N the reference runs at (a million items is for ctxpack only).
const REF_MAX_N: usize = 100_000;

fn measure(w: Workload, n: usize, o: &Options, last_ref: &mut Option<(usize, f64)>) -> Row {
    let mut floor = Floor::new(n);
    let specs = w.items(n);
    let descs = descriptors(&specs);
    let setup = ctx_setup(w, &specs);
    let trace = if w == Workload::ChatTraced { 2 } else { 0 };
    let traced = w == Workload::ChatTraced;
    let ref_pipe = ref_pipeline(w);
    let ref_budget = ref_budget(w, &specs);

    // Memory, on a separate untimed run (warms up as well).
    // Allocations per phase: the running count read after each phase.
    let mut counts = Vec::with_capacity(4);
    let (first, stats) = counted(|| {
        ctx_run_marked(&setup, &descs, trace, &mut || {
            counts.push(COUNT.load(Relaxed));
        })
    });
    let phase_allocations = (counts.len() == 4).then(|| {
        [
            counts[0],
            counts[1] - counts[0],
            counts[2] - counts[1],
            counts[3] - counts[2],
        ]
    });
    let (ctx_out, t0) = time(|| ctx_run(&setup, &descs, trace));
    let ctx_samples_target = ((o.ctx_budget / t0.as_secs_f64().max(1e-7)) as usize).clamp(5, 2001);

    // Reference: skip when the quadratic estimate from the previous size is too long.
    let estimate = last_ref.map(|(m, secs)| secs * (n as f64 / m as f64).powi(2));
    let mut reference = match estimate {
        _ if o.ref_limit < 0.0 || n > REF_MAX_N => RefOutcome::Skipped { estimate: f64::NAN },
        Some(e) if e > o.ref_limit => RefOutcome::Skipped { estimate: e },
        _ => RefOutcome::Ran {
            median: Duration::ZERO,
            samples: 0,
        },
    };
    let mut ref_samples = Vec::new();
    let mut ref_selection = None;
    let mut ref_reps = 0;
    if let RefOutcome::Ran { .. } = reference {
        let (r, d) = time(|| ref_run(&ref_pipe, &ref_budget, &specs, traced));
        *last_ref = Some((n, d.as_secs_f64()));
        match r {
            Ok(sel) => {
                ref_selection = Some(sel);
                if d.as_secs_f64() < 0.2 {
                    // that one was a warm-up
                } else {
                    ref_samples.push(d);
                }
                ref_reps = ((o.ref_budget / d.as_secs_f64().max(1e-7)) as usize)
                    .clamp(1, ctx_samples_target);
            }
            Err(error) => reference = RefOutcome::Failed { after: d, error },
        }
    }

    let mut ctx_samples = vec![t0];
    let mut floor_samples = vec![floor.sample()];
    let mut untraced_samples = Vec::new();
    let mut phase_samples = vec![ctx_run_phased(&setup, &descs, trace)];
    // The one-shot run, on the agent workload: memory first (of the pipeline's first
    // one-shot run, which may leave the pipeline holding its working memory, and of the
    // next), then samples alternately.
    let oneshot_first = (w == Workload::Agent).then(|| {
        let (placed, cold) = counted(|| ctx_run_oneshot(&setup, &descs, trace));
        let (_, next) = counted(|| black_box(ctx_run_oneshot(&setup, &descs, trace).ok()));
        (placed, cold, next)
    });
    let mut oneshot_samples = Vec::new();
    // The run into a kept result: made by two untimed runs, then a third counted.
    let mut kept = ptr::null_mut();
    let into_first = oneshot_first.is_some().then(|| {
        let ((), made) = counted(|| {
            for _ in 0..2 {
                black_box(ctx_run_into(&setup, &descs, trace, &mut kept).ok());
            }
        });
        let (placed, third) = counted(|| ctx_run_into(&setup, &descs, trace, &mut kept));
        (placed, third.count, made.held.max(0) as usize)
    });
    let mut into_samples = Vec::new();
    let reps = ctx_samples_target.max(ref_reps);
    for i in 0..reps {
        if i < ctx_samples_target {
            // The timed run comes first after the previous round's reference run, whose
            // memory traffic leaves the caches cold, as a host's other work does. With a
            // one-shot row (or a traced row), the list run and the one-shot run (or the
            // untraced run) take turns in that place, so that both are timed under the
            // same conditions; each then has half the samples.
            if oneshot_first.is_some() && i % 3 == 1 {
                let (r, d) = time(|| ctx_run_oneshot(&setup, &descs, trace));
                black_box(r.ok());
                oneshot_samples.push(d);
            } else if oneshot_first.is_some() && i % 3 == 2 {
                let (r, d) = time(|| ctx_run_into(&setup, &descs, trace, &mut kept));
                black_box(r.ok());
                into_samples.push(d);
            } else if traced && i % 2 == 1 {
                let (r, d) = time(|| ctx_run(&setup, &descs, 0));
                black_box(r.ok());
                untraced_samples.push(d);
            } else {
                let (r, d) = time(|| ctx_run(&setup, &descs, trace));
                black_box(r.ok());
                ctx_samples.push(d);
            }
            floor_samples.push(floor.sample());
            // Every other round, a run timed phase by phase (after the timed run, so with
            // warmer caches: at small N the phases add up to less than a complete run).
            if i % 2 == 1 {
                phase_samples.push(ctx_run_phased(&setup, &descs, trace));
            }
        }
        if ref_samples.len() < ref_reps && matches!(reference, RefOutcome::Ran { .. }) {
            let (r, d) = time(|| ref_run(&ref_pipe, &ref_budget, &specs, traced));
            black_box(r.ok());
            ref_samples.push(d);
        }
    }
    if let RefOutcome::Ran { .. } = reference {
        let samples = ref_samples.len();
        reference = RefOutcome::Ran {
            median: median(&mut ref_samples),
            samples,
        };
    }
    let same = match (&first, &ref_selection) {
        (Ok(c), Some(r)) => compare_selection(c, r, &specs),
        _ => "—",
    };
    let ctx_error = ctx_out.err();
    let selected = first.as_ref().ok().map(|placed| {
        let total: i64 = specs.iter().map(|s| s.tokens).sum();
        let tokens: i64 = placed.iter().map(|&i| specs[i].tokens).sum();
        (placed.len() as f64 / n as f64, tokens as f64 / total as f64)
    });
    let phase = |f: fn(&Phases) -> Duration| {
        let mut v: Vec<Duration> = phase_samples.iter().map(f).collect();
        median(&mut v)
    };
    let phases = Phases {
        push: phase(|p| p.push),
        run: phase(|p| p.run),
        read: phase(|p| p.read),
        free: phase(|p| p.free),
    };
    // SAFETY: NULL or the result of the last run into it.
    unsafe { ctxpack_result_free(kept) };
    let oneshot = oneshot_first.zip(into_first).map(
        |((placed, cold, next), (into_placed, into_allocations, into_held))| OneShot {
            median: median(&mut oneshot_samples),
            allocations: cold.count,
            peak: cold.peak,
            // What the first run left allocated, less the indices it returned.
            kept: (cold.held.max(0) as usize)
                .saturating_sub(placed.as_ref().map_or(0, |p| size_of_val(p.as_slice()))),
            next_allocations: next.count,
            next_peak: next.peak,
            same: placed.ok() == first.as_ref().ok().cloned(),
            into_median: median(&mut into_samples),
            into_allocations,
            into_held,
            into_same: into_placed.ok() == first.as_ref().ok().cloned(),
        },
    );
    Row {
        workload: w,
        n,
        ctx: median(&mut ctx_samples),
        ctx_samples: ctx_samples.len(),
        reference,
        floor: median(&mut floor_samples),
        peak: stats.peak,
        input: descs.input_bytes,
        same,
        untraced: (!untraced_samples.is_empty()).then(|| median(&mut untraced_samples)),
        ctx_error,
        allocations: stats.count,
        phase_allocations,
        phases,
        selected,
        oneshot,
    }
}

fn print_row(r: &Row) {
    let refused = r.ctx_error.is_some();
    let ctx = if refused {
        format!("refused after {}", fmt_time(r.ctx))
    } else {
        fmt_time(r.ctx)
    };
    let (reference, ratio) = match &r.reference {
        RefOutcome::Ran { median, .. } => (
            fmt_time(*median),
            if refused {
                "—".into()
            } else {
                format!("{:.1}×", median.as_secs_f64() / r.ctx.as_secs_f64())
            },
        ),
        RefOutcome::Failed { after, error } => (
            format!("{} after {}", short_error(error), fmt_time(*after)),
            "—".into(),
        ),
        RefOutcome::Skipped { estimate } if estimate.is_nan() => ("not run".into(), "—".into()),
        RefOutcome::Skipped { estimate } => (format!("skipped (est. {estimate:.0} s)"), "—".into()),
    };
    let floor_mult = if refused {
        "—".into()
    } else {
        format!("{:.1}×", r.ctx.as_secs_f64() / r.floor.as_secs_f64())
    };
    let mut notes = String::new();
    if let (Workload::Agent, Some((items, tokens))) = (r.workload, r.selected) {
        let _ = write!(
            notes,
            "placed {:.1} % of the items, {:.1} % of the tokens",
            items * 100.0,
            tokens * 100.0
        );
    }
    if let Some(u) = r.untraced {
        let _ = write!(
            notes,
            "untraced {}, traced / untraced {:.2}×",
            fmt_time(u),
            r.ctx.as_secs_f64() / u.as_secs_f64()
        );
    }
    if let Some(e) = &r.ctx_error {
        let _ = write!(
            notes,
            "{}",
            e.trim_start_matches("CTXPACK_TABLE_TOO_LARGE: ")
        );
    }
    println!(
        "| {} {} | {} | {} | {} | {} | {} | {} | {} | {:.2}× | {} | {} | {} |",
        r.workload.id(),
        r.workload.name(),
        fmt_n(r.n),
        ctx,
        reference,
        ratio,
        fmt_time(r.floor),
        floor_mult,
        fmt_bytes(r.peak),
        r.peak as f64 / r.input as f64,
        r.allocations,
        r.same,
        notes
    );
    let ref_samples = match r.reference {
        RefOutcome::Ran { samples, .. } => samples,
        _ => 0,
    };
    eprintln!(
        "  [{} {}: {} ctxpack samples, {} reference samples, input {}]",
        r.workload.id(),
        r.n,
        r.ctx_samples,
        ref_samples,
        fmt_bytes(r.input)
    );
}

/// The phase split of every ctxpack row: medians of each phase, measured on their own
/// runs (sampled alternately with the complete runs of the row).
fn print_phases(rows: &[Row]) {
    println!();
    println!("Phase split of the ctxpack runs (C ABI; medians of each phase; push = ctxpack_items_new + ctxpack_items_push_many, run = ctxpack_pipeline_run, read = ctxpack_result_indices and the host's copy of the indices, whose allocation is the phase's one, free = ctxpack_result_free + ctxpack_items_free; allocations counted on the untimed memory run)");
    println!();
    println!("| workload | N | push | run | read | free | push share | allocations: push / run / read / free | one-shot (run + read + free) | list / one-shot | one-shot allocations: first / next run | one-shot peak / input: first / next run | kept by the pipeline / input | run into a kept result (run + read) | list / kept | kept allocations (third run, the host's copy of the indices included) | kept result's bytes / input |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows.iter().filter(|r| r.ctx_error.is_none()) {
        let p = &r.phases;
        let sum = p.push + p.run + p.read + p.free;
        let oneshot = match &r.oneshot {
            Some(o) => format!(
                "{}{} | {:.2}× | {} / {} | {:.2}× / {:.2}× | {:.2}× | {}{} | {:.2}× | {} | {:.2}×",
                fmt_time(o.median),
                if o.same { "" } else { " (OTHER SELECTION)" },
                r.ctx.as_secs_f64() / o.median.as_secs_f64(),
                o.allocations,
                o.next_allocations,
                o.peak as f64 / r.input as f64,
                o.next_peak as f64 / r.input as f64,
                o.kept as f64 / r.input as f64,
                fmt_time(o.into_median),
                if o.into_same {
                    ""
                } else {
                    " (OTHER SELECTION)"
                },
                r.ctx.as_secs_f64() / o.into_median.as_secs_f64(),
                o.into_allocations,
                o.into_held as f64 / r.input as f64
            ),
            None => "— | — | — | — | — | — | — | — | —".into(),
        };
        let allocations = match r.phase_allocations {
            Some([push, run, read, free]) => format!("{push} / {run} / {read} / {free}"),
            None => "—".into(),
        };
        println!(
            "| {} {} | {} | {} | {} | {} | {} | {:.0} % | {allocations} | {oneshot} |",
            r.workload.id(),
            r.workload.name(),
            fmt_n(r.n),
            fmt_time(p.push),
            fmt_time(p.run),
            fmt_time(p.read),
            fmt_time(p.free),
            100.0 * p.push.as_secs_f64() / sum.as_secs_f64().max(1e-12)
        );
    }
}

fn short_error(e: &str) -> String {
    e.split(['{', '(']).next().unwrap_or(e).trim().to_string()
}

fn fmt_n(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Workload 6: item groups
// ---------------------------------------------------------------------------------------

/// Group keys for chat items: about 30 % of the items belong to groups of 2 or 3
/// consecutive items (a tool call and its results), keyed by their first item.
fn group_keys(n: usize) -> Vec<Option<String>> {
    let mut rng = Rng::new(0x6209 ^ n as u64);
    let mut keys = vec![None; n];
    let mut i = 0;
    while i < n {
        // A group of mean size 2.5 starts with probability p: 2.5 p / (1 + 1.5 p) = 0.3.
        if rng.chance(0.141) {
            let size = 2 + rng.below(2);
            for key in keys.iter_mut().skip(i).take(size) {
                *key = Some(format!("call_{i}"));
            }
            i += size;
        } else {
            i += 1;
        }
    }
    keys
}

/// Workload 1's pipeline built through the Rust API: recency 3 + kind 1, greedy,
/// chronological.
fn rust_chat_pipeline() -> ctxpack::Pipeline {
    use ctxpack::placer::ChronologicalPlacer;
    use ctxpack::scorer::{CompositeScorer, KindScorer, RecencyScorer};
    use ctxpack::slicer::GreedySlice;
    use std::sync::Arc;
    ctxpack::Pipeline::builder()
        .scorer(Arc::new(
            CompositeScorer::new(vec![
                (Arc::new(RecencyScorer::new()), 3.0),
                (Arc::new(KindScorer::new()), 1.0),
            ])
            .unwrap(),
        ))
        .slicer(Arc::new(GreedySlice::new()))
        .placer(Arc::new(ChronologicalPlacer::new()))
        .build()
        .unwrap()
}

/// The chat items as Rust values, with or without their group keys.
fn rust_chat_items(specs: &[Spec], keys: Option<&[Option<String>]>) -> Vec<ctxpack::ContextItem> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut b = ctxpack::ContextItem::builder(s.content.as_str(), s.tokens)
                .kind(ctxpack::ContextKind::new(s.kind).unwrap())
                .source(ctxpack::ContextSource::new(s.source).unwrap());
            if let Some(t) = s.timestamp {
                b = b.timestamp(t);
            }
            if let Some(p) = s.priority {
                b = b.priority(p);
            }
            if let Some(key) = keys.and_then(|k| k[i].as_deref()) {
                b = b.group(key);
            }
            b.build().unwrap()
        })
        .collect()
}

/// Workload 6: the chat workload (recency 3 + kind 1, greedy, chronological) with 30 % of
/// the items in groups of 2–3, against the same items without group keys. Both sides go
/// through the Rust API and each measured run builds the items, runs the pipeline and drops
/// both (the C ABI's item descriptor gains its group field with the C ABI 1.0 work).
fn group_rows(o: &Options) {
    let pipeline = rust_chat_pipeline();
    println!();
    println!("Item groups (workload 6): chat with 30 % of the items in groups of 2–3, Rust API, build + run + drop");
    println!();
    println!("| N | grouped items | groups | plain chat | grouped chat | grouped / plain | groups placed whole |");
    println!("|---|---|---|---|---|---|---|");
    for &n in &o.sizes {
        let specs = Workload::Chat.items(n);
        let keys = group_keys(n);
        let (max, target) = budget_numbers(&specs);
        let budget = ctxpack::ContextBudget::new(max, target).unwrap();
        let run = |grouped: bool| {
            let items = rust_chat_items(&specs, grouped.then_some(keys.as_slice()));
            let selection = pipeline.run(&items, &budget).unwrap();
            (items, selection)
        };
        // Check once, untimed: every group all in or all out, members adjacent.
        let (items, selection) = run(true);
        let whole = groups_whole(&items, &selection.indices);
        drop((items, selection));
        let (_, first) = time(|| black_box(run(false)));
        let samples = ((o.ctx_budget / first.as_secs_f64().max(1e-7)) as usize).clamp(5, 2001);
        let (mut plain, mut grouped) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            plain.push(time(|| black_box(run(false))).1);
            grouped.push(time(|| black_box(run(true))).1);
        }
        let (p, g) = (median(&mut plain), median(&mut grouped));
        let grouped_items = keys.iter().flatten().count();
        let group_count = keys
            .iter()
            .enumerate()
            .filter(|(i, k)| k.is_some() && (*i == 0 || keys[i - 1] != **k))
            .count();
        println!(
            "| {} | {} ({:.0} %) | {} | {} | {} | {:.2}× | {} |",
            fmt_n(n),
            grouped_items,
            100.0 * grouped_items as f64 / n as f64,
            group_count,
            fmt_time(p),
            fmt_time(g),
            g.as_secs_f64() / p.as_secs_f64(),
            if whole { "yes" } else { "NO" }
        );
        eprintln!("  [6 {n}: {samples} samples each]");
    }
}

// ---------------------------------------------------------------------------------------
// Workload 7: item variants
// ---------------------------------------------------------------------------------------

/// The items of `specs` as Rust values, about 30 % of them with two cheaper forms: a
/// summary (a third of the tokens, quality 0.6) and a stub (a tenth, quality 0.2).
fn items_with_variants(specs: &[Spec]) -> Vec<ctxpack::ContextItem> {
    let mut rng = Rng::new(0x7a7 ^ specs.len() as u64);
    let plain = rust_chat_items(specs, None);
    plain
        .into_iter()
        .zip(specs)
        .map(|(item, s)| {
            if !rng.chance(0.3) {
                return item;
            }
            let summary = &s.content[..s.content.len() / 3];
            let mut b = ctxpack::ContextItem::builder(s.content.as_str(), s.tokens)
                .kind(item.kind().clone())
                .source(item.source().clone())
                .variant(format!("{summary} [summary]"), (s.tokens / 3).max(1), 0.6)
                .variant(
                    format!("{} [stub]", &s.content[..12]),
                    (s.tokens / 10).max(1),
                    0.2,
                );
            if let Some(t) = s.timestamp {
                b = b.timestamp(t);
            }
            if let Some(p) = s.priority {
                b = b.priority(p);
            }
            b.build().unwrap()
        })
        .collect()
}

/// Workload 3's pipeline through the Rust API: priority + recency, knapsack with
/// `bucket` tokens per capacity unit, chronological.
fn rust_knapsack_pipeline(bucket: i64) -> ctxpack::Pipeline {
    use ctxpack::placer::ChronologicalPlacer;
    use ctxpack::scorer::{CompositeScorer, PriorityScorer, RecencyScorer};
    use ctxpack::slicer::KnapsackSlice;
    use std::sync::Arc;
    ctxpack::Pipeline::builder()
        .scorer(Arc::new(
            CompositeScorer::new(vec![
                (Arc::new(PriorityScorer::new()), 1.0),
                (Arc::new(RecencyScorer::new()), 1.0),
            ])
            .unwrap(),
        ))
        .slicer(Arc::new(KnapsackSlice::new(bucket).unwrap()))
        .placer(Arc::new(ChronologicalPlacer::new()))
        .build()
        .unwrap()
}

/// Workload 7, cost: the chat (greedy) and knapsack workloads with 30 % of the items
/// carrying two cheaper forms, against the same items without them. Items are built once;
/// a measured run is `Pipeline::run` on them (Rust API: the C ABI's descriptor gains
/// variants later).
fn variant_rows(o: &Options) {
    println!();
    println!("Variants (workload 7): 30 % of the items with two cheaper forms (a third of the tokens at quality 0.6, a tenth at 0.2), Rust API, run only");
    println!();
    println!("| N | workload | items with variants | without variants | with variants | with / without | placed below full form |");
    println!("|---|---|---|---|---|---|---|");
    for &n in &o.sizes {
        for (label, w, pipeline) in [
            ("1 chat, greedy", Workload::Chat, rust_chat_pipeline()),
            (
                "3 knapsack, bucket 100",
                Workload::Knapsack(100),
                rust_knapsack_pipeline(100),
            ),
            (
                "3b knapsack, bucket 10",
                Workload::Knapsack(10),
                rust_knapsack_pipeline(10),
            ),
        ] {
            let specs = w.items(n);
            let (max, target) = budget_numbers(&specs);
            let budget = ctxpack::ContextBudget::new(max, target).unwrap();
            let plain = rust_chat_items(&specs, None);
            let varied = items_with_variants(&specs);
            let with_variants = varied.iter().filter(|i| i.has_variants()).count();
            let share = 100.0 * with_variants as f64 / n as f64;
            // A knapsack whose table is over the memory guard refuses (decision D11): a row
            // that says so, not a panic.
            let selection = match pipeline
                .run(&plain, &budget)
                .and_then(|_| pipeline.run(&varied, &budget))
            {
                Ok(selection) => selection,
                Err(e) => {
                    println!(
                        "| {} | {label} | {with_variants} ({share:.0} %) | refuses: {:?} | | | |",
                        fmt_n(n),
                        e.code()
                    );
                    continue;
                }
            };
            let downgraded = selection.forms.iter().filter(|&&f| f != 0).count();
            let (_, first) = time(|| black_box(pipeline.run(&varied, &budget)));
            let samples = ((o.ctx_budget / first.as_secs_f64().max(1e-7)) as usize).clamp(5, 2001);
            let (mut without, mut with) = (Vec::new(), Vec::new());
            for _ in 0..samples {
                without.push(time(|| black_box(pipeline.run(&plain, &budget))).1);
                with.push(time(|| black_box(pipeline.run(&varied, &budget))).1);
            }
            let (a, b) = (median(&mut without), median(&mut with));
            println!(
                "| {} | {label} | {} ({:.0} %) | {} | {} | {:.2}× | {downgraded} of {} |",
                fmt_n(n),
                with_variants,
                share,
                fmt_time(a),
                fmt_time(b),
                b.as_secs_f64() / a.as_secs_f64(),
                selection.indices.len(),
            );
            eprintln!("  [7 {label} {n}: {samples} samples each]");
        }
    }
}

/// Workload 7, value: the bundled agent transcript with summaries of its tool outputs
/// (`examples/data/agent-variants.jsonl`) at several budgets, with its variants and with
/// them turned off (dropping instead): the sum of score × quality of the placed forms.
fn variant_value_rows() {
    use ctxpack::policy::{KnapsackSpec, Policy, SlicerSpec};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/agent-variants.jsonl"
    );
    let items = ctxpack::model::read_items(&std::fs::read_to_string(path).unwrap()).unwrap();
    let total: i64 = items.iter().map(|i| i.tokens()).sum();
    let chat = Policy::preset("chat").unwrap();
    let knapsack = Policy {
        slicer: SlicerSpec::Knapsack(KnapsackSpec {
            bucket_size: Some(10),
            table_limit_bytes: None,
        }),
        ..chat.clone()
    };
    let policies = [
        ("chat (greedy)", chat),
        ("tool-use (greedy)", Policy::preset("tool-use").unwrap()),
        ("chat scorers, knapsack bucket 10", knapsack),
    ];
    println!();
    println!(
        "Value kept on the agent transcript (examples/data/agent-variants.jsonl, {} items, {total} tokens, 7 tool outputs with summaries): sum of score × quality of the placed forms",
        items.len()
    );
    println!();
    println!("| pipeline | budget | dropping (variants off) | with variants | gain | placed as a summary | items placed: off / on |");
    println!("|---|---|---|---|---|---|---|");
    for (label, policy) in policies {
        for budget in [600, 800, 1000, 1200, 1400, 1600, 1800] {
            let run = |on: bool| {
                let p = Policy {
                    use_variants: on,
                    ..policy.clone()
                };
                let pipeline = p.build_pipeline().unwrap();
                let budget = ctxpack::ContextBudget::new(budget, budget).unwrap();
                pipeline.run(&items, &budget).unwrap()
            };
            let value = |s: &ctxpack::Selection| -> f64 {
                (0..s.indices.len())
                    .map(|r| s.scores[r] * items[s.indices[r]].form_quality(s.form(r)))
                    .sum()
            };
            let (off, on) = (run(false), run(true));
            let (v_off, v_on) = (value(&off), value(&on));
            println!(
                "| {label} | {budget} ({:.0} %) | {v_off:.3} | {v_on:.3} | {:+.3} ({:+.1} %) | {} | {} / {} |",
                100.0 * budget as f64 / total as f64,
                v_on - v_off,
                100.0 * (v_on - v_off) / v_off,
                on.forms.iter().filter(|&&f| f != 0).count(),
                off.indices.len(),
                on.indices.len(),
            );
        }
    }
}

/// True when every group is placed whole or not at all, members adjacent in input order.
fn groups_whole(items: &[ctxpack::ContextItem], placed: &[usize]) -> bool {
    let mut rank = vec![None; items.len()];
    for (r, &i) in placed.iter().enumerate() {
        rank[i] = Some(r);
    }
    let mut members: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(g) = item.group() {
            members.entry(g).or_default().push(i);
        }
    }
    members.values().all(|m| {
        let ranks: Vec<Option<usize>> = m.iter().map(|&i| rank[i]).collect();
        ranks.iter().all(Option::is_none)
            || ranks
                .windows(2)
                .all(|w| w[0].is_some() && w[1] == w[0].map(|r| r + 1))
                && ranks[0].is_some()
    })
}

// ---------------------------------------------------------------------------------------
// Extra evidence: knapsack keep table, diagnostics allocations
// ---------------------------------------------------------------------------------------

/// The largest single allocation of one knapsack slice (the keep table on both sides),
/// measured on the same scored items through each library's slicer alone.
fn knapsack_tables(sizes: &[usize]) {
    println!();
    println!("Knapsack keep table (workload 3 items, bucket 100, one slice through each library's slicer alone)");
    println!();
    println!("| N | rows × (cap + 1) | ctxpack keep table | reference keep table | ctxpack / reference | largest allocation: ctxpack / reference |");
    println!("|---|---|---|---|---|---|");
    for &n in sizes {
        let specs = Workload::Knapsack(100).items(n);
        let (_, target) = budget_numbers(&specs);
        let cap = target / 100;
        let cells = n as u64 * (cap as u64 + 1);
        if cells > 50_000_000 {
            println!(
                "| {} | {} | — | refuses (TableTooLarge) | — | — |",
                fmt_n(n),
                cells
            );
            continue;
        }
        // Scores as the pipeline would give them do not matter for the table size.
        let mut rng = Rng::new(7);
        let scores: Vec<f64> = (0..n).map(|_| rng.unit()).collect();
        let descs = descriptors(&specs);
        // SAFETY (block): valid arrays and live handles.
        let ours = unsafe {
            let items = make(|o, e| ctxpack_items_new(o, e));
            ok(
                ctxpack_items_push_many(items, descs.descs.as_ptr(), n, ptr::null_mut()),
                ptr::null_mut(),
            )
            .unwrap();
            let slicer = make(|o, e| ctxpack_slicer_new_knapsack(100, 0, o, e));
            let (max, target) = budget_numbers(&specs);
            let desc = ctxpack_budget_desc {
                struct_size: std::mem::size_of::<ctxpack_budget_desc>(),
                max_tokens: max,
                target_tokens: target,
                output_reserve: 0,
                slots: ptr::null(),
                slot_count: 0,
                estimation_safety_margin_percent: 0.0,
            };
            let budget = make(|o, e| ctxpack_budget_new(&desc, o, e));
            let (_, stats) = counted(|| {
                let r = make(|o, e| {
                    ctxpack_slicer_slice(slicer, items, scores.as_ptr(), n, budget, o, e)
                });
                ctxpack_slice_result_free(r);
            });
            ctxpack_slicer_free(slicer);
            ctxpack_budget_free(budget);
            ctxpack_items_free(items);
            stats.largest
        };
        let theirs = {
            use cupel::Slicer as _;
            let items = ref_items(&specs);
            let scored: Vec<cupel::ScoredItem> = items
                .iter()
                .zip(&scores)
                .map(|(item, &score)| cupel::ScoredItem {
                    item: item.clone(),
                    score,
                })
                .collect();
            let slicer = cupel::KnapsackSlice::new(100).unwrap();
            let budget = ref_budget(Workload::Knapsack(100), &specs);
            let (r, stats) = counted(|| slicer.slice(&scored, &budget).map(|v| v.len()));
            r.expect("reference knapsack");
            stats.largest
        };
        // The tables as each implementation sizes them: ctxpack a bitset over the
        // candidates that can set a bit (value > 0, weight <= cap), in 64-bit words; the
        // reference a `Vec<bool>` over every positive-token candidate.
        let active = specs
            .iter()
            .zip(&scores)
            .filter(|(s, &score)| (score * 10000.0).floor() > 0.0 && (s.tokens + 99) / 100 <= cap)
            .count() as u64;
        let our_table = (active * (cap as u64 + 1)).div_ceil(64) * 8;
        let their_table = cells;
        println!(
            "| {} | {} | {} | {} | 1/{:.1} | {} / {} |",
            fmt_n(n),
            cells,
            fmt_bytes(our_table as usize),
            fmt_bytes(their_table as usize),
            their_table as f64 / our_table as f64,
            fmt_bytes(ours),
            fmt_bytes(theirs),
        );
    }
}

/// Allocations of `ctxpack_pipeline_run` alone (items already pushed): untraced, traced
/// at Item detail, and the Rust API's untraced `Pipeline::run` on the same items.
fn diagnostics_allocations(sizes: &[usize], log: bool) {
    println!();
    println!("Allocations of one chat run (workload 1) after the items are pushed");
    println!();
    println!("| N | C ABI untraced | Rust API untraced | C ABI traced (Item) |");
    println!("|---|---|---|---|");
    let rust_pipeline = rust_chat_pipeline();
    for &n in sizes {
        let specs = Workload::Chat.items(n);
        let descs = descriptors(&specs);
        let setup = ctx_setup(Workload::Chat, &specs);
        let options = ctxpack_run_options {
            struct_size: std::mem::size_of::<ctxpack_run_options>(),
            on_overflow: None,
            overflow_user_data: ptr::null_mut(),
            trace_detail: 2,
            reserved: [0; 4],
            cancel: ptr::null(),
        };
        // SAFETY (block): valid arrays and live handles.
        let (untraced, traced) = unsafe {
            let items = make(|o, e| ctxpack_items_new(o, e));
            ok(
                ctxpack_items_push_many(items, descs.descs.as_ptr(), n, ptr::null_mut()),
                ptr::null_mut(),
            )
            .unwrap();
            let run = |opts: *const ctxpack_run_options| {
                counted(|| {
                    let r = make(|o, e| {
                        ctxpack_pipeline_run(setup.pipeline, items, setup.budget, opts, o, e)
                    });
                    ctxpack_result_free(r);
                })
                .1
            };
            if log && n == 1_000 {
                LOG_LEN.store(0, Relaxed);
                LOG_ON.store(true, Relaxed);
                run(ptr::null());
                LOG_ON.store(false, Relaxed);
                let len = LOG_LEN.load(Relaxed).min(LOG.len());
                let sizes: Vec<usize> = LOG[..len].iter().map(|a| a.load(Relaxed)).collect();
                eprintln!(
                    "allocation sizes of one untraced C-ABI run at N = 1000, in order: {sizes:?}"
                );
            }
            let u = run(ptr::null());
            let t = run(&options);
            ctxpack_items_free(items);
            (u, t)
        };
        let rust_items = rust_chat_items(&specs, None);
        let budget = {
            let (max, target) = budget_numbers(&specs);
            ctxpack::ContextBudget::new(max, target).unwrap()
        };
        let (_, rust) = counted(|| black_box(rust_pipeline.run(&rust_items, &budget).unwrap()));
        println!(
            "| {} | {} allocations, {} | {} allocations, {} | {} allocations, {} |",
            fmt_n(n),
            untraced.count,
            fmt_bytes(untraced.bytes),
            rust.count,
            fmt_bytes(rust.bytes),
            traced.count,
            fmt_bytes(traced.bytes)
        );
    }
}

fn main() {
    let o = parse_options();
    let clock = if WALL.load(Relaxed) {
        "wall-clock"
    } else {
        "thread CPU"
    };
    if let Some(secs) = o.profile {
        let (w, n) = (o.workloads[0], o.sizes[0]);
        let specs = w.items(n);
        let descs = descriptors(&specs);
        let setup = ctx_setup(w, &specs);
        let trace = if w == Workload::ChatTraced { 2 } else { 0 };
        let start = Instant::now();
        let cpu0 = process_cpu_seconds();
        let mut runs = 0;
        // `--profile 0` runs once and skips the phase timing (for valgrind).
        if secs == 0.0 {
            black_box(ctx_run(&setup, &descs, trace).ok());
            return;
        }
        // `--cold [MiB]`: 8 MiB (or the size given) written between runs evicts the
        // caches, as a host's other work between requests does; the runs alone are timed.
        let mut evictor = o.cold.map(|mib| vec![0u8; mib << 20]);
        // `--after-ref`: an untimed reference run before each, as the table's rows have.
        let reference = o
            .after_ref
            .then(|| (ref_pipeline(w), ref_budget(w, &specs)));
        // Each run's time: their mean and their median (a run the machine slowed moves the
        // mean only).
        let mut per_run = Vec::new();
        // `--into`: the result every run reuses.
        let mut kept = ptr::null_mut();
        while start.elapsed().as_secs_f64() < secs {
            if let Some((pipeline, budget)) = &reference {
                black_box(ref_run(pipeline, budget, &specs, trace != 0).ok());
            }
            if o.after_list {
                black_box(ctx_run(&setup, &descs, trace).ok());
            }
            if let Some(bytes) = &mut evictor {
                for b in bytes.iter_mut().step_by(64) {
                    *b = b.wrapping_add(1);
                }
                black_box(&bytes);
            }
            let t = thread_cpu_ns();
            match (o.into, o.oneshot) {
                (true, _) => black_box(ctx_run_into(&setup, &descs, trace, &mut kept).ok()),
                (false, true) => black_box(ctx_run_oneshot(&setup, &descs, trace).ok()),
                (false, false) => black_box(ctx_run(&setup, &descs, trace).ok()),
            };
            per_run.push(Duration::from_nanos(thread_cpu_ns() - t));
            runs += 1;
        }
        let cpu = process_cpu_seconds() - cpu0;
        // SAFETY: NULL or the last run's result.
        unsafe { ctxpack_result_free(kept) };
        // Phases of one run, CPU time, medians of 15.
        let mut phases = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..15 {
            // SAFETY (block): live handles, valid descriptor array.
            unsafe {
                let t0 = thread_cpu_ns();
                let items = make(|o, e| ctxpack_items_new(o, e));
                ok(
                    ctxpack_items_push_many(items, descs.descs.as_ptr(), n, ptr::null_mut()),
                    ptr::null_mut(),
                )
                .unwrap();
                let t1 = thread_cpu_ns();
                let mut result = ptr::null_mut();
                let status = ctxpack_pipeline_run(
                    setup.pipeline,
                    items,
                    setup.budget,
                    ptr::null(),
                    &mut result,
                    ptr::null_mut(),
                );
                ctxpack_result_free(result);
                black_box(status);
                let t2 = thread_cpu_ns();
                ctxpack_items_free(items);
                let t3 = thread_cpu_ns();
                phases[0].push(Duration::from_nanos(t1 - t0));
                phases[1].push(Duration::from_nanos(t2 - t1));
                phases[2].push(Duration::from_nanos(t3 - t2));
            }
        }
        println!(
            "push {}, run {}, free {}",
            fmt_time(median(&mut phases[0])),
            fmt_time(median(&mut phases[1])),
            fmt_time(median(&mut phases[2]))
        );
        println!(
            "{runs} runs, {} wall, {} CPU per run ({} the run alone, median {}{})",
            fmt_time(start.elapsed() / runs),
            fmt_time(Duration::from_secs_f64(cpu / f64::from(runs))),
            fmt_time(per_run.iter().sum::<Duration>() / runs),
            fmt_time(median(&mut per_run)),
            match (o.cold, o.after_ref, o.after_list) {
                (Some(mib), _, _) => format!(", caches evicted ({mib} MiB written) before each"),
                (None, true, _) => ", a reference run before each".into(),
                (None, false, true) => ", a list run before each".into(),
                (None, false, false) => String::new(),
            }
        );
        return;
    }
    println!(
        "ctxpack {} (C ABI) vs cupel 1.2.0; {}; medians of {clock} time; load average {}",
        env!("CARGO_PKG_VERSION"),
        machine(),
        load_average()
    );
    println!();
    if !o.workloads.is_empty() {
        println!("| workload | N | ctxpack | reference | ref / ctxpack | sort floor | ctxpack / floor | peak extra memory | peak / input | allocations / run | same selection | notes |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let mut rows = Vec::new();
    for &w in &o.workloads {
        let mut last_ref = None;
        for n in o.sizes_for(w) {
            let row = measure(w, n, &o, &mut last_ref);
            print_row(&row);
            rows.push(row);
        }
    }
    if !rows.is_empty() {
        print_phases(&rows);
    }
    if o.workloads.contains(&Workload::Knapsack(100)) {
        knapsack_tables(&o.sizes);
    }
    if o.workloads.contains(&Workload::ChatTraced) {
        diagnostics_allocations(&o.sizes, o.alloc_log);
    }
    if o.groups {
        group_rows(&o);
    }
    if o.variants {
        variant_rows(&o);
        variant_value_rows();
    }
    println!();
    println!("load average at the end: {}", load_average());
}

/// User + system CPU time of this process (Linux, 10 ms resolution): for `--profile`,
/// where a loaded machine makes wall time noisy.
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpu}, {cores} cores, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}
