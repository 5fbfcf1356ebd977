//! `policy_json`: arbitrary bytes as a policy document.
//!
//! The bytes are decoded lossily (invalid UTF-8 becomes U+FFFD, so the reader still sees
//! almost every input) and given to `Policy::from_json`. A policy that parses must
//!
//! * write back (compact and pretty) and read back to an equal policy;
//! * build a pipeline or fail with an error, and a built pipeline must run a small fixed
//!   item list under every overflow-relevant budget shape without breaking an invariant.
#![no_main]

use ctxpack::diagnostics::TraceDetail;
use ctxpack::policy::Policy;
use ctxpack::ContextBudget;
use ctxpack_fuzz::{check, generate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(policy) = Policy::from_json(&text) else {
        return;
    };
    for json in [policy.to_json(), policy.to_json_pretty()] {
        let json = json.expect("a policy read from JSON must write back");
        let again = Policy::from_json(&json).expect("written JSON must read back");
        assert_eq!(again, policy, "round trip changed the policy: {json}");
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
