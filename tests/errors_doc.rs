//! docs/errors.md quotes real messages: every text it shows in backquotes in the Message
//! column of its tables must occur in a message that ctxpack really produces. The cases
//! below produce them, through the Rust API for the core's errors and through the C ABI
//! (its Rust paths, `ctxpack::ffi::…`) for the C layer's own.
//!
//! A quoted text may leave out a part with `…`; the parts around it must then occur in
//! order within one real message.
//!
//! The rows whose status is `CTXPACK_UNSUPPORTED` are produced by a build without the
//! `tokenizer` feature only (`cargo test --no-default-features --test errors_doc`, run by
//! `make test`); every other row by the default build.
// Without the tokenizer only the unsupported rows are checked, so the producers of the
// other rows go unused there.
#![cfg_attr(not(feature = "tokenizer"), allow(dead_code))]

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use ctxpack::ffi::*;
use ctxpack::placer::ChronologicalPlacer;
use ctxpack::scorer::{
    CompositeScorer, DecayCurve, DecayScorer, FixedClock, KindScorer, MetadataKeyScorer,
    PerItemScorer, RecencyScorer, Scorer,
};
use ctxpack::slicer::{
    CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice, QuotaEntry, ScarcityBehavior,
};
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, OverflowStrategy, Pipeline, Result as CoreResult,
};

#[track_caller]
fn message<T>(r: CoreResult<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn kind(k: &str) -> ContextKind {
    ContextKind::new(k).unwrap()
}

fn item(content: &str, tokens: i64) -> ContextItem {
    ContextItem::new(content, tokens).unwrap()
}

fn pipeline(scorer: Arc<dyn Scorer>, slicer: Arc<dyn ctxpack::slicer::Slicer>) -> Pipeline {
    Pipeline::builder()
        .scorer(scorer)
        .slicer(slicer)
        .placer(Arc::new(ChronologicalPlacer::new()))
        .build()
        .unwrap()
}

/// The messages of cancelled runs: before the run started, and while scoring (a per-item
/// scorer cancels the token at the first item, so the check before the second sees it).
fn cancelled_messages() -> Vec<String> {
    let budget = ContextBudget::new(100, 100).unwrap();
    let options = ctxpack::RunOptions::default();
    let token = ctxpack::CancelToken::new();
    token.cancel();
    let greedy = pipeline(Arc::new(KindScorer::new()), Arc::new(GreedySlice::new()));
    let before = greedy.run_cancellable(&[item("a", 1)], &budget, &options, &token);
    let inner = ctxpack::CancelToken::new();
    let cancels = inner.clone();
    let cancelling = PerItemScorer::new(move |_, _: &[&ContextItem]| {
        cancels.cancel();
        Ok(0.5)
    });
    let scoring = pipeline(Arc::new(cancelling), Arc::new(GreedySlice::new()));
    let during = scoring.run_cancellable(&[item("a", 1), item("b", 1)], &budget, &options, &inner);
    vec![message(before), message(during)]
}

/// The messages of the core's errors.
fn core_messages() -> Vec<String> {
    let recency: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
    let greedy = Arc::new(GreedySlice::new());
    let mut m = vec![
        message(ContextItem::new("", 1)),
        message(ContextKind::new(" \t")),
        message(ctxpack::ContextSource::new("  ")),
        message(ContextBudget::new(10, 11)),
        message(ContextBudget::with_all(
            10,
            5,
            0,
            vec![(kind("Memory"), 1), (kind("memory"), 2)],
            0.0,
        )),
        message(ContextBudget::with_all(
            100,
            40,
            0,
            vec![(kind("Memory"), 30), (kind("Tool"), 20)],
            0.0,
        )),
        message(ContextBudget::with_all(
            100,
            90,
            60,
            vec![(kind("Memory"), 30), (kind("Tool"), 20)],
            0.0,
        )),
        message(ContextBudget::with_all(10, 5, 0, vec![], f64::NAN)),
        message(KindScorer::with_weights(vec![(kind("Message"), f64::NAN)])),
        message(KindScorer::with_weights(vec![(kind("Message"), -1.0)])),
        message(CompositeScorer::new(vec![(recency.clone(), 0.0)])),
        message(CompositeScorer::new(vec![(recency.clone(), f64::INFINITY)])),
        message(MetadataKeyScorer::new("team", "core", 0.0)),
        message(DecayScorer::new(
            Arc::new(FixedClock(0)),
            DecayCurve::Exponential { half_life_ns: 0 },
            0.5,
        )),
        message(KnapsackSlice::new(0)),
        message(QuotaEntry::new(kind("Document"), 150.0, 150.0)),
        message(CountQuotaEntry::new(kind("tool"), 3, 2)),
        message(Pipeline::builder().build()),
    ];
    // Runs.
    let budget = ContextBudget::new(1000, 100).unwrap();
    let pinned = |tokens| {
        ContextItem::builder("p", tokens)
            .pinned(true)
            .build()
            .unwrap()
    };
    let chat = pipeline(recency.clone(), greedy.clone());
    m.push(message(chat.run(
        &[pinned(90)],
        &ContextBudget::with_all(100, 100, 11, vec![], 0.0).unwrap(),
    )));
    m.push(message(chat.run(&[pinned(110)], &budget)));
    m.push(message(chat.run(
        &[pinned(i64::MAX / 2 + 1), pinned(i64::MAX / 2 + 1)],
        &ContextBudget::new(i64::MAX, i64::MAX).unwrap(),
    )));
    let knapsack = pipeline(
        recency.clone(),
        Arc::new(KnapsackSlice::with_table_limit(1, 1).unwrap()),
    );
    m.push(message(
        knapsack.run(&[item("a", 60), item("b", 60)], &budget),
    ));
    let no_limit = pipeline(
        Arc::new(KindScorer::new()),
        Arc::new(KnapsackSlice::with_table_limit(1, u64::MAX).unwrap()),
    );
    m.push(message(no_limit.run(
        &[item("a", 600_000_000_000), item("b", 600_000_000_000)],
        &ContextBudget::new(1_000_000_000_000, 1_000_000_000_000).unwrap(),
    )));
    let count = pipeline(
        recency.clone(),
        Arc::new(
            CountQuotaSlice::new(
                vec![CountQuotaEntry::new(kind("tool"), 2, 2).unwrap()],
                greedy.clone(),
                ScarcityBehavior::Throw,
            )
            .unwrap(),
        ),
    );
    let tool = ContextItem::builder("t", 1)
        .kind(kind("tool"))
        .build()
        .unwrap();
    m.push(message(count.run(&[tool], &budget)));
    let nan_for_b = PerItemScorer::new(|i, items: &[&ContextItem]| {
        Ok(if items[i].content() == "b" {
            f64::NAN
        } else {
            0.5
        })
    });
    let custom = pipeline(Arc::new(nan_for_b), greedy.clone());
    m.push(message(custom.run(
        &[pinned(1), item("negative", -1), item("b", 5)],
        &budget,
    )));
    m.push(message(ctxpack::policy::Policy::from_json(
        r#"{"scorers": [{"type": "recency", "weight": 1}, {"type": "kind", "weight": 2},
            {"type": "priority", "weight": -1}]}"#,
    )));
    m.extend(cancelled_messages());
    let _ = OverflowStrategy::Throw;
    m.extend(json_messages());
    m.extend(chat_messages());
    m.extend(variant_messages());
    m
}

