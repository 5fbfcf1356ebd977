//! Item variants (`docs/variants.md`): every rule with outcomes worked out by hand, and the
//! adversarial cases of the issue — a variant larger than the full form, qualities 0, NaN
//! and above 1, no form that fits, a zero-token stub, equal contents with different
//! variants under deduplication. (A million forms against the memory guard:
//! `tests/variants_guard.rs`; exhaustive and property checks: `tests/variants_properties.rs`.)

use std::sync::Arc;

use ctxpack::diagnostics::{
    report_to_json, DowngradeCause, ExclusionReason, InclusionReason, SelectionReport, TraceDetail,
};
use ctxpack::model::{read_items, GroupValue, PrunedForm, Units};
use ctxpack::placer::{ChronologicalPlacer, Placer};
use ctxpack::scorer::ReflexiveScorer;
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, SliceOutcome, Slicer,
};
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, ErrorCode, OverflowStrategy, Pipeline, RunOptions,
    ScoredItem, Selection,
};

/// An item builder: `score` is its relevance hint (the reflexive scorer's score) and its
/// timestamp is `ts`, so chronological placement is input order.
fn item(content: &str, tokens: i64, score: f64, ts: i64) -> ctxpack::model::ContextItemBuilder {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(score)
        .timestamp(ts)
}

fn pipeline(slicer: Arc<dyn Slicer>) -> Pipeline {
    pipeline_with(slicer, OverflowStrategy::Throw, true)
}

fn pipeline_with(slicer: Arc<dyn Slicer>, overflow: OverflowStrategy, dedup: bool) -> Pipeline {
    Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(slicer)
        .placer(Arc::new(ChronologicalPlacer::new()) as Arc<dyn Placer>)
        .overflow_strategy(overflow)
        .deduplication(dedup)
        .build()
        .unwrap()
}

fn greedy() -> Arc<dyn Slicer> {
    Arc::new(GreedySlice::new())
}

fn knapsack(bucket: i64) -> Arc<dyn Slicer> {
    Arc::new(KnapsackSlice::new(bucket).unwrap())
}

fn budget(target: i64) -> ContextBudget {
    ContextBudget::new(target, target).unwrap()
}

/// The run traced at Item detail; the traced and untraced selections must agree.
fn run(p: &Pipeline, items: &[ContextItem], target: i64) -> (Selection, SelectionReport) {
    let options = RunOptions {
        trace: TraceDetail::Item,
        on_overflow: None,
    };
    let traced = p.run_with(items, &budget(target), &options).unwrap();
    let plain = p.run(items, &budget(target)).unwrap();
    assert_eq!(
        (&plain.indices, &plain.forms, &plain.reasons),
        (&traced.indices, &traced.forms, &traced.reasons)
    );
    let report = traced.report.clone().unwrap();
    (traced, report)
}

fn downgraded(
    form: usize,
    full: i64,
    chosen: i64,
    available: i64,
    cause: DowngradeCause,
) -> InclusionReason {
    InclusionReason::Downgraded {
        form,
        full_tokens: full,
        chosen_tokens: chosen,
        available_tokens: available,
        cause,
    }
}

fn excluded(report: &SelectionReport, index: usize) -> &ExclusionReason {
    &report
        .excluded
        .iter()
        .find(|e| e.index == index)
        .unwrap_or_else(|| panic!("item {index} is not excluded"))
        .reason
}

/// a: 100 tokens, score 0.9, a 40-token summary (0.6) and a 10-token stub (0.2); b: 50
/// tokens, score 0.8.
fn summary_and_stub() -> Vec<ContextItem> {
    vec![
        item("a", 100, 0.9, 1)
            .variant("a summary", 40, 0.6)
            .variant("a stub", 10, 0.2)
            .build()
            .unwrap(),
        item("b", 50, 0.8, 2).build().unwrap(),
    ]
}

