//! Allocation counts through the C ABI, counted by a global allocator (docs/performance.md,
//! "Item storage"): a run makes the same small number of allocations at every N, reading
//! the indices allocates nothing, and pushing a batch allocates per store, not per item
//! or per tag; the one-shot run over descriptors makes the same few allocations at every N
//! (only its result's while its pipeline keeps its memory), and a run into a kept result
//! makes none once the result has grown to its size.

use std::ptr;

use ctxpack::ffi::*;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{allocations, allocations_and_largest};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn make<T>(f: impl FnOnce(*mut *mut T, *mut *mut ctxpack_error) -> ctxpack_status) -> *mut T {
    let mut out = ptr::null_mut();
    let status = f(&mut out, ptr::null_mut());
    assert_eq!(status, ctxpack_status::CTXPACK_OK);
    out
}

fn s(text: &str) -> ctxpack_str {
    ctxpack_str {
        ptr: text.as_ptr().cast(),
        len: text.len(),
    }
}

/// Generated items like the realistic input: 1–3 tags out of 8, a kind out of
/// 5, a priority 0–9, a hint and (for 49 items in 50) a timestamp in whole seconds.
struct Input {
    contents: Vec<String>,
    tags: Vec<[ctxpack_str; 3]>,
    descs: Vec<ctxpack_item_desc>,
    total_tokens: i64,
}

const TAGS: [&str; 8] = [
    "billing", "auth", "Billing", "search", "ui", "api", "db", "infra",
];
const KINDS: [&str; 5] = [
    "Message",
    "Document",
    "ToolOutput",
    "Memory",
    "SystemPrompt",
];

fn input(n: usize) -> Input {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ n as u64;
    let mut next = move |below: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % below as u64) as usize
    };
    let contents: Vec<String> = (0..n)
        .map(|i| format!("item {i}: {}", "word ".repeat(5 + next(60))))
        .collect();
    let picks: Vec<(usize, [usize; 3], usize, i64)> = (0..n)
        .map(|_| {
            (
                1 + next(3),
                [next(8), next(8), next(8)],
                next(5),
                next(10) as i64,
            )
        })
        .collect();
    let tags: Vec<[ctxpack_str; 3]> = picks
        .iter()
        .map(|(_, t, _, _)| [s(TAGS[t[0]]), s(TAGS[t[1]]), s(TAGS[t[2]])])
        .collect();
    let mut total_tokens = 0;
    let descs = (0..n)
        .map(|i| {
            let (tag_count, _, kind, priority) = picks[i];
            let tokens = contents[i].len().div_ceil(4) as i64;
            total_tokens += tokens;
            let mut d: ctxpack_item_desc = unsafe_zeroed();
            d.struct_size = std::mem::size_of::<ctxpack_item_desc>();
            d.content = s(&contents[i]);
            d.kind = s(KINDS[kind]);
            d.tags = tags[i].as_ptr();
            d.tag_count = tag_count;
            d.tokens = tokens;
            d.priority = priority;
            d.has_priority = 1;
            d.timestamp_ns = 1_700_000_000_000_000_000 + i as i64 * 1_000_000_000;
            // One item in 50 has no timestamp (placed after the dated ones).
            d.has_timestamp = u8::from(i % 50 != 0);
            d.future_relevance_hint = (i % 100) as f64 / 100.0;
            d.has_future_relevance_hint = 1;
            d
        })
        .collect();
    Input {
        contents,
        tags,
        descs,
        total_tokens,
    }
}

fn unsafe_zeroed() -> ctxpack_item_desc {
    let mut d = std::mem::MaybeUninit::<ctxpack_item_desc>::uninit();
    // SAFETY: a valid out pointer and size.
    let status = unsafe { ctxpack_item_desc_init(d.as_mut_ptr(), size_of::<ctxpack_item_desc>()) };
    assert_eq!(status, ctxpack_status::CTXPACK_OK);
    // SAFETY: initialised by the call above.
    unsafe { d.assume_init() }
}

