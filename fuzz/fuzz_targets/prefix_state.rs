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
//!
//! The same bytes also go through the C ABI (`ctxpack_prefix_state_from_bytes` and
//! `_from_json`): the status is `CTXPACK_OK` exactly when the Rust reader accepts them,
//! else `CTXPACK_INVALID_STATE` (or `CTXPACK_INVALID_UTF8` for JSON that is not UTF-8)
//! with a NULL handle, and an accepted state writes back the same bytes (with the length
//! query and a buffer one byte short refused).
#![no_main]

use ctxpack::ffi::{
    ctxpack_prefix_state, ctxpack_prefix_state_free, ctxpack_prefix_state_from_bytes,
    ctxpack_prefix_state_from_json, ctxpack_prefix_state_to_bytes, ctxpack_status, ctxpack_str,
};
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
        assert_eq!(
            state.to_bytes(),
            data,
            "accepted bytes are the canonical encoding"
        );
    }
    through_c(data, binary.is_ok(), json.is_ok());
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
        assert_eq!(
            PrefixState::from_bytes(&state.to_bytes()).as_ref(),
            Ok(state)
        );
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
                assert_eq!(
                    seen.len(),
                    run.selection.indices.len(),
                    "distinct positions"
                );
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
                assert_eq!(
                    PrefixState::from_bytes(&run.state.to_bytes()),
                    Ok(run.state)
                );
            }
        }
    }
});

/// The C readers agree with the Rust ones, and an accepted state writes back `data`.
fn through_c(data: &[u8], binary_ok: bool, json_ok: bool) {
    use ctxpack_status::*;
    let mut state: *mut ctxpack_prefix_state = std::ptr::null_mut();
    // SAFETY: `data` is valid for its length; `state` is writable.
    let status = unsafe {
        ctxpack_prefix_state_from_bytes(data.as_ptr(), data.len(), &mut state, std::ptr::null_mut())
    };
    if binary_ok {
        assert_eq!(status, CTXPACK_OK);
        let mut len = 0usize;
        let mut buffer = vec![0u8; data.len()];
        // SAFETY: `state` is a live handle; the buffer holds `capacity` bytes.
        unsafe {
            let query = ctxpack_prefix_state_to_bytes(state, std::ptr::null_mut(), 0, &mut len);
            assert_eq!((query, len), (CTXPACK_OK, data.len()));
            let short =
                ctxpack_prefix_state_to_bytes(state, buffer.as_mut_ptr(), len - 1, &mut len);
            assert_eq!(short, CTXPACK_OUT_OF_RANGE);
            let full = ctxpack_prefix_state_to_bytes(state, buffer.as_mut_ptr(), len, &mut len);
            assert_eq!(full, CTXPACK_OK);
            ctxpack_prefix_state_free(state);
        }
        assert_eq!(buffer, data);
    } else {
        assert_eq!(status, CTXPACK_INVALID_STATE);
        assert!(state.is_null());
    }
    let text = ctxpack_str {
        ptr: data.as_ptr().cast(),
        len: data.len(),
    };
    // SAFETY: as above.
    let status = unsafe { ctxpack_prefix_state_from_json(text, &mut state, std::ptr::null_mut()) };
    match std::str::from_utf8(data) {
        Err(_) => assert_eq!(status, CTXPACK_INVALID_UTF8),
        Ok(_) if json_ok => {
            assert_eq!(status, CTXPACK_OK);
            // SAFETY: a live handle.
            unsafe { ctxpack_prefix_state_free(state) };
        }
        Ok(_) => assert_eq!(status, CTXPACK_INVALID_STATE),
    }
    if status != CTXPACK_OK {
        assert!(state.is_null());
    }
}
