//! Group 5: the crate's own `Pipeline` as a second opinion, on inputs where it is defined like
//! ctxpack (unique contents, no reserved slots, no safety margin). Its report — totals, stage
//! counts, inclusions and the Classify/Deduplicate/Slice/Place exclusions with their reasons — must
//! match ctxpack's and the reference driver's. Placement order is compared only where the crate's
//! slicer-order merge (decision D2 in docs/decisions.md) and re-sort before truncation (decision
//! D3) cannot matter, i.e. where no two sliced items tie for the placer or the truncation.
//!
//! Comparing the reference with the crate validates the oracle of the pipeline group.

use ctxpack::ErrorCode;

use crate::both::{cupel_error_code, id_of, theirs_all, Both};
use crate::check::same;
use crate::gen::{self, ItemSpec, PipelineSpec};
use crate::harness::{verify, Case, HasItems};
use crate::pipelines::observe_ctxpack;
use crate::reference::{self, Expected, Failure};
use crate::report::{Parts, ReportView};

/// A placement and its report, from any of the three sources.
type Observed = Result<(Vec<usize>, ReportView), ErrorCode>;

/// One cross-check case.
#[derive(Debug, Clone)]
struct CrossCase {
    spec: PipelineSpec,
}

impl HasItems for CrossCase {
    fn items_mut(&mut self) -> &mut Vec<ItemSpec> {
        &mut self.spec.items
    }
}

/// Generates and checks one case.
pub fn case(c: &Case) -> Result<(), String> {
    let spec = gen::pipeline(&mut c.rng(), true);
    verify(CrossCase { spec }, check)
}

/// Runs the crate's pipeline, the reference and ctxpack, and compares each with the crate.
fn check(case: &CrossCase) -> Result<(), String> {
    let spec = &case.spec;
    let expected = reference::run(spec);
    let theirs = observe_cupel(spec);
    let reference: Observed = expected
        .clone()
        .map(|x| (x.indices, x.report))
        .map_err(|f| f.code);
    agree(&theirs, &reference, &expected)
        .map_err(|e| format!("reference driver vs cupel::Pipeline: {e}"))?;
    if std::env::var_os("CTXPACK_DIFF_ORACLE_ONLY").is_some() {
        return Ok(());
    }
    agree(&theirs, &observe_ctxpack(spec), &expected)
        .map_err(|e| format!("ctxpack vs cupel::Pipeline: {e}"))
}

/// The crate pipeline's placement and report (Item detail, as its `dry_run`).
fn observe_cupel(spec: &PipelineSpec) -> Observed {
    let pipeline = cupel::Pipeline::builder()
        .scorer(spec.scorer.theirs())
        .slicer(spec.slicer.theirs())
        .placer(spec.placer.theirs())
        .deduplication(spec.dedup)
        .overflow_strategy(match spec.overflow {
            ctxpack::OverflowStrategy::Throw => cupel::OverflowStrategy::Throw,
            ctxpack::OverflowStrategy::Truncate => cupel::OverflowStrategy::Truncate,
            ctxpack::OverflowStrategy::Proceed => cupel::OverflowStrategy::Proceed,
        })
        .build()
        .expect("cupel pipeline builds");
    let items = theirs_all(&spec.items);
    let mut collector = cupel::DiagnosticTraceCollector::new(cupel::TraceDetailLevel::Item);
    let placed = pipeline
        .run_traced(&items, &spec.budget.theirs(), &mut collector)
        .map_err(|e| cupel_error_code(&e))?;
    Ok((
        placed.iter().map(id_of).collect(),
        ReportView::of_cupel(&collector.into_report()),
    ))
}

/// Compares another observation with the crate's, within what the crate defines alike.
fn agree(
    theirs: &Observed,
    other: &Observed,
    expected: &Result<Expected, Failure>,
) -> Result<(), String> {
    let x = match expected {
        Err(Failure {
            crate_silent: true, ..
        }) => return Ok(()), // decision D10 in docs/decisions.md: the crate skips the kind
        Err(_) => return same("error kind", &theirs.as_ref().err(), &other.as_ref().err()),
        Ok(x) => x,
    };
    let ((want, want_report), (got, got_report)) = match (theirs, other) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            return Err(format!(
                "outcomes differ: cupel {:?}, other {:?}",
                outcome(theirs),
                outcome(other)
            ))
        }
    };
    if x.truncation_tie {
        return Ok(()); // the crate's re-sort may keep a different one of the tied items
    }
    same("placed set", &sorted(want), &sorted(got))?;
    if !x.placement_tie {
        same("placement order", want, got)?;
    }
    want_report.diff(
        got_report,
        Parts {
            included_order: !x.placement_tie,
            excluded: true,
        },
    )
}

fn outcome(o: &Observed) -> Result<&Vec<usize>, &ErrorCode> {
    o.as_ref().map(|(placed, _)| placed)
}

fn sorted(xs: &[usize]) -> Vec<usize> {
    let mut v = xs.to_vec();
    v.sort_unstable();
    v
}
