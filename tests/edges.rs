//! Edges and faults of the Rust API (issue 8; one row each in docs/errors.md): empty and
//! huge inputs, extreme token counts and budgets, bad configuration values, and custom
//! components that misbehave. Nothing may panic; every failure is a documented error.

use std::sync::Arc;

use ctxpack::diagnostics::TraceDetail;
use ctxpack::model::ScoredItem;
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::policy::Policy;
use ctxpack::scorer::{
    CompositeScorer, KindScorer, MetadataKeyScorer, PerItemScorer, RecencyScorer, ReflexiveScorer,
    Scorer, TagScorer,
};
use ctxpack::slicer::{GreedySlice, KnapsackSlice, QuotaEntry, QuotaSlice, SliceOutcome, Slicer};
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, Error, ErrorCode, OverflowStrategy, Pipeline,
    RunOptions,
};

fn chat() -> Pipeline {
    Policy::preset("chat").unwrap().build_pipeline().unwrap()
}

fn pipeline_with(
    scorer: Arc<dyn Scorer>,
    slicer: Arc<dyn Slicer>,
    placer: Arc<dyn Placer>,
) -> Pipeline {
    Pipeline::builder()
        .scorer(scorer)
        .slicer(slicer)
        .placer(placer)
        .build()
        .unwrap()
}

fn item(content: &str, tokens: i64) -> ContextItem {
    ContextItem::new(content, tokens).unwrap()
}

fn traced() -> RunOptions<'static> {
    RunOptions {
        trace: TraceDetail::Item,
        on_overflow: None,
    }
}

#[test]
fn zero_items_select_nothing_and_still_report_five_stages() {
    let sel = chat()
        .run_with(&[], &ContextBudget::new(100, 100).unwrap(), &traced())
        .unwrap();
    assert!(sel.indices.is_empty());
    let report = sel.report.unwrap();
    assert_eq!(report.events.len(), 5);
    assert_eq!(
        (report.total_candidates, report.total_tokens_considered),
        (0, 0)
    );
}

#[test]
fn a_million_items_run_within_the_budget() {
    let items: Vec<ContextItem> = (0..1_000_000)
        .map(|i| {
            ContextItem::builder(format!("m{i}"), 1 + i % 97)
                .timestamp(1_700_000_000_000_000_000 + i * 1_000_000)
                .build()
                .unwrap()
        })
        .collect();
    let budget = ContextBudget::new(200_000, 150_000).unwrap();
    let sel = chat().run(&items, &budget).unwrap();
    let used: i64 = sel.indices.iter().map(|&i| items[i].tokens()).sum();
    assert!(used <= 150_000 && used > 149_000, "used {used}");
}

#[test]
fn token_counts_near_i64_max_never_wrap() {
    let max = ContextBudget::new(i64::MAX, i64::MAX).unwrap();
    // One huge item fits a huge budget.
    let sel = chat().run(&[item("huge", i64::MAX)], &max).unwrap();
    assert_eq!(sel.indices, [0]);
    // Two pinned halves overflow the pinned sum.
    let pinned = |c: &str| {
        ContextItem::builder(c, i64::MAX / 2 + 1)
            .pinned(true)
            .build()
            .unwrap()
    };
    let err = chat().run(&[pinned("a"), pinned("b")], &max).unwrap_err();
    assert_eq!(err.code(), ErrorCode::TokenOverflow);
    assert!(err.to_string().contains("pinned tokens"), "{err}");
    // The total of all inputs does not fit in 64 bits: the report has it exactly, and
    // tracing does not change the outcome.
    let items = [item("a", i64::MAX), item("b", -1), item("c", i64::MAX)];
    let untraced = chat().run(&items, &max).unwrap();
    let traced = chat().run_with(&items, &max, &traced()).unwrap();
    assert_eq!(traced.indices, untraced.indices);
    assert_eq!(
        traced.report.unwrap().total_tokens_considered,
        2 * i128::from(i64::MAX) - 1
    );
    // Knapsack weights at the top of the range: the ceiling division cannot overflow.
    let knapsack = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(KnapsackSlice::new(i64::MAX).unwrap()),
        Arc::new(UShapedPlacer::new()),
    );
    assert!(knapsack
        .run(&[item("x", i64::MAX - 1)], &max)
        .unwrap()
        .indices
        .is_empty());
    // Percentage quotas sum each kind's token mass with checked arithmetic.
    let quota = QuotaSlice::new(
        vec![QuotaEntry::new(ContextKind::new("Message").unwrap(), 10.0, 90.0).unwrap()],
        Arc::new(GreedySlice::new()),
    )
    .unwrap();
    let quota = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(quota),
        Arc::new(UShapedPlacer::new()),
    );
    let err = quota
        .run(&[item("a", i64::MAX), item("b", i64::MAX)], &max)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TokenOverflow);
}

