//! `prefix_state`: arbitrary bytes as a serialised prefix state (`docs/prefix-cache.md`).
//!
//! The bytes go to the binary reader, the JSON reader (decoded lossily) and the reader that
//! picks the form. Every failure must be an `InvalidState` error. A state that reads must
//!
//! * be the canonical encoding when read from bytes (writing it gives the same bytes back);
//! * write bytes and JSON that read back to an equal state;
//! * serve as the previous state of Measure and Hold runs (with and without a
//!   conversation key) over the fixed sample items without breaking anything: a run either
//!   refuses it with `InvalidState` (another conversation) or returns a window of distinct
//!   input positions, a report whose counts agree with the states, and a value given up
//!   within the allowed share.
#![no_main]

use ctxpack::policy::Preset;
use ctxpack::prefix::{PrefixMode, PrefixOptions, PrefixState};
use ctxpack::{ContextBudget, ErrorCode, RunOptions};
use ctxpack_fuzz::{fnv1a, generate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let binary = PrefixState::from_bytes(data);
    let json = PrefixState::from_json(&String::from_utf8_lossy(data));
    let either = PrefixState::read(data);
    for read in [&binary, &json, &either] {
        if let Err(e) = read {
            assert_eq!(e.code(), ErrorCode::InvalidState, "{e}");
        }
    }
    if let Ok(state) = &binary {
        assert_eq!(state.to_bytes(), data, "accepted bytes are the canonical encoding");
    }
    let mut states: Vec<PrefixState> = [binary, json, either].into_iter().flatten().collect();
    states.dedup();
    let items = generate::sample_items();
    let pipeline = Preset::Chat
        .policy()
        .build_pipeline()
        .expect("the chat preset builds");
    let target = 20 + (fnv1a(data) % 100) as i64;
    let budget = ContextBudget::new(target, target).expect("a valid budget");
    for state in &states {
        assert_eq!(PrefixState::from_bytes(&state.to_bytes()).as_ref(), Ok(state));
        assert_eq!(PrefixState::from_json(&state.to_json()).as_ref(), Ok(state));
        for mode in [PrefixMode::Measure, PrefixMode::Hold] {
            for key in [None, Some(&b"fuzz"[..])] {
                let mut o = PrefixOptions::new(mode);
                o.previous = Some(state);
                o.conversation = key;
                let run = match pipeline.run_prefix(&items, &budget, &RunOptions::default(), &o) {
                    Ok(run) => run,
                    Err(e) => {
                        assert_eq!(e.code(), ErrorCode::InvalidState, "{e}");
                        continue;
                    }
                };
                let mut seen = run.selection.indices.clone();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), run.selection.indices.len(), "distinct positions");
                assert!(seen.iter().all(|&i| i < items.len()));
                let r = &run.reuse;
                assert_eq!(r.previous_entries, state.entries().len());
                assert_eq!(r.window_entries, run.state.entries().len());
                assert!(r.kept_entries <= r.previous_entries.min(r.window_entries));
                assert_eq!(run.state.turn(), state.turn().saturating_add(1));
                assert!(
                    r.value_given_up <= o.max_value_loss * r.fresh_value.abs() + 1e-9,
                    "{r:?}"
                );
                assert_eq!(PrefixState::from_bytes(&run.state.to_bytes()), Ok(run.state));
            }
        }
    }
});