/// The chat pipeline (recency 3 + kind 1, greedy, chronological) or the tagged one
/// (reflexive 3 + kind 1 + frequency 1, greedy, u-shaped).
fn pipeline(tagged: bool) -> *mut ctxpack_pipeline {
    // SAFETY (block): valid arrays and live handles.
    unsafe {
        let children = if tagged {
            vec![
                (make(|o, e| ctxpack_scorer_new_reflexive(o, e)), 3.0),
                (make(|o, e| ctxpack_scorer_new_kind(o, e)), 1.0),
                (make(|o, e| ctxpack_scorer_new_frequency(o, e)), 1.0),
            ]
        } else {
            vec![
                (make(|o, e| ctxpack_scorer_new_recency(o, e)), 3.0),
                (make(|o, e| ctxpack_scorer_new_kind(o, e)), 1.0),
            ]
        };
        let entries: Vec<ctxpack_composite_child> = children
            .iter()
            .map(|&(scorer, weight)| ctxpack_composite_child { scorer, weight })
            .collect();
        let scorer =
            make(|o, e| ctxpack_scorer_new_composite(entries.as_ptr(), entries.len(), o, e));
        for (child, _) in children {
            ctxpack_scorer_free(child);
        }
        let slicer = make(|o, e| ctxpack_slicer_new_greedy(o, e));
        let placer = if tagged {
            make(|o, e| ctxpack_placer_new_u_shaped(o, e))
        } else {
            make(|o, e| ctxpack_placer_new_chronological(o, e))
        };
        let pipeline = make(|o, e| ctxpack_pipeline_new(scorer, slicer, placer, ptr::null(), o, e));
        ctxpack_scorer_free(scorer);
        ctxpack_slicer_free(slicer);
        ctxpack_placer_free(placer);
        pipeline
    }
}

/// A budget of all of `input`'s tokens with half of them as the target.
fn half_budget(input: &Input) -> *mut ctxpack_budget {
    budget_with_slots(input, &[])
}

/// [`half_budget`] with 10 tokens reserved for memories: a budget whose copy allocates.
fn slotted_budget(input: &Input) -> *mut ctxpack_budget {
    let slot = ctxpack_reserved_slot {
        kind: s("Memory"),
        count: 10,
    };
    budget_with_slots(input, &[slot])
}

/// [`half_budget`] with these reserved slots.
fn budget_with_slots(input: &Input, slots: &[ctxpack_reserved_slot]) -> *mut ctxpack_budget {
    let desc = ctxpack_budget_desc {
        struct_size: size_of::<ctxpack_budget_desc>(),
        max_tokens: input.total_tokens,
        target_tokens: input.total_tokens / 2,
        output_reserve: 0,
        slots: slots.as_ptr(),
        slot_count: slots.len(),
        estimation_safety_margin_percent: 0.0,
    };
    // SAFETY: a valid descriptor; the out-parameters come from `make`.
    make(|o, e| unsafe { ctxpack_budget_new(&desc, o, e) })
}

/// Allocations of pushing `input`, of one untraced run with half the tokens as target,
/// and of reading the indices; the number of indices.
struct Counts {
    push: usize,
    run: usize,
    indices: usize,
    selected: usize,
}

fn count(input: &Input, tagged: bool) -> Counts {
    // SAFETY (block): valid arrays and live handles.
    unsafe {
        let pipeline = pipeline(tagged);
        let budget = half_budget(input);
        let items = make(|o, e| ctxpack_items_new(o, e));
        let (status, push) = allocations(|| {
            ctxpack_items_push_many(
                items,
                input.descs.as_ptr(),
                input.descs.len(),
                ptr::null_mut(),
            )
        });
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        // One run first, so that lazily initialised state is not counted.
        for _ in 0..2 {
            ctxpack_result_free(make(|o, e| {
                ctxpack_pipeline_run(pipeline, items, budget, ptr::null(), o, e)
            }));
        }
        let (result, run) = allocations(|| {
            make(|o, e| ctxpack_pipeline_run(pipeline, items, budget, ptr::null(), o, e))
        });
        let mut ptr_out = ptr::null();
        let mut len = 0;
        let (status, indices) =
            allocations(|| ctxpack_result_indices(result, &mut ptr_out, &mut len));
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        ctxpack_result_free(result);
        ctxpack_items_free(items);
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
        Counts {
            push,
            run,
            indices,
            selected: len,
        }
    }
}

/// The allocations of a run do not grow with N: the same count at N = 10 000 and
/// 100 000 within two (a few less at N = 100, where small sorts need no buffer), for the chat
/// pipeline and for the tagged one (frequency scorer, u-shaped placer); reading the
/// indices allocates nothing.
#[test]
fn a_run_allocates_the_same_at_every_size() {
    let mut runs = Vec::new();
    for tagged in [false, true] {
        for n in [100, 10_000, 100_000] {
            let c = count(&input(n), tagged);
            eprintln!(
                "tagged {tagged}, N = {n}: push {} allocations, run {}, indices {} ({} selected)",
                c.push, c.run, c.indices, c.selected
            );
            assert!(c.selected > n / 4, "the budget selects a good share");
            assert_eq!(c.indices, 0, "reading the indices allocates nothing");
            runs.push((tagged, n, c.run));
        }
    }
    for pair in runs.chunks(3) {
        let [(tagged, _, small), (_, _, mid), (_, _, large)] = pair else {
            unreachable!()
        };
        // Hash tables sized by the distinct tag sets may grow once more or less.
        assert!(mid.abs_diff(*large) <= 2, "tagged {tagged}: {pair:?}");
        assert!(small <= mid && *large <= 70, "tagged {tagged}: {pair:?}");
    }
}