#[test]
fn greedy_takes_the_richest_form_that_still_fits() {
    let items = summary_and_stub();
    let p = pipeline(greedy());
    // b is denser (0.016 against 0.009) and goes first; 70 tokens are left for a.
    let (s, report) = run(&p, &items, 120);
    assert_eq!(
        (s.indices.as_slice(), s.forms.as_slice()),
        (&[0, 1][..], &[1, 0][..])
    );
    // 120 - (40 + 50) = 30 left; the full form needs 60 more than the summary.
    let reason = downgraded(1, 100, 40, 30, DowngradeCause::BudgetExceeded);
    assert_eq!(s.reasons, [reason, InclusionReason::Scored]);
    assert_eq!(report.included[0].reason, reason);
    assert_eq!(s.content(&items, 0), "a summary");
    assert_eq!((s.tokens(&items, 0), s.tokens(&items, 1)), (40, 50));
    // 60 tokens: 10 left after b, only the stub fits.
    let (s, _) = run(&p, &items, 60);
    assert_eq!(s.forms, [2, 0]);
    assert_eq!(
        s.reasons[0],
        downgraded(2, 100, 10, 0, DowngradeCause::BudgetExceeded)
    );
    // 40 tokens: b does not fit; a's summary does.
    let (s, report) = run(&p, &items, 40);
    assert_eq!((s.indices, s.forms), (vec![0], vec![1]));
    assert!(matches!(
        excluded(&report, 1),
        ExclusionReason::BudgetExceeded {
            item_tokens: 50,
            available_tokens: 0
        }
    ));
    // Everything fits: the forms are all full, still reported.
    let (s, report) = run(&p, &items, 150);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![0, 0]));
    assert_eq!(report.included[0].reason, InclusionReason::Scored);
    assert!(report.pruned_forms.is_empty());
}

#[test]
fn knapsack_chooses_forms_for_the_best_total_value() {
    let items = vec![
        item("a", 100, 0.9, 1)
            .variant("a summary", 40, 0.6)
            .build()
            .unwrap(),
        item("b", 60, 0.8, 2).build().unwrap(),
        item("c", 50, 0.5, 3).build().unwrap(),
    ];
    let p = pipeline(knapsack(1));
    // a alone 9000, b + c do not fit 100, a's summary + b = 5400 + 8000 = 13400.
    let (s, _) = run(&p, &items, 100);
    assert_eq!(
        (s.indices.as_slice(), s.forms.as_slice()),
        (&[0, 1][..], &[1, 0][..])
    );
    assert_eq!(
        s.reasons[0],
        downgraded(1, 100, 40, 0, DowngradeCause::BudgetExceeded)
    );
    // 110: b + c = 13000 would fit, the summary + b is still worth more.
    let (s, _) = run(&p, &items, 110);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![1, 0]));
    // 200: a's summary, b and c (18400) beat a, b (17000); 210: everything in full.
    let (s, _) = run(&p, &items, 200);
    assert_eq!((s.indices, s.forms), (vec![0, 1, 2], vec![1, 0, 0]));
    let (s, _) = run(&p, &items, 210);
    assert_eq!((s.indices, s.forms), (vec![0, 1, 2], vec![0, 0, 0]));
    // Greedy at 100 visits b (density 0.013), c (0.01, 50 > 40 left) and a (0.009): the
    // summary fits the 40 left.
    let (s, _) = run(&pipeline(greedy()), &items, 100);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![1, 0]));
}

#[test]
fn a_cheaper_form_worth_as_much_is_the_slicers_choice() {
    // Score 0.00015: the full form is worth floor(1.5) = 1, the 10-token form (quality
    // 0.9) floor(1.35) = 1 as well, so the knapsack takes the cheaper one although the
    // full form fits; greedy takes the full form.
    let items = vec![item("a", 100, 0.00015, 1)
        .variant("a'", 10, 0.9)
        .build()
        .unwrap()];
    let (s, _) = run(&pipeline(knapsack(1)), &items, 1000);
    assert_eq!(s.forms, [1]);
    assert_eq!(
        s.reasons[0],
        downgraded(1, 100, 10, 990, DowngradeCause::SlicerChoice)
    );
    let (s, _) = run(&pipeline(greedy()), &items, 1000);
    assert_eq!(s.forms, [0]);
}

