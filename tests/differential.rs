//! Seeded random differential tests: ctxpack against the reference crate `cupel` 1.2.0.
//!
//! Five groups, one `#[test]` each:
//!
//! 1. `scorers_match_cupel` — all eleven scorers (nested Composite, Scaled over relative inners,
//!    Decay on a fixed clock, MetadataTrust parse edge cases, …);
//! 2. `slicers_match_cupel` — Greedy, Knapsack, Quota, CountQuota, CountConstrainedKnapsack;
//! 3. `placers_match_cupel` — Chronological and U-shaped;
//! 4. `pipelines_match_reference` — `ctxpack::Pipeline` against a reference driver built from the
//!    crate's components the way decisions D1–D10 in docs/decisions.md require;
//! 5. `reports_match_cupel_pipeline` — the crate's own `Pipeline` and report, where it is defined
//!    like ctxpack's (also validates the reference driver).
//!
//! Environment: `CTXPACK_DIFF_SEED` (run seed), `CTXPACK_DIFF_CASES` (cases per group),
//! `CTXPACK_DIFF_CASE` (replay one case); `CTXPACK_DIFF_ORACLE_ONLY` makes group 5 check only the
//! reference driver against the crate. Every failure names its seed and case number, prints the
//! command that replays it, and shows the input shrunk to the fewest items that still fail.

#[path = "differential/both.rs"]
mod both;
#[path = "differential/check.rs"]
mod check;
#[path = "differential/crosscheck.rs"]
mod crosscheck;
#[path = "differential/gen.rs"]
mod gen;
#[path = "differential/harness.rs"]
mod harness;
#[path = "differential/pipelines.rs"]
mod pipelines;
#[path = "differential/placers.rs"]
mod placers;
#[path = "differential/reference.rs"]
mod reference;
#[path = "differential/report.rs"]
mod report;
#[path = "common/rng.rs"]
mod rng;
#[path = "differential/scorers.rs"]
mod scorers;
#[path = "differential/slicers.rs"]
mod slicers;

use harness::run_group;

#[test]
fn scorers_match_cupel() {
    run_group("scorers_match_cupel", 10000, scorers::case);
}

#[test]
fn slicers_match_cupel() {
    run_group("slicers_match_cupel", 8000, slicers::case);
}

#[test]
fn placers_match_cupel() {
    run_group("placers_match_cupel", 4000, placers::case);
}

#[test]
fn pipelines_match_reference() {
    run_group("pipelines_match_reference", 10000, pipelines::case);
}

#[test]
fn reports_match_cupel_pipeline() {
    run_group("reports_match_cupel_pipeline", 8000, crosscheck::case);
}
