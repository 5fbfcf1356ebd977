//! What a prefix state costs per turn (`docs/prefix-cache.md`): a plain run, a Measure run
//! and a Hold run on the same turns of the simulated agent session
//! (`tests/common/agent_session.rs`), each given the state its mode produced on the turn
//! before. Runs alternate; medians of thread CPU time. The Hold figures are for a held
//! turn and for a re-anchoring one, which searches the watermark.
//!
//! ```sh
//! cargo bench --bench prefix            # about a minute
//! ```

#[path = "../tests/common/agent_session.rs"]
mod agent_session;

use std::time::Duration;

use agent_session::{doc_budget, doc_pipeline, Session, SessionShape, DOC_SHAPE};
use ctxpack::prefix::{PrefixMode, PrefixOptions, PrefixState, TurnOutcome};
use ctxpack::{ContextBudget, Pipeline, RunOptions};

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
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; the clock id (3) exists on Linux.
    let rc = unsafe { clock_gettime(3, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn time(f: impl FnOnce()) -> Duration {
    let start = thread_cpu_ns();
    f();
    Duration::from_nanos(thread_cpu_ns() - start)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The states each mode carries into every turn of `session`.
fn states(
    session: &Session,
    p: &Pipeline,
    b: &ContextBudget,
    mode: PrefixMode,
) -> Vec<PrefixState> {
    let mut out = Vec::with_capacity(session.turns());
    let mut state: Option<PrefixState> = None;
    for t in 0..session.turns() {
        let mut o = PrefixOptions::new(mode);
        o.previous = state.as_ref();
        let run = p
            .run_prefix(session.at(t), b, &RunOptions::default(), &o)
            .expect("turn");
        out.push(run.state.clone());
        state = Some(run.state);
    }
    out
}

fn main() {
    let p = doc_pipeline();
    let b = doc_budget();
    let long = SessionShape {
        turns: 1000,
        ..DOC_SHAPE
    };
    println!(
        "| session turn | items | plain run | Measure | Hold (held turn) | Hold (re-anchor) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for (shape, turns) in [(DOC_SHAPE, vec![50, 100, 200]), (long, vec![1000])] {
        let session = Session::generate(18, shape);
        let measure = states(&session, &p, &b, PrefixMode::Measure);
        let hold = states(&session, &p, &b, PrefixMode::Hold);
        for turn in turns {
            // The turn itself, and the nearest re-anchoring turn at or after it.
            let t = turn - 1;
            let outcome = |t: usize| {
                let mut o = PrefixOptions::new(PrefixMode::Hold);
                o.previous = Some(&hold[t - 1]);
                p.run_prefix(session.at(t), &b, &RunOptions::default(), &o)
                    .unwrap()
                    .reuse
                    .outcome
            };
            let held_t = (t..session.turns())
                .chain((1..t).rev())
                .find(|&t| outcome(t) == TurnOutcome::Held)
                .expect("a held turn");
            let re_t = (t..session.turns())
                .chain((1..t).rev())
                .find(|&t| outcome(t) == TurnOutcome::Reanchored)
                .expect("a re-anchoring turn");
            let mut samples: [Vec<Duration>; 4] = Default::default();
            for _ in 0..41 {
                samples[0].push(time(|| {
                    p.run(session.at(t), &b).unwrap();
                }));
                samples[1].push(time(|| {
                    let mut o = PrefixOptions::new(PrefixMode::Measure);
                    o.previous = Some(&measure[t - 1]);
                    p.run_prefix(session.at(t), &b, &RunOptions::default(), &o)
                        .unwrap();
                }));
                for (k, at) in [(2, held_t), (3, re_t)] {
                    samples[k].push(time(|| {
                        let mut o = PrefixOptions::new(PrefixMode::Hold);
                        o.previous = Some(&hold[at - 1]);
                        p.run_prefix(session.at(at), &b, &RunOptions::default(), &o)
                            .unwrap();
                    }));
                }
            }
            let [a, m, h, r] = samples.map(|mut s| median(&mut s));
            let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
            println!(
                "| {turn} | {} | {} | {} ({:.1}×) | {} ({:.1}×) | {} ({:.1}×) |",
                session.at(t).len(),
                us(a),
                us(m),
                m.as_secs_f64() / a.as_secs_f64(),
                us(h),
                h.as_secs_f64() / a.as_secs_f64(),
                us(r),
                r.as_secs_f64() / a.as_secs_f64(),
            );
        }
    }
}