#[test]
fn a_group_degrades_as_one_level() {
    // A call (no variants) and two results: levels 180 (all full), 20 + 40 + 20 = 80 and
    // 20 + 10 + 20 = 50 (r2 stays at its last form).
    let items = vec![
        item("call", 20, 0.5, 1).group("g").build().unwrap(),
        item("r1", 100, 0.5, 2)
            .group("g")
            .variant("r1 summary", 40, 0.5)
            .variant("r1 stub", 10, 0.1)
            .build()
            .unwrap(),
        item("r2", 60, 0.5, 3)
            .group("g")
            .variant("r2 summary", 20, 0.5)
            .build()
            .unwrap(),
        item("x", 50, 0.5, 4).build().unwrap(),
    ];
    let scored: Vec<ScoredItem> = items
        .iter()
        .map(|item| ScoredItem { item, score: 0.5 })
        .collect();
    let units = Units::new(&scored, GroupValue::Sum).unwrap();
    assert!(units.has_levels());
    assert_eq!(units.level_count(0), 3);
    let tokens: Vec<i64> = (0..3).map(|l| units.level_tokens(0, l).unwrap()).collect();
    assert_eq!(tokens, [180, 80, 50]);
    let values: Vec<f64> = (0..3).map(|l| units.level_value(0, l)).collect();
    assert_eq!(values, [1.5, 0.5 + 0.25 + 0.25, 0.5 + 0.05 + 0.25]);
    assert_eq!(
        (
            units.form_at(1, 2),
            units.form_at(2, 2),
            units.form_at(0, 2)
        ),
        (2, 1, 0)
    );
    assert_eq!(
        (units.level_count(1), units.level_tokens(1, 0)),
        (1, Some(50))
    );

    // Greedy at 140: x (density 0.01) goes first, 90 left: the group fits at level 1.
    let p = pipeline(greedy());
    let (s, report) = run(&p, &items, 140);
    assert_eq!(s.indices, [0, 1, 2, 3]);
    assert_eq!(s.forms, [0, 1, 1, 0]);
    // The call keeps its full form (Scored); the results are downgraded, the cause decided
    // on the group's tokens (180 − 80 = 100 > 10 left).
    assert_eq!(s.reasons[0], InclusionReason::Scored);
    assert_eq!(
        s.reasons[1],
        downgraded(1, 100, 40, 10, DowngradeCause::BudgetExceeded)
    );
    assert_eq!(
        s.reasons[2],
        downgraded(1, 60, 20, 10, DowngradeCause::BudgetExceeded)
    );
    assert_eq!(report.groups[0].decision.name(), "Included");
    // At 100: x first, 50 left: level 2.
    let (s, _) = run(&p, &items, 100);
    assert_eq!(s.forms, [0, 2, 1, 0]);
    // At 40 nothing of the group fits: it is excluded with its cheapest level's tokens.
    let (s, report) = run(&p, &items, 40);
    assert!(s.indices.is_empty());
    assert!(matches!(
        excluded(&report, 0),
        ExclusionReason::BudgetExceeded {
            item_tokens: 50,
            available_tokens: 40
        }
    ));
    assert!(matches!(
        excluded(&report, 1),
        ExclusionReason::GroupExcluded {
            member_index: 0,
            ..
        }
    ));
}

#[test]
fn count_quotas_count_items_whatever_their_form() {
    let tool = |c: &str, t, s, ts| item(c, t, s, ts).kind(ContextKind::new("ToolOutput").unwrap());
    let items = vec![
        tool("t1", 100, 0.9, 1)
            .variant("t1 summary", 30, 0.5)
            .build()
            .unwrap(),
        tool("t2", 100, 0.8, 2)
            .variant("t2 summary", 30, 0.5)
            .build()
            .unwrap(),
        tool("t3", 100, 0.7, 3)
            .variant("t3 summary", 30, 0.5)
            .build()
            .unwrap(),
        item("m", 20, 0.1, 4).build().unwrap(),
    ];
    let entry = |r, c| CountQuotaEntry::new(ContextKind::new("ToolOutput").unwrap(), r, c).unwrap();
    // Require 2 tool outputs, cap 2. Phase 1 commits t1 in full (100 of 150), then t2 at its
    // summary (30 of the 50 left); Phase 2 has 20 tokens: m fits; t3 would go over the cap.
    let slicer =
        CountQuotaSlice::new(vec![entry(2, 2)], greedy(), ScarcityBehavior::Degrade).unwrap();
    let (s, report) = run(&pipeline(Arc::new(slicer)), &items, 150);
    assert_eq!(s.indices, [0, 1, 3]);
    assert_eq!(s.forms, [0, 1, 0]);
    assert_eq!(
        s.reasons[1],
        downgraded(1, 100, 30, 0, DowngradeCause::BudgetExceeded)
    );
    assert!(report.excluded.iter().any(|e| e.index == 2));
    // The knapsack engine: commits as above, then the knapsack over t3 and m in 20 tokens.
    let ccks = CountConstrainedKnapsackSlice::new(
        vec![entry(1, 2)],
        KnapsackSlice::new(1).unwrap(),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    // Commit t1 in full (100 of 160); the knapsack over t2, t3 and m with 60 tokens takes
    // both summaries (4000 + 3500, against 4000 + 1000 with m); the cap (2 tool outputs)
    // keeps only the better-scored one, t2.
    let (s, _) = run(&pipeline(Arc::new(ccks)), &items, 160);
    assert_eq!(s.indices, [0, 1]);
    assert_eq!(s.forms, [0, 1]);
}

#[test]
fn percentage_quotas_give_each_kind_its_budget_in_chosen_forms() {
    let doc = |c: &str, t, s, ts| item(c, t, s, ts).kind(ContextKind::new("Document").unwrap());
    let items = vec![
        doc("d1", 80, 0.9, 1)
            .variant("d1 excerpt", 30, 0.5)
            .build()
            .unwrap(),
        item("m1", 40, 0.5, 2).build().unwrap(),
        item("m2", 40, 0.4, 3).build().unwrap(),
    ];
    // Documents capped at 40 % of 100: their budget is 40 tokens (mass 80 of 160 gives a
    // 50-token share, capped), so d1 goes in as its excerpt; messages get 50: m1.
    let entries = vec![QuotaEntry::new(ContextKind::new("Document").unwrap(), 0.0, 40.0).unwrap()];
    let quota = QuotaSlice::new(entries, greedy()).unwrap();
    let (s, _) = run(&pipeline(Arc::new(quota)), &items, 100);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![1, 0]));
}