/// The messages of bad item variants (docs/variants.md), through the Rust builder and
/// the item JSON reader.
fn variant_messages() -> Vec<String> {
    let item = |v: (&str, i64, f64)| {
        message(
            ContextItem::builder("Tool result call_01 lookup_order", 100)
                .variant("summary", 20, 0.5)
                .variant(v.0, v.1, v.2)
                .build(),
        )
    };
    let mut m = vec![
        item(("stub", 2, f64::NAN)),
        item(("stub", 2, 0.0)),
        item(("", 2, 0.5)),
        item(("stub", -1, 0.5)),
    ];
    let json = r#"{"content": "a", "tokens": 5}
{"content": "b", "tokens": 50, "variants": [{"content": "s", "tokens": 5, "quality": 0.5}, {"content": "t", "tokens": 1, "quality": 1.25}]}
{"content": "c", "tokens": 5, "variants": [{"content": "s", "quality": 0.5}]}"#;
    m.push(ctxpack::model::read_items(json).unwrap_err().to_string());
    let third = json.lines().nth(2).unwrap();
    m.push(ctxpack::model::read_items(third).unwrap_err().to_string());
    m
}

/// The messages (and warnings) of policy and budget JSON and of the scorer registry.
fn json_messages() -> Vec<String> {
    use ctxpack::policy::{JsonReadOptions, Policy, ScorerRegistry};
    let mut registry = ScorerRegistry::new();
    let mut m = vec![message(
        registry.register("Recency", Arc::new(RecencyScorer::new())),
    )];
    registry
        .register("contentLength", Arc::new(RecencyScorer::new()))
        .unwrap();
    let with_registry = JsonReadOptions {
        strict: false,
        registry: Some(&registry),
    };
    m.push(message(Policy::from_json_with(
        r#"{"scorers": [{"type": "x", "weight": 1}]}"#,
        &with_registry,
    )));
    let lenient = Policy::from_json_with(
        r#"{"scorers": [{"type": "recency", "weight": 1, "wieght": 2}]}"#,
        &JsonReadOptions::default(),
    )
    .unwrap();
    m.extend(lenient.warnings.iter().map(ToString::to_string));
    m.push(message(ContextBudget::from_json(
        r#"{"maxTokens": 1000, "targetTokens": 2000}"#,
    )));
    m.push(message(ContextBudget::from_json(
        r#"{"maxTokens": 100, "targetTokens": 40, "reservedSlots": {"Memory": 30, "Tool": 20}}"#,
    )));
    m.push(message(ContextBudget::from_json(
        r#"{"maxTokens": 100, "targetTokens": 90, "outputReserve": 60,
            "reservedSlots": {"Memory": 30, "Tool": 20}}"#,
    )));
    m
}

