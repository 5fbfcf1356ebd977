//! Group 4: whole pipelines. `ctxpack::Pipeline` against the reference driver (the crate's
//! components assembled the way decisions D1–D10 in docs/decisions.md require) on random inputs:
//! pinned, zero-token and negative-token items, repeated contents with dedup on and off, every
//! slicer, both placers, all three overflow strategies, reserved slots and safety margins, untraced
//! and traced at both detail levels. Placement, scores, reasons, errors, overflow events and the
//! full report must agree.

use std::cell::RefCell;

use ctxpack::diagnostics::{
    OverflowEvent, PipelineStage, SelectionReport, TraceDetail, TraceEvent,
};
use ctxpack::{ContextBudget, ContextItem, Pipeline, RunOptions, Selection};

use crate::both::Both;
use crate::check::{close, same};
use crate::gen::{self, ItemSpec, PipelineSpec};
use crate::harness::{verify, Case, HasItems};
use crate::reference::{self, Expected};
use crate::report::{Parts, ReportView};

/// One pipeline case: the spec and the trace detail of the run.
#[derive(Debug, Clone)]
struct PipelineCase {
    spec: PipelineSpec,
    trace: TraceDetail,
}

impl HasItems for PipelineCase {
    fn items_mut(&mut self) -> &mut Vec<ItemSpec> {
        &mut self.spec.items
    }
}

/// Generates and checks one case.
pub fn case(c: &Case) -> Result<(), String> {
    let mut rng = c.rng();
    let spec = gen::pipeline(&mut rng, false);
    let trace = *rng.pick(&[TraceDetail::None, TraceDetail::Stage, TraceDetail::Item]);
    verify(PipelineCase { spec, trace }, check)
}

/// Builds the ctxpack pipeline of a spec.
pub fn our_pipeline(spec: &PipelineSpec) -> Result<Pipeline, String> {
    Pipeline::builder()
        .scorer(spec.scorer.ours())
        .slicer(spec.slicer.ours())
        .placer(spec.placer.ours())
        .deduplication(spec.dedup)
        .overflow_strategy(spec.overflow)
        .build()
        .map_err(|e| format!("ctxpack pipeline build failed: {e}"))
}

/// Runs ctxpack and the reference, and compares.
fn check(case: &PipelineCase) -> Result<(), String> {
    let spec = &case.spec;
    let expected = reference::run(spec);
    let items: Vec<ContextItem> = spec.items.iter().map(Both::ours).collect();
    let budget = spec.budget.ours();
    let pipeline = our_pipeline(spec)?;
    let delivered = RefCell::new(Vec::new());
    let callback = |e: &OverflowEvent| delivered.borrow_mut().push(e.clone());
    let options = RunOptions {
        trace: case.trace,
        on_overflow: Some(&callback),
    };
    let got = pipeline.run_with(&items, &budget, &options);
    match (expected, got) {
        (Err(want), Err(e)) => same("error kind", &want.code, &e.code()),
        (Err(want), Ok(sel)) => Err(format!(
            "expected error {:?}, got placement {:?}",
            want.code, sel.indices
        )),
        (Ok(want), Err(e)) => Err(format!(
            "expected placement {:?}, got error: {e}",
            want.indices
        )),
        (Ok(want), Ok(sel)) => {
            let event = want.overflow.clone().map(|(over, merged)| OverflowEvent {
                tokens_over_budget: over,
                overflowing_items: merged,
                budget: budget.clone(),
            });
            compare_selection(&want, &sel, &event)?;
            same(
                "overflow events delivered to the callback",
                &Vec::from_iter(event.clone()),
                &*delivered.borrow(),
            )?;
            compare_report(&want, sel.report.as_ref(), &event, case.trace)
        }
    }
}

