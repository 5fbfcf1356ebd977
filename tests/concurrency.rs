//! One pipeline shared by 16 threads, 1 000 runs each on differing inputs; every result
//! must equal the single-threaded run of the same input.

use std::sync::Arc;
use std::thread;

use ctxpack::diagnostics::TraceDetail;
use ctxpack::policy::Policy;
use ctxpack::{ContextBudget, ContextItem, ContextKind, Pipeline, RunOptions, Selection};

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

const THREADS: usize = 16;
const RUNS_PER_THREAD: usize = 1_000;

/// Deterministic inputs: input `k` differs from every other in size, tokens and times.
fn input(k: usize) -> (Vec<ContextItem>, ContextBudget) {
    let kinds = [
        "Message",
        "Document",
        "ToolOutput",
        "Memory",
        "SystemPrompt",
    ];
    let mut rng = Rng::new(k as u64);
    let n = 5 + (k % 40);
    let items = (0..n)
        .map(|i| {
            let r = rng.next_u64();
            ContextItem::builder(
                format!("item {} of input {k}", r % 23),
                (r % 300) as i64 - 5,
            )
            .kind(ContextKind::new(kinds[(r >> 8) as usize % kinds.len()]).unwrap())
            .timestamp(1_700_000_000_000_000_000 + (r >> 16) as i64 % 1_000_000_000_000)
            .priority((r >> 24) as i64 % 10)
            .tags([["a", "b", "c"][(r >> 30) as usize % 3]])
            .pinned(i == 0 && k % 3 == 0)
            .build()
            .unwrap()
        })
        .collect();
    (
        items,
        ContextBudget::new(5_000, 400 + (k as i64 % 7) * 300).unwrap(),
    )
}

fn run(p: &Pipeline, k: usize) -> ctxpack::Result<Selection> {
    let (items, budget) = input(k);
    let trace = if k % 2 == 0 {
        TraceDetail::None
    } else {
        TraceDetail::Stage
    };
    p.run_with(
        &items,
        &budget,
        &RunOptions {
            trace,
            on_overflow: None,
        },
    )
    .map(|mut s| {
        // Stage timings differ between runs; everything else must be identical.
        if let Some(r) = s.report.as_mut() {
            r.events.iter_mut().for_each(|e| e.duration_ms = 0.0);
        }
        s
    })
}

#[test]
fn one_pipeline_from_sixteen_threads_matches_single_threaded_runs() {
    for preset in ["chat", "rag", "debugging"] {
        let pipeline = Arc::new(Policy::preset(preset).unwrap().build_pipeline().unwrap());
        let expected: Arc<Vec<_>> = Arc::new(
            (0..THREADS * RUNS_PER_THREAD)
                .map(|k| run(&pipeline, k))
                .collect(),
        );
        assert!(expected.iter().filter(|r| r.is_ok()).count() > THREADS * RUNS_PER_THREAD / 2);
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pipeline, expected) = (Arc::clone(&pipeline), Arc::clone(&expected));
                thread::spawn(move || {
                    // Interleave the inputs so threads run different ones at the same time.
                    for j in 0..RUNS_PER_THREAD {
                        let k = j * THREADS + t;
                        assert_eq!(
                            run(&pipeline, k),
                            expected[k],
                            "{preset}: input {k}, thread {t}"
                        );
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker thread");
        }
    }
}