#[test]
fn zero_and_huge_budgets() {
    let items = [
        item("a", 10),
        item("zero", 0),
        ContextItem::builder("p", 0).pinned(true).build().unwrap(),
    ];
    let sel = chat()
        .run(&items, &ContextBudget::new(0, 0).unwrap())
        .unwrap();
    // With target 0 the slicer returns nothing, not even zero-token items; pinned stay.
    assert_eq!(sel.indices, [2]);
    let sel = chat()
        .run(&items, &ContextBudget::new(i64::MAX, i64::MAX).unwrap())
        .unwrap();
    assert_eq!(sel.indices.len(), 3);
    let err = ContextBudget::new(-1, 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid budget: max_tokens (-1) must be >= 0"
    );
}

#[test]
fn a_knapsack_table_over_the_memory_guard_is_refused() {
    let knapsack = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(KnapsackSlice::with_table_limit(1, 1024).unwrap()),
        Arc::new(UShapedPlacer::new()),
    );
    let items: Vec<ContextItem> = (0..100).map(|i| item(&format!("i{i}"), 5)).collect();
    let err = knapsack
        .run(&items, &ContextBudget::new(1_000, 1_000).unwrap())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TableTooLarge);
    assert!(
        err.to_string().contains("over the 1024 byte limit"),
        "{err}"
    );
}

#[test]
fn a_ten_megabyte_content_string_is_handled() {
    let big = "x".repeat(10 * 1024 * 1024);
    let items = [item(&big, 5), item(&big, 7), item("small", 1)];
    let sel = chat()
        .run_with(&items, &ContextBudget::new(100, 100).unwrap(), &traced())
        .unwrap();
    // The two identical 10 MB contents deduplicate to one.
    assert_eq!(sel.indices.len(), 2);
    let report = sel.report.unwrap();
    assert_eq!(report.excluded[0].reason.name(), "Deduplicated");
}

#[test]
fn empty_or_whitespace_kinds_and_contents_are_rejected() {
    assert_eq!(ContextKind::new("").unwrap_err(), Error::EmptyKind);
    assert_eq!(
        ContextKind::new(" \t\u{3000}").unwrap_err().code(),
        ErrorCode::EmptyKind
    );
    assert_eq!(ContextItem::new("", 1).unwrap_err(), Error::EmptyContent);
    assert!(ctxpack::ContextSource::new(" ").is_err());
}

#[test]
fn non_finite_weights_boosts_and_margins_are_configuration_errors() {
    let message = ContextKind::new("Message").unwrap();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0] {
        assert_eq!(
            KindScorer::with_weights(vec![(message.clone(), bad)])
                .unwrap_err()
                .code(),
            ErrorCode::ScorerConfig
        );
        assert_eq!(
            TagScorer::new(vec![("t".into(), bad)]).unwrap_err().code(),
            ErrorCode::ScorerConfig
        );
        assert_eq!(
            MetadataKeyScorer::new("k", "v", bad).unwrap_err().code(),
            ErrorCode::ScorerConfig
        );
        let child: Arc<dyn Scorer> = Arc::new(RecencyScorer::new());
        assert_eq!(
            CompositeScorer::new(vec![(child, bad)]).unwrap_err().code(),
            ErrorCode::ScorerConfig
        );
        assert_eq!(
            ContextBudget::with_all(10, 10, 0, vec![], bad)
                .unwrap_err()
                .code(),
            ErrorCode::InvalidBudget
        );
    }
    // Hints may be anything: non-finite hints score 0.0, never an error.
    let hints = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    let items: Vec<ContextItem> = hints
        .iter()
        .enumerate()
        .map(|(i, &h)| {
            ContextItem::builder(format!("h{i}"), 1)
                .future_relevance_hint(h)
                .build()
                .unwrap()
        })
        .collect();
    let p = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(GreedySlice::new()),
        Arc::new(UShapedPlacer::new()),
    );
    let sel = p.run(&items, &ContextBudget::new(10, 10).unwrap()).unwrap();
    assert_eq!(sel.scores, [0.0, 0.0, 0.0]);
}