/// Pushing a batch allocates per store of text, not per item or tag: at N = 100 000 (about
/// 18 MB of text) far fewer allocations than items.
#[test]
fn a_batch_push_allocates_per_store() {
    let input = input(100_000);
    let bytes: usize = input.contents.iter().map(String::len).sum::<usize>()
        + input
            .descs
            .iter()
            .zip(&input.tags)
            .map(|(d, t)| t[..d.tag_count].iter().map(|t| t.len).sum::<usize>())
            .sum::<usize>();
    let c = count(&input, true);
    // About four allocations per store of 62–64 KiB of text (the contents, the tags'
    // buffer, their span table and the shared header; now and then the tags' buffer or
    // the span table grows once more), and the list.
    let stores = bytes.div_ceil(62 * 1024);
    eprintln!("{bytes} bytes of text: {} allocations for the push", c.push);
    assert!(c.push <= 5 * stores + 4, "{} allocations", c.push);
    assert!(c.push * 50 < input.descs.len(), "{} allocations", c.push);
}

/// Allocations of a one-shot run (`ctxpack_pipeline_run_descs`) over `input` with the
/// chat pipeline, half the tokens as target: of the run after a first one (whose memory
/// the pipeline may keep), and of a run after `ctxpack_pipeline_release_memory`; and how
/// many items it placed.
fn count_oneshot(input: &Input) -> OneShotCounts {
    // SAFETY (block): valid arrays and live handles.
    unsafe {
        let pipeline = pipeline(false);
        let budget = half_budget(input);
        let run = || {
            make(|o, e| {
                let (descs, n) = (input.descs.as_ptr(), input.descs.len());
                ctxpack_pipeline_run_descs(pipeline, descs, n, budget, ptr::null(), o, e)
            })
        };
        ctxpack_result_free(run());
        let (result, second, largest) = allocations_and_largest(run);
        let (mut indices, mut len) = (ptr::null(), 0);
        ctxpack_result_indices(result, &mut indices, &mut len);
        ctxpack_result_free(result);
        let status = ctxpack_pipeline_release_memory(pipeline);
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        let (result, released) = allocations(run);
        ctxpack_result_free(result);
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
        OneShotCounts {
            second,
            largest,
            released,
            placed: len,
        }
    }
}

#[derive(Debug)]
struct OneShotCounts {
    /// The allocations of the second run.
    second: usize,
    /// The size of the second run's largest allocation, in bytes.
    largest: usize,
    /// The allocations of a run after the pipeline's memory was released.
    released: usize,
    /// The items the runs placed.
    placed: usize,
}

/// The one-shot run's columnar path (docs/ffi.md) makes the same few allocations at every
/// N, its result included: no store, item or string is allocated per item (the general
/// path would make hundreds at N = 100 000, one per 64 KiB store at least). Up to the
/// limit of the memory a pipeline keeps (131 072 descriptors), a run after the first
/// allocates only its result (at N = 100 in blocks of less than 1 KiB); after
/// `ctxpack_pipeline_release_memory`, and above the limit, it allocates its buffers too.
#[test]
fn a_columnar_one_shot_run_allocates_the_same_at_every_size() {
    let counts: Vec<(usize, OneShotCounts)> = [100, 10_000, 100_000, 131_072, 131_073]
        .into_iter()
        .map(|n| {
            let counts = count_oneshot(&input(n));
            eprintln!("one-shot, N = {n}: {counts:?}");
            assert!(counts.placed > n / 4, "the budget selects a good share");
            (n, counts)
        })
        .collect();
    let kept: Vec<usize> = counts[..4].iter().map(|(_, c)| c.second).collect();
    let released: Vec<usize> = counts[..4].iter().map(|(_, c)| c.released).collect();
    let large = &counts[4].1;
    assert!(kept.iter().all(|&c| c == kept[0] && c <= 8), "{counts:?}");
    // At N = 100 (61 placed) every allocation of a run after the first is below the size
    // for which glibc first consolidates the small blocks freed since (1 KiB): the
    // window's reasons (40 bytes each) stay in the kept memory.
    assert!(counts[0].1.largest < 1024, "{counts:?}");
    assert!(released.iter().all(|&c| c > kept[0] + 10), "{counts:?}");
    assert!(released[0] <= released[1] && released[1].abs_diff(released[3]) <= 2);
    assert!(released[3] <= 50, "{counts:?}");
    // Above the limit every run allocates its buffers (and frees each stage's when it is
    // done, so some are allocated more than once).
    assert_eq!(large.second, large.released, "{counts:?}");
    assert!(
        large.second >= released[3] && large.second <= 50,
        "{counts:?}"
    );
}

