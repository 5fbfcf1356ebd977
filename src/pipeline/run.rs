//! One run of the pipeline: the six stages in order, generic over the collector so that
//! an untraced run carries no diagnostics code at all.

use crate::cancel::check as check_cancelled;
use crate::diagnostics::{Collector, NullCollector, Recorder, TraceDetail};
use crate::error::Result;
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::classify::{classify, Classified};
use crate::pipeline::deduplicate::deduplicate;
use crate::pipeline::place::{place, PlaceContext, Placed};
use crate::pipeline::score::{score, Candidate};
use crate::pipeline::slice::{slice, Extensions, PinnedContext};
use crate::pipeline::sort::sort_by_score;
use crate::pipeline::{Pipeline, RunOptions, Selection};

pub(super) fn run(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    options: &RunOptions<'_>,
) -> Result<Selection> {
    if options.trace == TraceDetail::None {
        let placed = run_stages(pipeline, items, budget, options, &mut NullCollector)?;
        return Ok(placed.into_selection(None));
    }
    let mut recorder = Recorder::new(options.trace);
    let placed = run_stages(pipeline, items, budget, options, &mut recorder)?;
    // In i128, exactly: any number of i64 token counts fits, so the report never fails
    // a run that succeeds untraced.
    let total_tokens: i128 = items.iter().map(|i| i128::from(i.tokens())).sum();
    let report = recorder.into_report(items.len(), total_tokens, placed.overflow.clone());
    Ok(placed.into_selection(Some(report)))
}

/// The stages every run starts with — Classify, Score, Deduplicate, Sort — shared by the
/// plain run and the prefix run: the classification (pinned items, groups, forms) and the
/// scored candidates, best first. Checks for cancellation between the stages.
pub(super) fn rank<'a, C: Collector>(
    pipeline: &Pipeline,
    items: &'a [ContextItem],
    budget: &ContextBudget,
    collector: &mut C,
) -> Result<(Classified<'a>, Vec<Candidate>)> {
    let mut classified = classify(
        items,
        budget,
        pipeline.group_value,
        pipeline.use_variants,
        collector,
    )?;
    check_cancelled("before scoring")?;
    // Score consumes the scoreable positions and tokens: nothing later needs them, and
    // freeing them there lowers the run's peak memory on large inputs.
    let scored = score(
        pipeline.scorer.as_ref(),
        items,
        std::mem::take(&mut classified.scoreable),
        std::mem::take(&mut classified.scoreable_tokens),
        collector,
    )?;
    if let Some(table) = &mut classified.groups {
        table.set_values(&scored);
    }
    check_cancelled("before deduplication")?;
    let survivors = deduplicate(
        pipeline.deduplication,
        items,
        scored,
        classified.groups.as_mut(),
        collector,
    );
    Ok((classified, sort_by_score(survivors)))
}

fn run_stages<C: Collector>(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    options: &RunOptions<'_>,
    collector: &mut C,
) -> Result<Placed> {
    check_cancelled("before it started")?;
    let (mut classified, sorted) = rank(pipeline, items, budget, collector)?;
    let pinned = PinnedContext::of(items, &classified.pinned, classified.pinned_tokens);
    let extensions = Extensions {
        groups: classified.groups.as_mut(),
        forms: classified.forms.as_mut(),
        mode: pipeline.group_value,
    };
    check_cancelled("before slicing")?;
    let sliced = slice(
        pipeline.slicer.as_ref(),
        items,
        &sorted,
        budget,
        &pinned,
        extensions,
        collector,
    )?;
    check_cancelled("before placing")?;
    let context = PlaceContext {
        placer: pipeline.placer.as_ref(),
        strategy: pipeline.overflow_strategy,
        on_overflow: options.on_overflow,
        items,
        budget,
        pinned_first: pipeline.pinned_first,
        mode: pipeline.group_value,
        held: None,
    };
    let placed = place(
        context,
        &classified.pinned,
        sliced,
        classified.groups.as_mut(),
        classified.forms.as_mut(),
        collector,
    )?;
    if C::ENABLED {
        if let Some(table) = &classified.groups {
            collector.groups(table.report(items));
        }
        if let Some(forms) = &mut classified.forms {
            collector.pruned_forms(forms.take_pruned());
        }
    }
    Ok(placed)
}
