//! Pipeline tests with test-local components, so each stage's rules are checked
//! independently of the built-in scorers and slicers.

use std::cell::RefCell;
use std::sync::Arc;

use ctxpack::diagnostics::{ExclusionReason, InclusionReason, PipelineStage, TraceDetail};
use ctxpack::model::{ContextBudget, ContextItem, ContextKind, OverflowStrategy, ScoredItem};
use ctxpack::pipeline::{Pipeline, RunOptions};
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::scorer::Scorer;
use ctxpack::slicer::{SliceOutcome, Slicer};
use ctxpack::{Error, ErrorCode, Result};

/// Scores each item with its future-relevance hint (0.0 when absent).
#[derive(Debug)]
struct HintScorer;

impl Scorer for HintScorer {
    fn score_all(&self, items: &[&ContextItem], out: &mut [f64]) -> Result<()> {
        for (o, item) in out.iter_mut().zip(items) {
            *o = item.future_relevance_hint().unwrap_or(0.0);
        }
        Ok(())
    }
}

/// Takes items in the order offered while they fit the target (zero-token items always).
#[derive(Debug, Default)]
struct FirstFit {
    caps: Vec<(ContextKind, usize)>,
}

impl Slicer for FirstFit {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        let mut room = budget.target_tokens();
        let mut selected = Vec::new();
        for (pos, s) in items.iter().enumerate() {
            if s.item.tokens() <= room {
                room -= s.item.tokens();
                selected.push(pos);
            }
        }
        Ok(SliceOutcome {
            selected,
            ..Default::default()
        })
    }
    fn count_caps(&self) -> &[(ContextKind, usize)] {
        &self.caps
    }
}

/// A slicer that returns whatever positions it was built with.
#[derive(Debug)]
struct FixedSlicer(Vec<usize>);

impl Slicer for FixedSlicer {
    fn slice(&self, _: &[ScoredItem<'_>], _: &ContextBudget) -> Result<SliceOutcome> {
        Ok(SliceOutcome {
            selected: self.0.clone(),
            ..Default::default()
        })
    }
}

/// A placer that returns a fixed order.
#[derive(Debug)]
struct FixedPlacer(Vec<usize>);

impl Placer for FixedPlacer {
    fn place(&self, _: &[ScoredItem<'_>]) -> Result<Vec<usize>> {
        Ok(self.0.clone())
    }
}

fn item(content: &str, tokens: i64, score: f64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(score)
        .build()
        .unwrap()
}

fn pinned(content: &str, tokens: i64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .pinned(true)
        .build()
        .unwrap()
}

fn pipeline(
    slicer: Arc<dyn Slicer>,
    placer: Arc<dyn Placer>,
    strategy: OverflowStrategy,
) -> Pipeline {
    Pipeline::builder()
        .scorer(Arc::new(HintScorer))
        .slicer(slicer)
        .placer(placer)
        .overflow_strategy(strategy)
        .build()
        .unwrap()
}

fn u_shaped_first_fit() -> Pipeline {
    pipeline(
        Arc::new(FirstFit::default()),
        Arc::new(UShapedPlacer),
        OverflowStrategy::Throw,
    )
}

fn traced(
    p: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    detail: TraceDetail,
) -> ctxpack::pipeline::Selection {
    p.run_with(
        items,
        budget,
        &RunOptions {
            trace: detail,
            on_overflow: None,
        },
    )
    .unwrap()
}

#[test]
fn builder_requires_every_component_in_order() {
    let err = Pipeline::builder().build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid pipeline configuration: scorer is required"
    );
    let err = Pipeline::builder()
        .scorer(Arc::new(HintScorer))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid pipeline configuration: slicer is required"
    );
    let err = Pipeline::builder()
        .scorer(Arc::new(HintScorer))
        .slicer(Arc::new(FirstFit::default()))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid pipeline configuration: placer is required"
    );
    let p = u_shaped_first_fit();
    assert!(p.deduplication());
    assert_eq!(p.overflow_strategy(), OverflowStrategy::Throw);
}

#[test]
fn empty_input_gives_empty_output_and_five_events() {
    let p = u_shaped_first_fit();
    let budget = ContextBudget::new(100, 100).unwrap();
    let sel = traced(&p, &[], &budget, TraceDetail::Stage);
    assert!(sel.indices.is_empty());
    let report = sel.report.unwrap();
    let stages: Vec<_> = report.events.iter().map(|e| e.stage).collect();
    use PipelineStage::*;
    assert_eq!(stages, [Classify, Score, Deduplicate, Slice, Place]);
    assert!(report
        .events
        .iter()
        .all(|e| e.item_count == 0 && e.message.is_none()));
    assert_eq!(
        (report.total_candidates, report.total_tokens_considered),
        (0, 0)
    );
}