/// Selects every item in full, whatever the budget.
#[derive(Debug)]
struct All;

impl Slicer for All {
    fn slice(&self, items: &[ScoredItem<'_>], _: &ContextBudget) -> ctxpack::Result<SliceOutcome> {
        Ok(SliceOutcome {
            selected: (0..items.len()).collect(),
            ..SliceOutcome::default()
        })
    }
}

#[test]
fn truncate_moves_an_item_to_a_cheaper_form_before_dropping_it() {
    let items = vec![
        item("b", 60, 0.9, 1).build().unwrap(),
        item("a", 60, 0.8, 2)
            .variant("a summary", 20, 0.5)
            .build()
            .unwrap(),
        item("c", 30, 0.7, 3).build().unwrap(),
    ];
    let p = pipeline_with(Arc::new(All), OverflowStrategy::Truncate, true);
    // Merged in score order: b (60), a (60 > 40 left: its summary, 20), c (30 > 20: out).
    let (s, report) = run(&p, &items, 100);
    assert_eq!(
        (s.indices.as_slice(), s.forms.as_slice()),
        (&[0, 1][..], &[0, 1][..])
    );
    assert_eq!(
        s.reasons[1],
        downgraded(1, 60, 20, 20, DowngradeCause::Truncated)
    );
    assert!(matches!(
        excluded(&report, 2),
        ExclusionReason::BudgetExceeded {
            item_tokens: 30,
            available_tokens: 20
        }
    ));
    // Under Throw the same merged list (150 > 100) fails, counted in full forms.
    let err = pipeline_with(Arc::new(All), OverflowStrategy::Throw, true)
        .run(&items, &budget(100))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "merged tokens (150) exceed target tokens (100)"
    );
}

/// Returns fixed positions and forms.
#[derive(Debug)]
struct Fixed(Vec<usize>, Vec<usize>);

impl Slicer for Fixed {
    fn slice(&self, _: &[ScoredItem<'_>], _: &ContextBudget) -> ctxpack::Result<SliceOutcome> {
        Ok(SliceOutcome {
            selected: self.0.clone(),
            forms: self.1.clone(),
            ..SliceOutcome::default()
        })
    }
}

#[test]
fn custom_slicers_may_choose_forms_that_are_valid() {
    let items = vec![
        item("a", 100, 0.9, 1)
            .variant("a bigger", 120, 0.9)
            .variant("a summary", 30, 0.5)
            .build()
            .unwrap(),
        item("g1", 10, 0.8, 2)
            .group("g")
            .variant("g1 short", 5, 0.5)
            .build()
            .unwrap(),
        item("g2", 10, 0.7, 3)
            .group("g")
            .variant("g2 short", 5, 0.5)
            .build()
            .unwrap(),
    ];
    // Sort order: a, g1, g2 (positions 0, 1, 2).
    let ok = |sel: Vec<usize>, forms: Vec<usize>| {
        pipeline(Arc::new(Fixed(sel, forms))).run(&items, &budget(1000))
    };
    let s = ok(vec![0, 1, 2], vec![2, 1, 1]).unwrap();
    assert_eq!(s.forms, [2, 1, 1]);
    assert_eq!(
        s.reasons[0],
        downgraded(2, 100, 30, 960, DowngradeCause::SlicerChoice)
    );
    let message = |r: ctxpack::Result<Selection>| {
        let e = r.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Callback);
        e.to_string()
    };
    assert_eq!(
        message(ok(vec![0], vec![3])),
        "callback failed: slicer chose form 3 of item 0, which has 3 forms"
    );
    assert_eq!(
        message(ok(vec![0], vec![1])),
        "callback failed: slicer chose form 1 of item 0, which was pruned (another form has \
         no more tokens and at least its quality)"
    );
    assert!(message(ok(vec![1, 2], vec![1, 0])).contains("not one level"));
    assert_eq!(
        message(ok(vec![0], vec![0, 0])),
        "callback failed: slicer returned 2 forms for 1 positions"
    );
    // With the variants off, only full forms may be chosen.
    let off = Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(Arc::new(Fixed(vec![0], vec![2])))
        .placer(Arc::new(ChronologicalPlacer::new()))
        .use_variants(false)
        .build()
        .unwrap();
    assert_eq!(
        message(off.run(&items, &budget(1000))),
        "callback failed: slicer chose form 2 of item 0, but this run uses every item in full"
    );
}