/// A slicer or placer whose answer is fixed, to play a misbehaving custom component.
#[derive(Debug)]
struct Fixed(Vec<usize>);

impl Slicer for Fixed {
    fn slice(&self, _: &[ScoredItem<'_>], _: &ContextBudget) -> ctxpack::Result<SliceOutcome> {
        Ok(SliceOutcome {
            selected: self.0.clone(),
            ..Default::default()
        })
    }
}

impl Placer for Fixed {
    fn place(&self, _: &[ScoredItem<'_>]) -> ctxpack::Result<Vec<usize>> {
        Ok(self.0.clone())
    }
}

#[test]
fn misbehaving_custom_components_fail_the_run_with_callback_errors() {
    let items = [item("a", 1), item("b", 1)];
    let budget = ContextBudget::new(10, 10).unwrap();
    let nan_scorer =
        PerItemScorer::new(|i, _: &[&ContextItem]| Ok(if i == 1 { f64::NAN } else { 0.5 }));
    let p = pipeline_with(
        Arc::new(nan_scorer),
        Arc::new(GreedySlice::new()),
        Arc::new(UShapedPlacer::new()),
    );
    let err = p.run(&items, &budget).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Callback);
    assert!(err.to_string().contains("position 1"), "{err}");

    let failing =
        PerItemScorer::new(|_, _: &[&ContextItem]| Err(Error::Callback("model offline".into())));
    let p = pipeline_with(
        Arc::new(failing),
        Arc::new(GreedySlice::new()),
        Arc::new(UShapedPlacer::new()),
    );
    assert_eq!(
        p.run(&items, &budget).unwrap_err(),
        Error::Callback("model offline".into())
    );

    let p = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(Fixed(vec![0, 0])),
        Arc::new(UShapedPlacer::new()),
    );
    assert_eq!(
        p.run(&items, &budget).unwrap_err().code(),
        ErrorCode::Callback
    );
    let p = pipeline_with(
        Arc::new(ReflexiveScorer::new()),
        Arc::new(GreedySlice::new()),
        Arc::new(Fixed(vec![1, 1])),
    );
    let err = p.run(&items, &budget).unwrap_err();
    assert!(err.to_string().contains("not a permutation"), "{err}");
}

#[test]
fn a_custom_scorer_may_call_back_into_the_library() {
    // The scorer runs a whole inner pipeline per pass: re-entrancy is allowed.
    let inner = Arc::new(chat());
    let reentrant = PerItemScorer::new(move |i, items: &[&ContextItem]| {
        let copies: Vec<ContextItem> = items.iter().map(|&it| it.clone()).collect();
        let sel = inner.run(&copies, &ContextBudget::new(1_000, 1_000)?)?;
        Ok(if sel.indices.contains(&i) { 1.0 } else { 0.0 })
    });
    let p = pipeline_with(
        Arc::new(reentrant),
        Arc::new(GreedySlice::new()),
        Arc::new(ChronologicalPlacer::new()),
    );
    let sel = p
        .run(
            &[item("a", 3), item("b", 4)],
            &ContextBudget::new(10, 10).unwrap(),
        )
        .unwrap();
    assert_eq!(sel.scores, [1.0, 1.0]);
}

#[test]
fn proceed_over_target_reports_instead_of_failing() {
    let p = Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(Arc::new(GreedySlice::new()))
        .placer(Arc::new(UShapedPlacer::new()))
        .overflow_strategy(OverflowStrategy::Proceed)
        .build()
        .unwrap();
    let pinned = ContextBudget::new(100, 10).unwrap();
    let items = [ContextItem::builder("p", 50).pinned(true).build().unwrap()];
    let sel = p.run(&items, &pinned).unwrap();
    assert_eq!(sel.overflow.unwrap().tokens_over_budget, 40);
}
