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
#![no_main]

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
    let _ = check::run_and_check(&pipeline, &items, &budget, trace);
});