#[test]
fn without_variants_in_use_the_run_is_the_run_without_them() {
    let items = summary_and_stub();
    let stripped: Vec<ContextItem> = items
        .iter()
        .map(|i| {
            ContextItem::builder(i.content(), i.tokens())
                .future_relevance_hint(i.future_relevance_hint().unwrap())
                .timestamp(i.timestamp().unwrap())
                .build()
                .unwrap()
        })
        .collect();
    for slicer in [greedy(), knapsack(10)] {
        let off = Pipeline::builder()
            .scorer(Arc::new(ReflexiveScorer::new()))
            .slicer(slicer.clone())
            .placer(Arc::new(ChronologicalPlacer::new()))
            .use_variants(false)
            .build()
            .unwrap();
        assert!(!off.use_variants());
        for target in [0, 40, 60, 120, 200] {
            let a = off.dry_run(&items, &budget(target)).unwrap();
            let b = pipeline(slicer.clone())
                .dry_run(&stripped, &budget(target))
                .unwrap();
            assert_eq!(
                (a.included.clone(), a.excluded.clone()),
                (b.included.clone(), b.excluded.clone())
            );
            let s = off.run(&items, &budget(target)).unwrap();
            assert!(s.forms.is_empty());
        }
    }
}

#[test]
fn pinned_items_stay_in_full_and_their_variants_are_not_examined() {
    let items = vec![
        item("system", 50, 0.0, 0)
            .pinned(true)
            .variant("sys", 5, 0.5)
            .variant("bigger", 90, 0.5)
            .build()
            .unwrap(),
        item("a", 100, 0.9, 1)
            .variant("a summary", 20, 0.5)
            .build()
            .unwrap(),
    ];
    let (s, report) = run(&pipeline(greedy()), &items, 80);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![0, 1]));
    assert_eq!(s.reasons[0], InclusionReason::Pinned);
    assert!(report.pruned_forms.is_empty(), "{:?}", report.pruned_forms);
}

// ---------------------------------------------------------------------------------------
// The adversarial cases of the issue
// ---------------------------------------------------------------------------------------

#[test]
fn adversarial_a_variant_larger_than_the_full_form_is_pruned_and_never_chosen() {
    let items = vec![item("a", 50, 0.9, 1)
        .variant("a, but longer", 80, 0.95)
        .variant("a summary", 10, 0.4)
        .build()
        .unwrap()];
    for slicer in [greedy(), knapsack(1)] {
        for target in [9, 10, 49, 50, 80, 100] {
            let (s, report) = run(&pipeline(slicer.clone()), &items, target);
            assert!(!s.forms.contains(&1), "{target}: {:?}", s.forms);
            assert_eq!(
                report.pruned_forms,
                [PrunedForm {
                    index: 0,
                    form: 1,
                    dominated_by: 0
                }]
            );
            let json = report_to_json(&report, &items);
            assert!(json.contains("\"pruned_forms\":[{\"index\":0,\"form\":1,\"dominated_by\":0}]"));
        }
    }
}

#[test]
fn adversarial_qualities_zero_nan_and_above_one_are_rejected() {
    for (quality, shown) in [
        (0.0, "0"),
        (f64::NAN, "NaN"),
        (1.0000001, "1.0000001"),
        (-0.5, "-0.5"),
    ] {
        let err = item("Tool result: the full log", 900, 0.5, 1)
            .variant("summary", 20, quality)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert_eq!(
            err.to_string(),
            format!(
                "invalid argument: item \"Tool result: the full log\", form 1: quality must be \
                 in (0, 1], got {shown}"
            )
        );
    }
    let err = item("x", 9, 0.5, 1)
        .variant("y", -1, 0.5)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid argument: item \"x\", form 1: tokens must be >= 0, got -1"
    );
    let json = "{\"content\":\"x\",\"tokens\":9,\"variants\":[{\"content\":\"y\",\"tokens\":1,\"quality\":2}]}";
    assert_eq!(
        read_items(json).unwrap_err().to_string(),
        "line 1, item 0, field 'variants[0].quality': must be in (0, 1], got 2"
    );
    // Quality 1 (as good as the full form) is allowed.
    assert!(item("x", 9, 0.5, 1).variant("y", 1, 1.0).build().is_ok());
}