/// The messages of chat requests.
fn chat_messages() -> Vec<String> {
    use ctxpack::chat::{trim_anthropic, trim_openai, ChatOptions};
    let chat = ctxpack::policy::Policy::preset("chat")
        .unwrap()
        .build_pipeline()
        .unwrap();
    let roomy = ContextBudget::new(100_000, 100_000).unwrap();
    let options = ChatOptions::default();
    let openai = |json: &str, budget: &ContextBudget, options: &ChatOptions<'_>| {
        message(trim_openai(json, budget, &chat, options))
    };
    let mut m = vec![
        openai(r#"{"messages": ["#, &roomy, &options),
        openai(r#"{"messages": []}"#, &roomy, &options),
        openai(
            r#"{"messages": [{"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "c1", "content": "r"}]}"#,
            &roomy,
            &options,
        ),
        message(trim_anthropic(
            r#"{"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}]}"#,
            &roomy,
            &chat,
            &options,
        )),
    ];
    let long = format!(
        r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
        "word ".repeat(400)
    );
    let small = ContextBudget::new(50, 50).unwrap();
    m.push(openai(&long, &small, &options));
    let mut unpinned = ChatOptions::default();
    unpinned.pin_last_turn = false;
    m.push(openai(&long, &small, &unpinned));
    let spec = ctxpack::model::HeadTail::new(10, 10).unwrap();
    let bad_quality = spec.clone().with_quality(1.5);
    let mut shorten = ChatOptions::default();
    shorten.shorten = Some(&bad_quality);
    m.push(openai(&long, &roomy, &shorten));
    shorten.shorten = Some(&spec);
    shorten.prefix = Some(ctxpack::prefix::PrefixOptions::new(
        ctxpack::prefix::PrefixMode::Hold,
    ));
    m.push(openai(&long, &roomy, &shorten));
    m
}

/// The messages of prefix states (`docs/prefix-cache.md`).
fn prefix_messages() -> Vec<String> {
    use ctxpack::prefix::{PrefixMode, PrefixOptions, PrefixState};
    use ctxpack::RunOptions;
    let p = pipeline(Arc::new(RecencyScorer::new()), Arc::new(GreedySlice::new()));
    let items = [item("a", 10), item("b", 10)];
    let budget = ContextBudget::new(100, 100).unwrap();
    let run_options = RunOptions::default();
    let mut keyed = PrefixOptions::new(PrefixMode::Hold);
    keyed.conversation = Some(b"one");
    let first = p.run_prefix(&items, &budget, &run_options, &keyed).unwrap();
    let bytes = first.state.to_bytes();
    let mut m = Vec::new();
    let mut flipped = bytes.clone();
    let last_entry_byte = flipped.len() - 5;
    flipped[last_entry_byte] ^= 1;
    m.push(message(PrefixState::from_bytes(&flipped)));
    m.push(message(PrefixState::from_bytes(&bytes[..bytes.len() - 1])));
    let mut newer = bytes.clone();
    newer[4] = 2;
    m.push(message(PrefixState::from_bytes(&newer)));
    let edited = first
        .state
        .to_json()
        .replacen("\"turn\":1", "\"turn\":2", 1);
    m.push(message(PrefixState::from_json(&edited)));
    let mut other = PrefixOptions::new(PrefixMode::Hold);
    other.conversation = Some(b"two");
    other.previous = Some(&first.state);
    m.push(message(p.run_prefix(&items, &budget, &run_options, &other)));
    let mut bad = PrefixOptions::new(PrefixMode::Measure);
    bad.max_value_loss = 1.5;
    m.push(message(p.run_prefix(&items, &budget, &run_options, &bad)));
    m
}

/// The messages of the C layer's prefix functions.
fn ffi_prefix_messages() -> Vec<String> {
    let mut m = Vec::new();
    // SAFETY: every pointer passed is live or NULL, every struct of its stated size.
    unsafe {
        let mut scorer = ptr::null_mut();
        let mut slicer = ptr::null_mut();
        let mut placer = ptr::null_mut();
        ctxpack_scorer_new_recency(&mut scorer, ptr::null_mut());
        ctxpack_slicer_new_greedy(&mut slicer, ptr::null_mut());
        ctxpack_placer_new_chronological(&mut placer, ptr::null_mut());
        let mut pipeline = ptr::null_mut();
        ctxpack_pipeline_new(
            scorer,
            slicer,
            placer,
            ptr::null(),
            &mut pipeline,
            ptr::null_mut(),
        );
        let mut items = ptr::null_mut();
        ctxpack_items_new(&mut items, ptr::null_mut());
        ctxpack_items_push(items, &desc("a", 1), ptr::null_mut());
        let mut budget = ptr::null_mut();
        let mut bd = std::mem::zeroed::<ctxpack_budget_desc>();
        ctxpack_budget_desc_init(&mut bd, std::mem::size_of::<ctxpack_budget_desc>());
        bd.max_tokens = 10;
        bd.target_tokens = 10;
        ctxpack_budget_new(&bd, &mut budget, ptr::null_mut());
        let mut o = std::mem::zeroed::<ctxpack_prefix_options>();
        ctxpack_prefix_options_init(&mut o, std::mem::size_of::<ctxpack_prefix_options>());
        let mut result = ptr::null_mut();
        let mut state = ptr::null_mut();
        let mut run = |o: &ctxpack_prefix_options| {
            ffi_message(|e| {
                ctxpack_pipeline_run_prefix(
                    pipeline,
                    items,
                    budget,
                    ptr::null(),
                    o,
                    ptr::null(),
                    &mut result,
                    &mut state,
                    e,
                )
            })
        };
        let mut bad = o;
        bad.mode = 7;
        m.push(run(&bad));
        let mut bad = o;
        bad.cache_rule = s("gemini");
        m.push(run(&bad));
        let mut bad = o;
        bad.custom_thresholds = 1;
        bad.low_watermark = 0.5;
        bad.max_value_loss = 1.5;
        m.push(run(&bad));
        let mut plain = ptr::null_mut();
        ctxpack_pipeline_run(
            pipeline,
            items,
            budget,
            ptr::null(),
            &mut plain,
            ptr::null_mut(),
        );
        let mut reuse = std::mem::zeroed::<ctxpack_prefix_reuse>();
        ctxpack_prefix_reuse_init(&mut reuse, std::mem::size_of::<ctxpack_prefix_reuse>());
        m.push(ffi_message(|e| {
            ctxpack_result_prefix_reuse(plain, &mut reuse, e)
        }));
        m.push(ffi_message(|e| {
            ctxpack_prefix_state_from_bytes(b"CXPS".as_ptr(), 4, &mut state, e)
        }));
        ctxpack_result_free(plain);
        ctxpack_budget_free(budget);
        ctxpack_items_free(items);
        ctxpack_pipeline_free(pipeline);
        ctxpack_scorer_free(scorer);
        ctxpack_slicer_free(slicer);
        ctxpack_placer_free(placer);
    }
    m
}

/// The messages of the token counting functions (a build with the `tokenizer` feature).
#[cfg(feature = "tokenizer")]
fn tokenizer_messages() -> Vec<String> {
    let mut m = vec![message(ctxpack::tokenizer::Encoding::by_name("p50k_base"))];
    // SAFETY: every pointer passed is live and of the stated length.
    unsafe {
        let mut encoding = ptr::null();
        ctxpack_encoding_get(s("o200k_base"), &mut encoding, ptr::null_mut());
        let bad = ctxpack_str {
            ptr: b"abc\xff".as_ptr().cast(),
            len: 4,
        };
        let mut n = 0;
        m.push(ffi_message(|e| {
            ctxpack_encoding_count(encoding, bad, &mut n, e)
        }));
        m.push(ffi_message(|e| {
            ctxpack_encoding_count_with_limit(encoding, s("x"), -1, &mut n, e)
        }));
    }
    m
}

/// The C layer's own messages of `ctxpack_chat_trim` (its options and arguments).
#[cfg(feature = "tokenizer")]
fn chat_ffi_messages() -> Vec<String> {
    let request = s(r#"{"messages": [{"role": "user", "content": "hi"}]}"#);
    let mut m = Vec::new();
    // SAFETY: every pointer passed is live and of the stated length; handles are freed.
    unsafe {
        let mut pipeline = ptr::null_mut();
        ctxpack_pipeline_new_preset(s("chat"), &mut pipeline, ptr::null_mut());
        let mut bd = std::mem::MaybeUninit::<ctxpack_budget_desc>::zeroed().assume_init();
        ctxpack_budget_desc_init(&mut bd, std::mem::size_of::<ctxpack_budget_desc>());
        bd.max_tokens = 1000;
        bd.target_tokens = 1000;
        let mut budget = ptr::null_mut();
        ctxpack_budget_new(&bd, &mut budget, ptr::null_mut());
        let mut out = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(2, request, budget, pipeline, ptr::null(), &mut out, e)
        }));
        let mut o = std::mem::MaybeUninit::<ctxpack_chat_options>::zeroed().assume_init();
        ctxpack_chat_options_init(&mut o, std::mem::size_of::<ctxpack_chat_options>());
        o.has_overheads = 1;
        o.overhead_per_message = -3;
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(0, request, budget, pipeline, &o, &mut out, e)
        }));
        o.has_overheads = 0;
        o.encoding = s("p50k_base");
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(0, request, budget, pipeline, &o, &mut out, e)
        }));
        o.encoding = s("");
        o.shorten_head_tokens = 10;
        o.shorten_quality = 1.5;
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(0, request, budget, pipeline, &o, &mut out, e)
        }));
        let bad = ctxpack_str {
            ptr: b"{\"a\": \"\xff\"}".as_ptr().cast(),
            len: 10,
        };
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(0, bad, budget, pipeline, ptr::null(), &mut out, e)
        }));
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
    }
    m
}

