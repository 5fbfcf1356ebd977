//! `budget_json`: arbitrary bytes as a budget document (the .NET `ContextBudget` JSON).
//!
//! The bytes are decoded lossily and read leniently and strictly. Every failure must be
//! an `InvalidBudget` error; the strict read succeeds exactly when the lenient one
//! succeeds without warnings, with the same budget. A budget that reads must
//!
//! * satisfy the budget rules (rebuilding it with `ContextBudget::with_all` succeeds and
//!   gives an equal budget);
//! * write (compact and indented) text that reads back, strictly and without warnings,
//!   to an equal budget, and writes again to the same bytes;
//! * write exactly the five properties, in the .NET order;
//! * run a pipeline over the fixed sample items without breaking an invariant.
#![no_main]

use ctxpack::diagnostics::TraceDetail;
use ctxpack::policy::{JsonReadOptions, Preset};
use ctxpack::{ContextBudget, ErrorCode};
use ctxpack_fuzz::{check, generate};
use libfuzzer_sys::fuzz_target;

const PROPERTIES: [&str; 5] = [
    "maxTokens",
    "targetTokens",
    "outputReserve",
    "reservedSlots",
    "estimationSafetyMarginPercent",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let options = JsonReadOptions::default();
    let read = |o: &JsonReadOptions<'_>| ContextBudget::from_json_with(&text, o);
    let Some(budget) = check::read_both_ways(options, ErrorCode::InvalidBudget, read) else {
        return;
    };
    let rebuilt = ContextBudget::with_all(
        budget.max_tokens(),
        budget.target_tokens(),
        budget.output_reserve(),
        budget.reserved_slots().to_vec(),
        budget.estimation_safety_margin_percent(),
    )
    .expect("a budget read from JSON satisfies the budget rules");
    assert_eq!(rebuilt, budget);
    for json in [budget.to_json(), budget.to_json_pretty()] {
        let again =
            check::reads_back_strictly(&json, &budget, options, ContextBudget::from_json_with);
        assert_eq!(again.to_json(), budget.to_json());
        assert_eq!(again.to_json_pretty(), budget.to_json_pretty());
        let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        let keys: Vec<&str> = value
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, PROPERTIES, "{json}");
    }
    let pipeline = Preset::Chat
        .policy()
        .build_pipeline()
        .expect("the chat preset builds");
    let _ = check::run_and_check(
        &pipeline,
        &generate::sample_items(),
        &budget,
        TraceDetail::Stage,
    );
});