#[test]
fn adversarial_no_form_fits() {
    let items = vec![
        item("a", 100, 0.9, 1)
            .variant("a summary", 40, 0.5)
            .build()
            .unwrap(),
        item("b", 10, 0.1, 2).build().unwrap(),
    ];
    for slicer in [greedy(), knapsack(1)] {
        let (s, report) = run(&pipeline(slicer), &items, 30);
        assert_eq!(s.indices, [1]);
        // The cheapest form (40) is what would have been needed.
        assert!(matches!(
            excluded(&report, 0),
            ExclusionReason::BudgetExceeded {
                item_tokens: 40,
                available_tokens: 20
            }
        ));
    }
}

#[test]
fn adversarial_a_zero_token_stub_is_always_taken_when_there_is_a_budget() {
    let items = vec![
        item("big", 500, 0.9, 1)
            .variant("[tool output omitted]", 0, 0.05)
            .build()
            .unwrap(),
        item("b", 30, 0.5, 2).build().unwrap(),
    ];
    // Greedy and knapsack, with room for b, with room for nothing, and with a capacity of
    // 0 buckets (target below the bucket size): the stub goes in.
    for (slicer, target) in [
        (greedy(), 30),
        (greedy(), 1),
        (knapsack(1), 30),
        (knapsack(100), 30),
        (knapsack(1), 1),
    ] {
        let (s, _) = run(&pipeline(slicer), &items, target);
        assert_eq!(s.indices[0], 0, "target {target}");
        assert_eq!(s.forms[0], 1);
        assert!(matches!(
            s.reasons[0],
            InclusionReason::Downgraded {
                chosen_tokens: 0,
                full_tokens: 500,
                ..
            }
        ));
    }
    // The knapsack still prefers the full form when it fits (value 9000 against 500).
    let (s, _) = run(&pipeline(knapsack(1)), &items, 600);
    assert_eq!(s.forms, [0, 0]);
    // No budget, nothing (as for zero-token items).
    let (s, _) = run(&pipeline(greedy()), &items, 0);
    assert!(s.indices.is_empty());
}

#[test]
fn adversarial_equal_contents_with_different_variants_deduplicate_by_content() {
    // Deduplication compares the items' own contents only: the better score survives with
    // its own variants (ties: the earlier); the loser's variants go with it.
    let items = vec![
        item("same log", 100, 0.5, 1)
            .variant("summary A", 30, 0.5)
            .build()
            .unwrap(),
        item("same log", 100, 0.7, 2)
            .variant("summary B", 20, 0.9)
            .build()
            .unwrap(),
        item("other", 80, 0.6, 3).build().unwrap(),
    ];
    let (s, report) = run(&pipeline(greedy()), &items, 100);
    assert!(matches!(
        excluded(&report, 0),
        ExclusionReason::Deduplicated { .. }
    ));
    assert_eq!(s.indices, [1, 2]);
    assert_eq!(s.content(&items, 0), "summary B");
    // Equal scores: the earlier survives, with its own variant.
    let tied = vec![
        item("same log", 100, 0.7, 1)
            .variant("summary A", 30, 0.5)
            .build()
            .unwrap(),
        item("same log", 100, 0.7, 2)
            .variant("summary B", 20, 0.9)
            .build()
            .unwrap(),
    ];
    let (s, _) = run(&pipeline(greedy()), &tied, 50);
    assert_eq!((s.content(&tied, 0), s.indices), ("summary A", vec![0]));
    // A variant whose text equals another item's content is not a duplicate of it.
    let echo = vec![
        item("short", 10, 0.5, 1).build().unwrap(),
        item("long", 100, 0.9, 2)
            .variant("short", 10, 0.5)
            .build()
            .unwrap(),
    ];
    let (s, _) = run(&pipeline(greedy()), &echo, 20);
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![0, 1]));
    // Without deduplication both copies take part, each with its variants.
    let (s, _) = run(
        &pipeline_with(greedy(), OverflowStrategy::Throw, false),
        &items,
        50,
    );
    assert_eq!((s.indices, s.forms), (vec![0, 1], vec![1, 1]));
}

#[test]
fn the_json_report_and_window_show_the_placed_forms() {
    let items = summary_and_stub();
    let (s, report) = run(&pipeline(greedy()), &items, 120);
    let json: serde_json::Value = serde_json::from_str(&report_to_json(&report, &items)).unwrap();
    assert_eq!(
        json["included"][0]["reason"],
        serde_json::json!({"reason": "Downgraded", "form": 1, "full_tokens": 100,
            "chosen_tokens": 40, "available_tokens": 30, "cause": "BudgetExceeded"})
    );
    assert_eq!(
        json["included"][0]["item"]["variants"][1]["content"],
        "a stub"
    );
    assert_eq!(
        json["included"][1]["reason"],
        serde_json::json!({"reason": "Scored"})
    );
    let window = ctxpack::diagnostics::placed_item_to_json(&items[s.indices[0]], s.form(0));
    assert!(
        window.starts_with("{\"content\":\"a summary\",\"tokens\":40,"),
        "{window}"
    );
    assert!(window.ends_with(",\"form\":1}"), "{window}");
}

