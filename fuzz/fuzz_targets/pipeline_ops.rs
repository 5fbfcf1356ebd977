//! `pipeline_ops`: pipelines assembled through the Rust API from arbitrary bytes.
//!
//! The first bytes choose the components — every built-in scorer (nested scaled and
//! composite scorers, decay on a fixed clock, a callback scorer returning arbitrary scores
//! including NaN and ±inf), every slicer (knapsack, percentage quotas, count quotas,
//! count-constrained knapsack, nested) and placer — with arbitrary f64 and i64
//! configuration values, the deduplication flag, the overflow strategy, the group value
//! mode and the pinned-first option. The rest gives the budget, the trace level and up to
//! 64 items with arbitrary tokens (near `i64::MAX` included), a third of them in groups. Invalid configurations must fail with an error; built pipelines
//! must satisfy every run invariant of `ctxpack_fuzz::check`.
//!
//! When the pipeline has a policy form (`Policy::from_pipeline`: built-in components on
//! the system clock), that policy must write to JSON and read back equal, rebuild, and
//! the rebuilt pipeline must select the same items as the original with its scorer in
//! policy form (see [`policy_shaped`]).
#![no_main]

use std::sync::Arc;

use ctxpack::policy::Policy;
use ctxpack::scorer::CompositeScorer;
use ctxpack::Pipeline;
use ctxpack_fuzz::{check, generate, ByteReader};
use libfuzzer_sys::fuzz_target;

/// `pipeline` with a top-level scorer that is not a composite wrapped in a one-entry composite of
/// weight 1, as a policy always builds it (policy step M1 in docs/decisions.md). The wrapper turns
/// `-0.0` scores into `+0.0`, and under the IEEE total order of Sort that can reorder tied items
/// (spec 03 §5.0), so this — not the original — is what the rebuilt pipeline must equal.
fn policy_shaped(pipeline: &Pipeline) -> Pipeline {
    let scorer = pipeline.scorer().clone();
    if scorer.as_any().is::<CompositeScorer>() {
        return pipeline.clone();
    }
    Pipeline::builder()
        .scorer(Arc::new(
            CompositeScorer::new(vec![(scorer, 1.0)]).expect("weight 1 is valid"),
        ))
        .slicer(pipeline.slicer().clone())
        .placer(pipeline.placer().clone())
        .deduplication(pipeline.deduplication())
        .overflow_strategy(pipeline.overflow_strategy())
        .group_value(pipeline.group_value())
        .pinned_first(pipeline.pinned_first())
        .build()
        .expect("every component is set")
}

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
    let _ = check::run_and_check(&pipeline, &items, &budget, trace);

    let Ok(policy) = Policy::from_pipeline(&pipeline) else {
        return;
    };
    let result = check::run_and_check(&policy_shaped(&pipeline), &items, &budget, trace);
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