/// The message of every tokenizer function in a build without the `tokenizer` feature.
#[cfg(not(feature = "tokenizer"))]
fn unsupported_messages() -> Vec<String> {
    let mut m = vec![message(ctxpack::tokenizer::Encoding::by_name("o200k_base"))];
    let mut encoding = ptr::null();
    // SAFETY: a live string and a writable out-parameter.
    m.push(ffi_message(|e| unsafe {
        ctxpack_encoding_get(s("o200k_base"), &mut encoding, e)
    }));
    // SAFETY: live strings, handles and out-parameters; handles are freed.
    unsafe {
        let mut pipeline = ptr::null_mut();
        ctxpack_pipeline_new_preset(s("chat"), &mut pipeline, ptr::null_mut());
        let mut bd = std::mem::MaybeUninit::<ctxpack_budget_desc>::zeroed().assume_init();
        ctxpack_budget_desc_init(&mut bd, std::mem::size_of::<ctxpack_budget_desc>());
        bd.max_tokens = 1000;
        bd.target_tokens = 1000;
        let mut budget = ptr::null_mut();
        ctxpack_budget_new(&bd, &mut budget, ptr::null_mut());
        let mut o = std::mem::MaybeUninit::<ctxpack_chat_options>::zeroed().assume_init();
        ctxpack_chat_options_init(&mut o, std::mem::size_of::<ctxpack_chat_options>());
        o.encoding = s("o200k_base");
        let request = s(r#"{"messages": [{"role": "user", "content": "hi"}]}"#);
        let mut out = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_chat_trim(0, request, budget, pipeline, &o, &mut out, e)
        }));
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
    }
    m
}