// ---------------------------------------------------------------------------------------
// Policy JSON and the command line
// ---------------------------------------------------------------------------------------

#[test]
fn policies_carry_the_use_variants_option() {
    use ctxpack::policy::{Policy, Preset};
    let text = r#"{"scorers":[{"type":"recency","weight":1}],"useVariants":false}"#;
    let policy = Policy::from_json(text).unwrap();
    assert!(!policy.use_variants);
    let built = policy.build_pipeline().unwrap();
    assert!(!built.use_variants());
    assert!(!Policy::from_pipeline(&built).unwrap().use_variants);
    let written = policy.to_json().unwrap();
    assert!(written.ends_with(r#""useVariants":false}"#), "{written}");
    assert_eq!(Policy::from_json(&written).unwrap(), policy);
    for absent in [
        r#"{"scorers":[{"type":"recency","weight":1}]}"#,
        r#"{"scorers":[{"type":"recency","weight":1}],"useVariants":null}"#,
        r#"{"scorers":[{"type":"recency","weight":1}],"useVariants":true}"#,
    ] {
        let policy = Policy::from_json(absent).unwrap();
        assert!(policy.use_variants);
        assert!(!policy.to_json().unwrap().contains("useVariants"));
    }
    for preset in Preset::ALL {
        assert!(preset.policy().use_variants);
    }
    let err = Policy::from_json(r#"{"scorers":[{"type":"recency","weight":1}],"useVariants":0}"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid policy: useVariants: expected a boolean, found a number"
    );
}

#[path = "support/mod.rs"]
mod support;

const AGENT_VARIANTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/data/agent-variants.jsonl"
);

fn cli(args: &[&str], stdin: &str) -> (String, String, Option<i32>) {
    let out = support::ctxpack(args, stdin.as_bytes());
    (
        support::stdout(&out),
        support::stderr(&out),
        out.status.code(),
    )
}

#[test]
fn the_cli_keeps_a_long_tool_output_as_its_summary() {
    // The README's example: at 1 800 tokens under the chat preset the search results
    // (339 tokens) do not fit, their 61-token summary does.
    let args = [
        AGENT_VARIANTS,
        "--max",
        "1800",
        "--pinned-first",
        "--explain",
    ];
    let (table, err, code) = cli(&args, "");
    assert_eq!(code, Some(0), "{err}");
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("33 "))
        .unwrap();
    assert!(
        row.contains("Downgraded (form 1: 61 of 339; BudgetExceeded)"),
        "{row}"
    );
    // Without the variants (or with --no-variants) the call and its result are dropped.
    let (table, _, _) = cli(&[&args[..], &["--no-variants"]].concat(), "");
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("33 "))
        .unwrap();
    assert!(row.contains("GroupExcluded"), "{row}");
    // The window prints the summary in place of the result, with its form number.
    let (window, _, _) = cli(&[AGENT_VARIANTS, "--max", "1800", "--pinned-first"], "");
    let lines: Vec<serde_json::Value> = window
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = lines.iter().find(|l| l["form"] == 1).unwrap();
    assert!(summary["content"]
        .as_str()
        .unwrap()
        .starts_with("Tool result call_09 search_kb (summary)"));
    assert_eq!(summary["tokens"], 61);
    assert!(lines.iter().all(|l| l.get("variants").is_none()));
    let total: i64 = lines.iter().map(|l| l["tokens"].as_i64().unwrap()).sum();
    assert!(total <= 1800);
    // The report in JSON carries the reason with its fields.
    let (json, _, _) = cli(&[AGENT_VARIANTS, "--max", "1800", "--report", "json"], "");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let entry = report["included"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["index"] == 33)
        .unwrap();
    assert_eq!(entry["reason"]["reason"], "Downgraded");
    assert_eq!(entry["reason"]["chosen_tokens"], 61);
}