#[test]
fn negative_tokens_are_dropped_before_the_pinned_check() {
    let p = u_shaped_first_fit();
    let items = [item("a", 100, 0.5), pinned("neg", -5)];
    let budget = ContextBudget::new(1000, 1000).unwrap();
    let sel = traced(&p, &items, &budget, TraceDetail::Stage);
    assert_eq!(sel.indices, [0]);
    let report = sel.report.unwrap();
    assert_eq!(report.total_tokens_considered, 95);
    assert_eq!(report.excluded.len(), 1);
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::NegativeTokens { tokens: -5 }
    );
    assert_eq!(report.excluded[0].score, 0.0);
    assert_eq!(report.events[0].item_count, 1);
}

#[test]
fn pinned_over_max_minus_reserve_fails_strictly() {
    let p = u_shaped_first_fit();
    let items = [pinned("p", 90)];
    let ok = ContextBudget::with_all(100, 50, 10, vec![], 0.0).unwrap();
    // 90 == 100 - 10: not an error (strict test); 90 > target 50 overflows under Throw.
    let err = p.run(&items, &ok).unwrap_err();
    assert_eq!(
        err,
        Error::Overflow {
            merged_tokens: 90,
            target_tokens: 50
        }
    );
    let tight = ContextBudget::with_all(100, 50, 11, vec![], 0.0).unwrap();
    let err = p.run(&items, &tight).unwrap_err();
    assert_eq!(
        err,
        Error::PinnedExceedsBudget {
            pinned_tokens: 90,
            available: 89
        }
    );
    assert_eq!(err.code(), ErrorCode::PinnedExceedsBudget);
}

#[test]
fn deduplication_keeps_the_best_and_the_earliest_on_ties() {
    let p = u_shaped_first_fit();
    let items = [
        item("x", 1, 0.2),
        item("x", 1, 0.9),
        item("y", 1, 0.5),
        item("y", 1, 0.5),
    ];
    let budget = ContextBudget::new(100, 100).unwrap();
    let sel = traced(&p, &items, &budget, TraceDetail::Stage);
    let mut kept = sel.indices.clone();
    kept.sort_unstable();
    assert_eq!(kept, [1, 2]);
    let report = sel.report.unwrap();
    let excluded: Vec<_> = report.excluded.iter().map(|e| (e.index, e.score)).collect();
    assert_eq!(excluded, [(3, 0.5), (0, 0.2)]);
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::Deduplicated {
            deduplicated_against: "y".into()
        }
    );

    let no_dedup = Pipeline::builder()
        .scorer(Arc::new(HintScorer))
        .slicer(Arc::new(FirstFit::default()))
        .placer(Arc::new(ChronologicalPlacer))
        .deduplication(false)
        .build()
        .unwrap();
    let sel = no_dedup.run(&items, &budget).unwrap();
    // Chronological with no timestamps keeps merged order, which is Sort order (decision D2 in
    // docs/decisions.md).
    assert_eq!(sel.indices, [1, 2, 3, 0]);
    assert_eq!(sel.scores, [0.9, 0.5, 0.5, 0.2]);
}

#[test]
fn sliced_items_enter_the_merge_in_sort_order_after_pinned_items() {
    // The slicer returns positions in reverse; decision D2 in docs/decisions.md re-associates in
    // Sort order.
    let p = pipeline(
        Arc::new(FixedSlicer(vec![2, 1, 0])),
        Arc::new(ChronologicalPlacer),
        OverflowStrategy::Throw,
    );
    let items = [
        item("low", 1, 0.1),
        pinned("pin", 1),
        item("high", 1, 0.9),
        item("mid", 1, 0.5),
    ];
    let budget = ContextBudget::new(100, 100).unwrap();
    let sel = p.run(&items, &budget).unwrap();
    assert_eq!(sel.indices, [1, 2, 3, 0]);
    assert_eq!(sel.scores, [1.0, 0.9, 0.5, 0.1]);
    assert_eq!(sel.reasons[0], InclusionReason::Pinned);
}

#[test]
fn bad_slicer_and_placer_results_fail_the_run() {
    let items = [item("a", 1, 0.1), item("b", 1, 0.2)];
    let budget = ContextBudget::new(100, 100).unwrap();
    for bad in [vec![2], vec![0, 0]] {
        let p = pipeline(
            Arc::new(FixedSlicer(bad)),
            Arc::new(UShapedPlacer),
            OverflowStrategy::Throw,
        );
        assert_eq!(
            p.run(&items, &budget).unwrap_err().code(),
            ErrorCode::Callback
        );
    }
    for bad in [vec![0], vec![0, 0], vec![0, 2]] {
        let p = pipeline(
            Arc::new(FirstFit::default()),
            Arc::new(FixedPlacer(bad)),
            OverflowStrategy::Throw,
        );
        assert_eq!(
            p.run(&items, &budget).unwrap_err().code(),
            ErrorCode::Callback
        );
    }
}

