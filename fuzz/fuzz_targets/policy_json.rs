//! `policy_json`: arbitrary bytes as a policy document.
//!
//! The bytes are decoded lossily (invalid UTF-8 becomes U+FFFD, so the reader still sees
//! almost every input) and read twice with a registry of two host scorer types (`host`,
//! `contentLength`): leniently and strictly. The two reads must agree: the strict read
//! succeeds exactly when the lenient one succeeds without warnings, with the same policy.
//! A policy that parses must
//!
//! * write back (compact and pretty) and read back, strictly and without warnings, to an
//!   equal policy;
//! * build a pipeline or fail with an error, and a built pipeline must run a small fixed
//!   item list under every overflow-relevant budget shape without breaking an invariant.
#![no_main]

use std::sync::{Arc, OnceLock};

use ctxpack::diagnostics::TraceDetail;
use ctxpack::policy::{JsonReadOptions, Policy, ScorerRegistry};
use ctxpack::scorer::{PerItemScorer, PriorityScorer};
use ctxpack::{ContextBudget, ContextItem, ErrorCode};
use ctxpack_fuzz::{check, generate};
use libfuzzer_sys::fuzz_target;

/// The host scorer types a fuzzed policy may name (one registry for the whole run, so
/// registered scorers compare equal across reads).
fn registry() -> &'static ScorerRegistry {
    static REGISTRY: OnceLock<ScorerRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut r = ScorerRegistry::new();
        r.register("host", Arc::new(PriorityScorer::new()))
            .expect("a valid name");
        let length = PerItemScorer::new(|i, items: &[&ContextItem]| {
            Ok(items[i].content().len() as f64 / 100.0)
        });
        r.register("contentLength", Arc::new(length))
            .expect("a valid name");
        r
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let options = JsonReadOptions {
        strict: false,
        registry: Some(registry()),
    };
    let read = |o: &JsonReadOptions<'_>| Policy::from_json_with(&text, o);
    let Some(policy) = check::read_both_ways(options, ErrorCode::InvalidPolicy, read) else {
        return;
    };
    for json in [policy.to_json(), policy.to_json_pretty()] {
        let json = json.expect("a policy read from JSON must write back");
        check::reads_back_strictly(&json, &policy, options, Policy::from_json_with);
    }
    let Ok(pipeline) = policy.build_pipeline() else {
        return;
    };
    let items = generate::sample_items();
    for (max, target) in [(0, 0), (40, 20), (1_000, 1_000), (i64::MAX, i64::MAX)] {
        let budget = ContextBudget::new(max, target).expect("valid budget");
        let _ = check::run_and_check(&pipeline, &items, &budget, TraceDetail::Item);
    }
});