/// Placement, scores, reasons and the overflow event of a successful run.
fn compare_selection(
    want: &Expected,
    got: &Selection,
    event: &Option<OverflowEvent>,
) -> Result<(), String> {
    same("placement (input positions)", &want.indices, &got.indices)?;
    same("inclusion reasons", &want.reasons, &got.reasons)?;
    let scores_agree = want.scores.len() == got.scores.len()
        && want
            .scores
            .iter()
            .zip(&got.scores)
            .all(|(w, g)| close(*w, *g));
    if !scores_agree {
        return Err(format!(
            "placed scores: expected {:?}, got {:?}",
            want.scores, got.scores
        ));
    }
    same("overflow event", event, &got.overflow)
}

/// The report of a traced run; none for an untraced one.
fn compare_report(
    want: &Expected,
    got: Option<&SelectionReport>,
    event: &Option<OverflowEvent>,
    trace: TraceDetail,
) -> Result<(), String> {
    let report = match (trace, got) {
        (TraceDetail::None, None) => return Ok(()),
        (TraceDetail::None, Some(_)) => return Err("untraced run returned a report".into()),
        (_, None) => return Err(format!("{trace:?}-traced run returned no report")),
        (_, Some(r)) => r,
    };
    let parts = Parts {
        included_order: true,
        excluded: true,
    };
    want.report.diff(&ReportView::of_ctxpack(report), parts)?;
    same(
        "report shortfalls",
        &want.shortfalls,
        &report.count_requirement_shortfalls,
    )?;
    same("report overflow", event, &report.overflow)?;
    item_events(want, &report.events, trace)
}

/// Decision D8 in docs/decisions.md: at Item detail each inclusion and exclusion has an item event
/// (duration 0.0, item_count 1) recorded before its stage's event; at Stage detail there are none.
fn item_events(want: &Expected, events: &[TraceEvent], trace: TraceDetail) -> Result<(), String> {
    let mut pending: Vec<&TraceEvent> = Vec::new();
    let mut got: Vec<(PipelineStage, Vec<usize>)> = Vec::new();
    for e in events {
        if e.item_index.is_none() {
            if let Some(stray) = pending.iter().find(|i| i.stage != e.stage) {
                return Err(format!(
                    "item event {stray:?} precedes the {:?} stage event",
                    e.stage
                ));
            }
            got.push((
                e.stage,
                pending.drain(..).filter_map(|i| i.item_index).collect(),
            ));
        } else if e.duration_ms != 0.0 || e.item_count != 1 {
            return Err(format!(
                "item event with duration or count other than 0.0 / 1: {e:?}"
            ));
        } else {
            pending.push(e);
        }
    }
    if !pending.is_empty() {
        return Err(format!(
            "item events after the last stage event: {pending:?}"
        ));
    }
    let mut expected = want.item_events.clone();
    for (stage, positions) in expected.iter_mut().chain(got.iter_mut()) {
        if trace == TraceDetail::Stage {
            positions.clear();
        } else if *stage == PipelineStage::Place {
            positions.sort_unstable(); // drops and inclusions: order within Place unspecified
        }
    }
    let strip = |v: &mut Vec<(PipelineStage, Vec<usize>)>| v.retain(|(_, p)| !p.is_empty());
    let (mut expected, mut got) = (expected, got);
    strip(&mut expected);
    strip(&mut got);
    same("item events per stage (input positions)", &expected, &got)
}

/// ctxpack's placement (untraced `run`) and report (`dry_run`, Item detail) for a spec.
pub fn observe_ctxpack(
    spec: &PipelineSpec,
) -> Result<(Vec<usize>, ReportView), ctxpack::ErrorCode> {
    let items: Vec<ContextItem> = spec.items.iter().map(Both::ours).collect();
    let budget: ContextBudget = spec.budget.ours();
    let pipeline = our_pipeline(spec).unwrap_or_else(|e| panic!("{e}"));
    let placed = pipeline.run(&items, &budget).map_err(|e| e.code())?;
    let report = pipeline.dry_run(&items, &budget).map_err(|e| e.code())?;
    Ok((placed.indices, ReportView::of_ctxpack(&report)))
}