#[test]
fn truncate_walks_the_merged_list_and_skips_what_does_not_fit() {
    // Pinned 60 of target 100; the slicer is told to take everything regardless.
    let p = pipeline(
        Arc::new(FixedSlicer(vec![0, 1, 2])),
        Arc::new(ChronologicalPlacer),
        OverflowStrategy::Truncate,
    );
    let items = [
        pinned("p", 60),
        item("big", 50, 0.9),
        item("small", 30, 0.5),
        item("zero", 0, 0.1),
    ];
    let budget = ContextBudget::new(200, 100).unwrap();
    let sel = traced(&p, &items, &budget, TraceDetail::Stage);
    assert_eq!(sel.indices, [0, 2, 3]);
    assert_eq!(
        sel.reasons,
        [
            InclusionReason::Pinned,
            InclusionReason::Scored,
            InclusionReason::ZeroToken
        ]
    );
    let report = sel.report.unwrap();
    assert_eq!(report.excluded.len(), 1);
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::BudgetExceeded {
            item_tokens: 50,
            available_tokens: 10
        }
    );
}

#[test]
fn proceed_reports_the_overflow_event_and_throw_fails() {
    let items = [pinned("p", 60), item("a", 50, 0.9)];
    let budget = ContextBudget::new(200, 100).unwrap();
    let slicer: Arc<dyn Slicer> = Arc::new(FixedSlicer(vec![0]));
    let p = pipeline(
        slicer.clone(),
        Arc::new(ChronologicalPlacer),
        OverflowStrategy::Proceed,
    );
    let seen = RefCell::new(Vec::new());
    let callback = |e: &ctxpack::diagnostics::OverflowEvent| seen.borrow_mut().push(e.clone());
    let options = RunOptions {
        trace: TraceDetail::Stage,
        on_overflow: Some(&callback),
    };
    let sel = p.run_with(&items, &budget, &options).unwrap();
    assert_eq!(sel.indices, [0, 1]);
    let event = sel.overflow.clone().unwrap();
    assert_eq!(event.tokens_over_budget, 10);
    assert_eq!(event.overflowing_items, [0, 1]);
    assert_eq!(event.budget, budget);
    assert_eq!(seen.borrow().as_slice(), std::slice::from_ref(&event));
    assert_eq!(sel.report.unwrap().overflow, Some(event));

    let p = pipeline(
        slicer,
        Arc::new(ChronologicalPlacer),
        OverflowStrategy::Throw,
    );
    assert_eq!(
        p.run(&items, &budget).unwrap_err(),
        Error::Overflow {
            merged_tokens: 110,
            target_tokens: 100
        }
    );
}

#[test]
fn slice_exclusions_follow_the_after_the_fact_rule() {
    // diag-pinned-override: target 150, pinned 120, item 80 > effective target 30.
    let p = u_shaped_first_fit();
    let items = [
        pinned("pin", 120),
        item("regular", 80, 1.0),
        item("huge", 500, 0.5),
    ];
    let budget = ContextBudget::new(1000, 150).unwrap();
    let report = traced(&p, &items, &budget, TraceDetail::Stage)
        .report
        .unwrap();
    assert_eq!(report.included.len(), 1);
    assert_eq!(report.included[0].score, 1.0);
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::PinnedOverride {
            displaced_by: "pin".into()
        }
    );
    // 500 > target - reserve: stays BudgetExceeded with one available value (30 - 0).
    assert_eq!(
        report.excluded[1].reason,
        ExclusionReason::BudgetExceeded {
            item_tokens: 500,
            available_tokens: 30
        }
    );

    // CountCapExceeded when the item's kind is at its cap and the item would fit.
    let tool = ContextKind::new("Tool").unwrap();
    let capped = FirstFit {
        caps: vec![(tool.clone(), 1)],
    };
    let p = pipeline(
        Arc::new(capped),
        Arc::new(UShapedPlacer),
        OverflowStrategy::Throw,
    );
    let mk = |c: &str, t: i64, s: f64| {
        ContextItem::builder(c, t)
            .kind(tool.clone())
            .future_relevance_hint(s)
            .build()
            .unwrap()
    };
    // FirstFit takes t1 (60) then cannot take t2 (60 > 40); t2 fits the target (100) and
    // its kind is at cap 1, so the reason is CountCapExceeded.
    let items = [mk("t1", 60, 0.9), mk("t2", 60, 0.5)];
    let budget = ContextBudget::new(100, 100).unwrap();
    let report = traced(&p, &items, &budget, TraceDetail::Stage)
        .report
        .unwrap();
    assert_eq!(
        report.excluded[0].reason,
        ExclusionReason::CountCapExceeded {
            kind: "Tool".into(),
            cap: 1,
            count: 1
        }
    );
}