/// Runs an FFI call that reports through `out_error` and returns its message.
fn ffi_message(call: impl FnOnce(*mut *mut ctxpack_error) -> ctxpack_status) -> String {
    let mut err = ptr::null_mut();
    let status = call(&mut err);
    assert_ne!(status, ctxpack_status::CTXPACK_OK, "expected a failure");
    // SAFETY: `err` was just produced by the library.
    unsafe {
        let m = ctxpack_error_message(err);
        let text = std::str::from_utf8(std::slice::from_raw_parts(m.ptr.cast::<u8>(), m.len))
            .unwrap()
            .to_owned();
        ctxpack_error_free(err);
        text
    }
}

fn s(text: &'static str) -> ctxpack_str {
    ctxpack_str {
        ptr: text.as_ptr().cast(),
        len: text.len(),
    }
}

fn desc(content: &'static str, tokens: i64) -> ctxpack_item_desc {
    let mut d = std::mem::MaybeUninit::<ctxpack_item_desc>::uninit();
    // SAFETY: a writable struct of its own size.
    unsafe {
        assert_eq!(
            ctxpack_item_desc_init(d.as_mut_ptr(), std::mem::size_of::<ctxpack_item_desc>()),
            ctxpack_status::CTXPACK_OK
        );
        let mut d = d.assume_init();
        d.content = s(content);
        d.tokens = tokens;
        d
    }
}

unsafe extern "C" fn refuse(
    _: *mut c_void,
    _: *const ctxpack_item_view,
    _: usize,
    _: *mut f64,
    error: *mut ctxpack_callback_error,
) -> std::ffi::c_int {
    // SAFETY: the library passes a writable error struct.
    unsafe { (*error).message = s("scorer says no") };
    1
}

unsafe extern "C" fn slice_twice(
    _: *mut c_void,
    _: *const ctxpack_item_view,
    _: *const f64,
    _: usize,
    _: i64,
    _: i64,
    out: *mut usize,
    count: *mut usize,
    _: *mut ctxpack_callback_error,
) -> std::ffi::c_int {
    // SAFETY: the library passes arrays of the item count (2 here).
    unsafe {
        *out = 1;
        *out.add(1) = 1;
        *count = 2;
    }
    0
}

