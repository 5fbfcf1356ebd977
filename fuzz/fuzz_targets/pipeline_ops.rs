//! `pipeline_ops`: pipelines assembled through the Rust API from arbitrary bytes.
//!
//! The first bytes choose the components — every built-in scorer (nested scaled and
//! composite scorers, decay on a fixed clock, a callback scorer returning arbitrary scores
//! including NaN and ±inf), every slicer (knapsack, percentage quotas, count quotas,
//! count-constrained knapsack, nested) and placer — with arbitrary f64 and i64
//! configuration values, the deduplication flag and the overflow strategy. The rest
//! gives the budget, the trace level and up to 64 items with arbitrary tokens (near
//! `i64::MAX` included). Invalid configurations must fail with an error; built pipelines
//! must satisfy every run invariant of `ctxpack_fuzz::check`.
//!
//! When the pipeline has a policy form (`Policy::from_pipeline`: built-in components on
//! the system clock), that policy must write to JSON and read back equal, rebuild, and
//! the rebuilt pipeline must select the same items.
#![no_main]

use ctxpack::policy::Policy;
use ctxpack_fuzz::{check, generate, ByteReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = ByteReader::new(data);
    let Ok(pipeline) = generate::pipeline(&mut r) else {
        return;
    };
    let Ok(budget) = generate::budget(&mut r) else {
        return;
    };
    let trace = generate::trace(&mut r);
    let items = generate::items(&mut r, 64);
    let result = check::run_and_check(&pipeline, &items, &budget, trace);

    let Ok(policy) = Policy::from_pipeline(&pipeline) else {
        return;
    };
    let json = policy.to_json().expect("a reflected policy writes");
    let read = Policy::from_json(&json).expect("a reflected policy reads back");
    assert_eq!(read, policy, "reflected policy round trip: {json}");
    let rebuilt = policy.build_pipeline().expect("a reflected policy builds");
    let again = check::run_and_check(&rebuilt, &items, &budget, trace);
    match (&result, &again) {
        (Ok(a), Ok(b)) => assert_eq!(a.indices, b.indices, "rebuilt pipeline differs: {json}"),
        (Err(a), Err(b)) => assert_eq!(a.code(), b.code(), "rebuilt pipeline fails differently"),
        _ => panic!("rebuilt pipeline: {result:?} vs {again:?} ({json})"),
    }
});