#[test]
fn item_detail_adds_item_events_before_their_stage_event() {
    let p = u_shaped_first_fit();
    let items = [item("a", 10, 0.9), item("b", 95, 0.5), item("c", -1, 0.0)];
    let budget = ContextBudget::new(100, 100).unwrap();
    let stage_only = traced(&p, &items, &budget, TraceDetail::Stage)
        .report
        .unwrap();
    let report = traced(&p, &items, &budget, TraceDetail::Item)
        .report
        .unwrap();
    assert_eq!(stage_only.events.len(), 5);
    // Stage-level lists are identical; only events differ.
    assert_eq!(stage_only.excluded, report.excluded);
    assert_eq!(stage_only.included, report.included);
    let shape: Vec<(PipelineStage, usize, bool)> = report
        .events
        .iter()
        .map(|e| (e.stage, e.item_count, e.item_index.is_some()))
        .collect();
    use PipelineStage::*;
    assert_eq!(
        shape,
        [
            (Classify, 1, true),
            (Classify, 2, false),
            (Score, 2, false),
            (Deduplicate, 2, false),
            (Slice, 1, true),
            (Slice, 1, false),
            (Place, 1, true),
            (Place, 1, false),
        ]
    );
    assert!(report
        .events
        .iter()
        .filter(|e| e.item_index.is_some())
        .all(|e| e.duration_ms == 0.0));
    assert_eq!(
        report.total_candidates,
        report.included.len() + report.excluded.len()
    );
}

#[test]
fn excluded_entries_are_sorted_by_score_descending_stably() {
    let p = u_shaped_first_fit();
    let items = [
        item("n", -1, 0.0),
        item("dup", 1, 0.3),
        item("dup", 1, 0.3),
        item("big1", 500, 0.3),
        item("big2", 500, 0.8),
    ];
    let budget = ContextBudget::new(100, 100).unwrap();
    let report = traced(&p, &items, &budget, TraceDetail::Stage)
        .report
        .unwrap();
    let order: Vec<usize> = report.excluded.iter().map(|e| e.index).collect();
    // big2 (0.8), then the 0.3 ties in recording order: dedup (2) before slice (3), then 0.0.
    assert_eq!(order, [4, 2, 3, 0]);
}

#[test]
fn untraced_runs_have_no_report() {
    let p = u_shaped_first_fit();
    let sel = p
        .run(&[item("a", 1, 0.5)], &ContextBudget::new(10, 10).unwrap())
        .unwrap();
    assert!(sel.report.is_none());
    assert_eq!(sel.indices, [0]);
}

#[test]
fn token_sums_that_overflow_are_errors() {
    let p = u_shaped_first_fit();
    let items = [pinned("a", i64::MAX), pinned("b", 1)];
    let budget = ContextBudget::new(i64::MAX, i64::MAX).unwrap();
    assert_eq!(
        p.run(&items, &budget).unwrap_err().code(),
        ErrorCode::TokenOverflow
    );
    let items = [item("a", i64::MAX, 0.5), item("b", -1, 0.5)];
    let options = RunOptions {
        trace: TraceDetail::Stage,
        on_overflow: None,
    };
    // Untraced, the negative item is simply dropped; traced, the total of all tokens fits.
    assert!(p.run_with(&items, &budget, &options).is_ok());
}

/// Fuzz finding (pipeline_ops): a traced run failed with "sliced tokens does not fit"
/// where the untraced run fails with "merged tokens does not fit"; tracing must not
/// change the error.
#[test]
fn sliced_token_overflow_fails_the_same_traced_or_not() {
    let p = pipeline(
        Arc::new(FixedSlicer(vec![0, 1])),
        Arc::new(ChronologicalPlacer),
        OverflowStrategy::Proceed,
    );
    let items = [item("a", i64::MAX, 0.5), item("b", 1, 0.5)];
    let budget = ContextBudget::new(10, 10).unwrap();
    let untraced = p.run(&items, &budget).unwrap_err();
    assert_eq!(
        untraced,
        Error::TokenOverflow("merged tokens does not fit in 64 bits".into())
    );
    for trace in [TraceDetail::Stage, TraceDetail::Item] {
        let options = RunOptions {
            trace,
            on_overflow: None,
        };
        assert_eq!(p.run_with(&items, &budget, &options).unwrap_err(), untraced);
    }
}

#[test]
fn pipelines_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Pipeline>();
}