unsafe extern "C" fn slice_unset(
    _: *mut c_void,
    _: *const ctxpack_item_view,
    _: *const f64,
    _: usize,
    _: i64,
    _: i64,
    _: *mut usize,
    count: *mut usize,
    _: *mut ctxpack_callback_error,
) -> std::ffi::c_int {
    // SAFETY: as above; the position itself is left unwritten.
    unsafe { *count = 1 };
    0
}

unsafe extern "C" fn place_twice(
    _: *mut c_void,
    _: *const ctxpack_item_view,
    _: *const f64,
    count: usize,
    out: *mut usize,
    _: *mut ctxpack_callback_error,
) -> std::ffi::c_int {
    // SAFETY: `out` holds `count` positions.
    unsafe {
        for i in 0..count {
            *out.add(i) = 0;
        }
    }
    0
}

/// What the hostile scorer below works on.
struct Hostile {
    pipeline: *mut ctxpack_pipeline,
    items: *mut ctxpack_items,
    budget: *mut ctxpack_budget,
    message: String,
}

/// Frees the pipeline that is running it, runs it again and keeps the error message.
unsafe extern "C" fn free_and_rerun_scorer(
    user_data: *mut c_void,
    _: *const ctxpack_item_view,
    count: usize,
    out: *mut f64,
    _: *mut ctxpack_callback_error,
) -> std::ffi::c_int {
    // SAFETY: `user_data` is the test's `Hostile`; `out` holds `count` scores.
    unsafe {
        let h = &mut *user_data.cast::<Hostile>();
        if h.message.is_empty() {
            ctxpack_pipeline_free(h.pipeline);
            let mut r = ptr::null_mut();
            h.message = ffi_message(|e| {
                ctxpack_pipeline_run(h.pipeline, h.items, h.budget, ptr::null(), &mut r, e)
            });
        }
        for i in 0..count {
            *out.add(i) = 0.5;
        }
    }
    0
}

