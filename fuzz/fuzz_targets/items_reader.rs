//! `items_reader`: arbitrary bytes as the CLI's item input (JSON array or JSON Lines).
//!
//! The bytes are decoded lossily and given to `ctxpack::model::read_items`. Items that
//! read are run through the `chat` preset under a budget derived from a hash of the input
//! (zero, small, the items' own token total, or `i64::MAX`), traced at a level the hash
//! picks, and every run invariant is checked (see `ctxpack_fuzz::check`): no panic, no
//! wrapped token sum (a sum that does not fit must surface as `Error::TokenOverflow`).
#![no_main]

use ctxpack::diagnostics::TraceDetail;
use ctxpack::model::read_items;
use ctxpack::policy::Policy;
use ctxpack::{ContextBudget, ContextItem};
use ctxpack_fuzz::{check, fnv1a};
use libfuzzer_sys::fuzz_target;

/// The budget for `items`, chosen by `hash`: max and target both derived from it.
fn budget(items: &[ContextItem], hash: u64) -> ContextBudget {
    let total = items
        .iter()
        .fold(0i64, |acc, item| acc.saturating_add(item.tokens().max(0)));
    let max = match hash % 5 {
        0 => 0,
        1 => (hash >> 8) as i64 & 0xfff,
        2 => total,
        3 => total / 2,
        _ => i64::MAX,
    };
    let target = match (hash >> 4) % 3 {
        0 => max,
        1 => max / 2,
        _ => 0,
    };
    ContextBudget::new(max, target).expect("0 <= target <= max")
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(items) = read_items(&text) else {
        return;
    };
    let hash = fnv1a(data);
    let pipeline = Policy::preset("chat")
        .and_then(|p| p.build_pipeline())
        .expect("the chat preset builds");
    let trace =
        [TraceDetail::None, TraceDetail::Stage, TraceDetail::Item][(hash >> 12) as usize % 3];
    let _ = check::run_and_check(&pipeline, &items, &budget(&items, hash), trace);
});