#[test]
fn the_cli_counts_variant_tokens_and_makes_head_and_tail_forms() {
    let long = (1..=300)
        .map(|i| format!("line {i}: ok"))
        .collect::<Vec<_>>()
        .join("\\n");
    let input = format!(
        "{{\"content\":\"{long}\",\"tokens\":3000,\"variants\":[{{\"content\":\"all 300 lines ok\",\"quality\":0.5}}]}}\n"
    );
    // Without an encoding the variant's tokens are required.
    let (_, err, code) = cli(&["--max", "100"], &input);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("field 'variants[0].tokens': is required (or give an encoding to count it)"),
        "{err}"
    );
    let (window, err, code) = cli(&["--max", "100", "--encoding", "o200k_base"], &input);
    assert_eq!(code, Some(0), "{err}");
    let line: serde_json::Value = serde_json::from_str(window.trim()).unwrap();
    assert_eq!(
        (line["form"].as_i64(), line["content"].as_str()),
        (Some(1), Some("all 300 lines ok"))
    );
    assert!(line["tokens"].as_i64().unwrap() < 10);
    // A head-and-tail form: the first and last 20 tokens.
    let plain = format!("{{\"content\":\"{long}\",\"tokens\":3000}}\n");
    let (window, err, code) = cli(&["--max", "100", "--head-tail", "20"], &plain);
    assert_eq!(code, Some(0), "{err}");
    let line: serde_json::Value = serde_json::from_str(window.trim()).unwrap();
    let content = line["content"].as_str().unwrap();
    assert!(
        content.starts_with("line 1: ok\n") && content.ends_with("line 300: ok"),
        "{content}"
    );
    assert!(content.contains("tokens omitted"));
    let (json, _, _) = cli(
        &[
            "--max",
            "100",
            "--head-tail",
            "20:10",
            "--head-tail-quality",
            "0.4",
            "--report",
            "json",
        ],
        &plain,
    );
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["included"][0]["item"]["variants"][0]["quality"], 0.4);
    let (_, err, code) = cli(&["--max", "100", "--encoding", "p50k"], &plain);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--encoding expects o200k_base or cl100k_base, not 'p50k'"),
        "{err}"
    );
}

#[test]
fn analytics_count_the_placed_forms() {
    use ctxpack::analytics::{budget_utilization, min_budget_for};
    let items = summary_and_stub();
    let p = pipeline(greedy());
    let (_, report) = run(&p, &items, 120);
    // a as its summary (40) and b (50) of max 120.
    let used = budget_utilization(&report, &items, &budget(120)).unwrap();
    assert_eq!(used, 90.0 / 120.0);
    // a alone is placed from 10 tokens on (its stub): the search starts from its cheapest
    // form, not from its own 100 tokens.
    assert_eq!(min_budget_for(&p, &items[..1], 0, 1000).unwrap(), Some(10));
}

#[test]
fn prefix_runs_refuse_items_with_variants_unless_variants_are_off() {
    use ctxpack::prefix::{PrefixMode, PrefixOptions};
    // Only item 2 carries a variant: the message names it.
    let items = vec![
        item("sys", 10, 0.0, 0).pinned(true).build().unwrap(),
        item("m1", 10, 0.5, 1).build().unwrap(),
        item("a long log", 100, 0.9, 2)
            .variant("a summary", 20, 0.5)
            .build()
            .unwrap(),
        item("m3", 10, 0.4, 3).build().unwrap(),
    ];
    let b = budget(60);
    for slicer in [greedy(), knapsack(10)] {
        let on = pipeline(slicer.clone());
        for mode in [PrefixMode::Hold, PrefixMode::Measure] {
            let err = on
                .run_prefix(
                    &items,
                    &b,
                    &RunOptions::default(),
                    &PrefixOptions::new(mode),
                )
                .expect_err("variants with a prefix state");
            assert_eq!(err.code(), ErrorCode::InvalidArgument, "{mode:?}");
            let text = err.to_string();
            assert!(
                text.contains("variants are not supported with a prefix state"),
                "{mode:?}: {text}"
            );
            assert!(text.contains("item 2"), "{mode:?}: {text}");
        }
        // Off, the items run as if they had no variants: Measure selects what a plain run
        // selects (the long log does not fit in full and is dropped), and Hold runs.
        let off = Pipeline::builder()
            .scorer(Arc::new(ReflexiveScorer::new()))
            .slicer(slicer.clone())
            .placer(Arc::new(ChronologicalPlacer::new()))
            .use_variants(false)
            .build()
            .unwrap();
        let plain = off.run(&items, &b).unwrap();
        assert!(!plain.indices.contains(&2));
        let measured = off
            .run_prefix(
                &items,
                &b,
                &RunOptions::default(),
                &PrefixOptions::new(PrefixMode::Measure),
            )
            .unwrap();
        assert_eq!(measured.selection.indices, plain.indices);
        let held = off
            .run_prefix(
                &items,
                &b,
                &RunOptions::default(),
                &PrefixOptions::new(PrefixMode::Hold),
            )
            .unwrap();
        assert!(held.selection.indices.contains(&0));
        assert!(!held.selection.indices.contains(&2));
    }
    // Without any variant in the items, variants on is no obstacle.
    let without: Vec<ContextItem> = items
        .iter()
        .filter(|i| !i.has_variants())
        .cloned()
        .collect();
    pipeline(greedy())
        .run_prefix(
            &without,
            &b,
            &RunOptions::default(),
            &PrefixOptions::new(PrefixMode::Hold),
        )
        .unwrap();
}