/// The messages of the C layer's own errors (and of callbacks through the C ABI).
fn ffi_messages() -> Vec<String> {
    let mut m = Vec::new();
    // SAFETY (whole block): every pointer passed is live and of the stated length.
    unsafe {
        let mut items = ptr::null_mut();
        ctxpack_items_new(&mut items, ptr::null_mut());
        let mut d = desc("bad \u{0} utf8", 1);
        d.content = ctxpack_str {
            ptr: b"bad \xc3\x28 utf8".as_ptr().cast(),
            len: 11,
        };
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let mut d = desc("x", 1);
        d.tag_count = 2;
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        m.push(ffi_message(|e| ctxpack_items_push(items, ptr::null(), e)));
        let mut d = desc("x", 1);
        d.pinned = 2;
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let mut d = desc("x", 1);
        d.reserved[1] = 5;
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let mut d = desc("x", 1);
        d.struct_size = 8;
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        #[repr(C)]
        struct Newer {
            v1: ctxpack_item_desc,
            extra: u64,
        }
        let mut newer = Newer {
            v1: desc("x", 1),
            extra: 7,
        };
        newer.v1.struct_size = std::mem::size_of::<Newer>();
        m.push(ffi_message(|e| ctxpack_items_push(items, &newer.v1, e)));
        let mut d = desc("x", 1);
        d.group = ctxpack_str {
            ptr: b"tool\xff".as_ptr().cast(),
            len: 5,
        };
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let mut d = desc("hello world", 7);
        d.encoding = ctxpack_str {
            ptr: b"o200k_base".as_ptr().cast(),
            len: 10,
        };
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let mut d = desc("hello world", 0);
        d.encoding = ctxpack_str {
            ptr: b"p50k_base".as_ptr().cast(),
            len: 9,
        };
        m.push(ffi_message(|e| ctxpack_items_push(items, &d, e)));
        let many = [desc("a", 1), desc("b", 1), desc("", 1)];
        m.push(ffi_message(|e| {
            ctxpack_items_push_many(items, many.as_ptr(), 3, e)
        }));
        m.push(ffi_message(|e| {
            ctxpack_items_push_many(items, many.as_ptr(), 1 << 40, e)
        }));
        let two = [desc("a", 100), desc("b", 200)];
        ctxpack_items_push_many(items, two.as_ptr(), 2, ptr::null_mut());

        let mut bd = std::mem::zeroed::<ctxpack_budget_desc>();
        ctxpack_budget_desc_init(&mut bd, std::mem::size_of::<ctxpack_budget_desc>());
        bd.max_tokens = 1000;
        bd.target_tokens = 1000;
        let mut budget = ptr::null_mut();
        ctxpack_budget_new(&bd, &mut budget, ptr::null_mut());

        let mut sl = ptr::null_mut();
        ctxpack_slicer_new_greedy(&mut sl, ptr::null_mut());
        let mut pl = ptr::null_mut();
        ctxpack_placer_new_chronological(&mut pl, ptr::null_mut());
        let mut sc = ptr::null_mut();
        ctxpack_scorer_new_custom_batch(
            Some(refuse),
            ptr::null_mut(),
            None,
            &mut sc,
            ptr::null_mut(),
        );
        let mut p = ptr::null_mut();
        ctxpack_pipeline_new(sc, sl, pl, ptr::null(), &mut p, ptr::null_mut());
        let mut r = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_pipeline_run(p, items, budget, ptr::null(), &mut r, e)
        }));
        let mut po = std::mem::zeroed::<ctxpack_pipeline_options>();
        ctxpack_pipeline_options_init(&mut po, std::mem::size_of::<ctxpack_pipeline_options>());
        po.no_variants = 2;
        m.push(ffi_message(|e| {
            ctxpack_pipeline_new(sc, sl, pl, &po, &mut ptr::null_mut(), e)
        }));
        let mut o = std::mem::zeroed::<ctxpack_run_options>();
        ctxpack_run_options_init(&mut o, std::mem::size_of::<ctxpack_run_options>());
        o.trace_detail = 3;
        m.push(ffi_message(|e| {
            ctxpack_pipeline_run(p, items, budget, &o, &mut r, e)
        }));
        m.push(ffi_message(|e| {
            ctxpack_pipeline_run(p, budget.cast(), budget, ptr::null(), &mut r, e)
        }));
        ctxpack_pipeline_free(p);
        ctxpack_scorer_free(sc);

        let mut recency = ptr::null_mut();
        ctxpack_scorer_new_recency(&mut recency, ptr::null_mut());
        for slice in [slice_twice as _, slice_unset as _] {
            let mut custom = ptr::null_mut();
            ctxpack_slicer_new_custom(
                Some(slice),
                ptr::null_mut(),
                None,
                &mut custom,
                ptr::null_mut(),
            );
            let mut p = ptr::null_mut();
            ctxpack_pipeline_new(recency, custom, pl, ptr::null(), &mut p, ptr::null_mut());
            m.push(ffi_message(|e| {
                ctxpack_pipeline_run(p, items, budget, ptr::null(), &mut r, e)
            }));
            ctxpack_pipeline_free(p);
            ctxpack_slicer_free(custom);
        }
        let mut custom = ptr::null_mut();
        ctxpack_placer_new_custom(
            Some(place_twice),
            ptr::null_mut(),
            None,
            &mut custom,
            ptr::null_mut(),
        );
        let mut p = ptr::null_mut();
        ctxpack_pipeline_new(recency, sl, custom, ptr::null(), &mut p, ptr::null_mut());
        m.push(ffi_message(|e| {
            ctxpack_pipeline_run(p, items, budget, ptr::null(), &mut r, e)
        }));
        ctxpack_placer_free(custom);

        let scores = [0.5, f64::NAN];
        let mut sr = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_slicer_slice(sl, items, scores.as_ptr(), 2, budget, &mut sr, e)
        }));
        // An untraced result: no report; an index past the end.
        ctxpack_pipeline_free(p);
        let mut p = ptr::null_mut();
        ctxpack_pipeline_new(recency, sl, pl, ptr::null(), &mut p, ptr::null_mut());
        ctxpack_pipeline_run(p, items, budget, ptr::null(), &mut r, ptr::null_mut());
        let mut q = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_result_quota_utilization(r, &mut q, e)
        }));
        ctxpack_result_free(r);
        let mut dry = ptr::null_mut();
        ctxpack_pipeline_dry_run(p, items, budget, &mut dry, ptr::null_mut());
        let mut inc = std::mem::zeroed::<ctxpack_included_entry>();
        ctxpack_included_entry_init(&mut inc, std::mem::size_of::<ctxpack_included_entry>());
        m.push(ffi_message(|e| {
            ctxpack_result_report_included(dry, 9, &mut inc, e)
        }));
        inc.struct_size = 8;
        m.push(ffi_message(|e| {
            ctxpack_result_report_included(dry, 0, &mut inc, e)
        }));
        ctxpack_result_free(dry);
        // A handle of another type.
        let mut other = ptr::null_mut();
        m.push(ffi_message(|e| {
            ctxpack_pipeline_new(recency, pl.cast(), pl, ptr::null(), &mut other, e)
        }));
        // A handle freed by a callback while the run holds it, used again.
        let mut h = Hostile {
            pipeline: ptr::null_mut(),
            items,
            budget,
            message: String::new(),
        };
        let mut free_and_rerun = ptr::null_mut();
        ctxpack_scorer_new_custom_batch(
            Some(free_and_rerun_scorer),
            (&mut h as *mut Hostile).cast(),
            None,
            &mut free_and_rerun,
            ptr::null_mut(),
        );
        ctxpack_pipeline_new(
            free_and_rerun,
            sl,
            pl,
            ptr::null(),
            &mut h.pipeline,
            ptr::null_mut(),
        );
        ctxpack_scorer_free(free_and_rerun);
        let mut r2 = ptr::null_mut();
        let status = ctxpack_pipeline_run(
            h.pipeline,
            items,
            budget,
            ptr::null(),
            &mut r2,
            ptr::null_mut(),
        );
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        ctxpack_result_free(r2);
        m.push(h.message);
        m.push(ffi_message(|e| {
            ctxpack_pipeline_new_preset(s("Chat\0x"), &mut ptr::null_mut(), e)
        }));
        let dup = [
            ctxpack_reserved_slot {
                kind: s("a\0b"),
                count: 1,
            },
            ctxpack_reserved_slot {
                kind: s("A\0B"),
                count: 1,
            },
        ];
        bd.slots = dup.as_ptr();
        bd.slot_count = 2;
        bd.target_tokens = 10;
        m.push(ffi_message(|e| {
            ctxpack_budget_new(&bd, &mut ptr::null_mut(), e)
        }));
        ctxpack_pipeline_free(p);
        ctxpack_scorer_free(recency);
        ctxpack_placer_free(pl);
        ctxpack_budget_free(budget);
        ctxpack_items_free(items);
    }
    m
}