/// Allocations of a run into `*result` (`ctxpack_pipeline_run_descs_into`) over `input`
/// with the chat pipeline and [`slotted_budget`]; and the placed indices.
fn count_into(input: &Input, result: &mut *mut ctxpack_result) -> (usize, Vec<usize>) {
    // SAFETY (block): valid arrays, live handles, `*result` NULL or a live result.
    unsafe {
        let pipeline = pipeline(false);
        let budget = slotted_budget(input);
        let (descs, n) = (input.descs.as_ptr(), input.descs.len());
        let (status, count) = allocations(|| {
            ctxpack_pipeline_run_descs_into(
                pipeline,
                descs,
                n,
                budget,
                ptr::null(),
                result,
                ptr::null_mut(),
            )
        });
        assert_eq!(status, ctxpack_status::CTXPACK_OK);
        let (mut indices, mut len) = (ptr::null(), 0);
        ctxpack_result_indices(*result, &mut indices, &mut len);
        let placed = std::slice::from_raw_parts(indices, len).to_vec();
        ctxpack_budget_free(budget);
        ctxpack_pipeline_free(pipeline);
        (count, placed)
    }
}

/// A run into a reused result allocates nothing once the result's memory has grown to the
/// run's size (docs/ffi.md, "Reusing a result"): from the third run of a size on (the
/// first makes the result, the second the spare window it swaps with), and for any
/// smaller run after that; a larger one grows it. Its selections are the one-shot run's.
/// The larger input has repeated contents and items without a timestamp among the placed
/// ones, so Deduplicate's grouping and the chronological placer's second list run too.
#[test]
fn a_run_into_a_reused_result_allocates_nothing() {
    let (small, mut large) = (input(100), input(10_000));
    // Every tenth content repeats the one before it: Deduplicate groups them.
    for i in (5..large.descs.len()).step_by(10) {
        large.descs[i].content = large.descs[i - 1].content;
    }
    let mut result = ptr::null_mut();
    let mut counts = Vec::new();
    let (s, l) = ((&small, "100"), (&large, "10 000"));
    for (input, name) in [s, s, s, l, l, l, s] {
        let (count, placed) = count_into(input, &mut result);
        // SAFETY (block): valid arrays and live handles.
        let oneshot = unsafe {
            let pipeline = pipeline(false);
            let budget = slotted_budget(input);
            let (descs, n) = (input.descs.as_ptr(), input.descs.len());
            let once = make(|o, e| {
                ctxpack_pipeline_run_descs(pipeline, descs, n, budget, ptr::null(), o, e)
            });
            let (mut indices, mut len) = (ptr::null(), 0);
            ctxpack_result_indices(once, &mut indices, &mut len);
            let placed = std::slice::from_raw_parts(indices, len).to_vec();
            ctxpack_result_free(once);
            ctxpack_budget_free(budget);
            ctxpack_pipeline_free(pipeline);
            placed
        };
        assert_eq!(placed, oneshot, "N = {name}");
        if input.descs.len() == large.descs.len() {
            // Items 0, 50, 100, ... have no timestamp; some are placed.
            assert!(
                placed.iter().any(|&i| i % 50 == 0),
                "an undated item placed"
            );
            // Of each repeated pair, one at most.
            let set: std::collections::HashSet<usize> = placed.iter().copied().collect();
            let both = (5..large.descs.len())
                .step_by(10)
                .any(|i| set.contains(&i) && set.contains(&(i - 1)));
            assert!(!both, "a repeated content placed twice");
        }
        eprintln!("run into a kept result, N = {name}: {count} allocations");
        counts.push(count);
    }
    // SAFETY: the last run's result.
    unsafe { ctxpack_result_free(result) };
    assert!(counts[0] > 0 && counts[3] > 0, "{counts:?}");
    assert_eq!([counts[2], counts[5], counts[6]], [0, 0, 0], "{counts:?}");
}