/// The backquoted texts of the Message column (the third) of every table row, each with its
/// row's Status cell.
fn documented_messages(doc: &str) -> Vec<(String, String)> {
    let mut quoted = Vec::new();
    let mut in_table_with_message = false;
    for line in doc.lines() {
        if !line.starts_with('|') {
            in_table_with_message = false;
            continue;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        if line.starts_with("| Case |") {
            in_table_with_message = cells.get(2).is_some_and(|c| c.trim() == "Message");
            continue;
        }
        if !in_table_with_message || line.starts_with("|---") || cells.len() < 3 {
            continue;
        }
        let cell = cells[2];
        let mut parts = cell.split('`');
        parts.next();
        while let (Some(text), Some(_)) = (parts.next(), parts.next()) {
            quoted.push((text.to_owned(), cells[1].to_owned()));
        }
        if cell.matches('`').count() % 2 == 1 {
            let last = cell.rsplit('`').next().unwrap_or_default();
            panic!("unbalanced backquotes in {cell:?} ({last})");
        }
    }
    quoted
}

/// Whether `text`, whose parts may be separated by `…`, occurs in `message`.
fn occurs(text: &str, message: &str) -> bool {
    let mut rest = message;
    for part in text.split('…').map(str::trim).filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Checks that every quoted text of the rows `wanted` picks (by their Status cell) occurs
/// in one of the `real` messages; `at_least` guards against a parser that finds nothing.
fn check_documented(wanted: impl Fn(&str) -> bool, real: &[String], at_least: usize) {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/errors.md")).unwrap();
    let documented: Vec<String> = documented_messages(&doc)
        .into_iter()
        .filter(|(_, status)| wanted(status))
        .map(|(text, _)| text)
        .collect();
    assert!(
        documented.len() >= at_least,
        "only {} quoted messages",
        documented.len()
    );
    // CTXPACK_PRINT_MESSAGES=1 lists the real messages (to write the document from).
    if std::env::var_os("CTXPACK_PRINT_MESSAGES").is_some() {
        eprintln!("{real:#?}");
    }
    let missing: Vec<&String> = documented
        .iter()
        .filter(|text| !real.iter().any(|m| occurs(text, m)))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/errors.md quotes messages ctxpack does not produce: {missing:#?}\n\
         real messages: {real:#?}"
    );
}

const UNSUPPORTED: &str = "CTXPACK_UNSUPPORTED";

#[cfg(feature = "tokenizer")]
#[test]
fn every_quoted_message_of_docs_errors_md_is_real() {
    let mut real = core_messages();
    real.extend(ffi_messages());
    real.extend(tokenizer_messages());
    real.extend(prefix_messages());
    real.extend(ffi_prefix_messages());
    real.extend(chat_ffi_messages());
    check_documented(|status| !status.contains(UNSUPPORTED), &real, 60);
}

/// The rows of a build without the tokenizer: every tokenizer function is unsupported.
#[cfg(not(feature = "tokenizer"))]
#[test]
fn the_quoted_messages_of_a_build_without_the_tokenizer_are_real() {
    check_documented(
        |status| status.contains(UNSUPPORTED),
        &unsupported_messages(),
        1,
    );
}
