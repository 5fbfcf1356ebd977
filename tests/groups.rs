//! Item groups (`docs/groups.md`), stage by stage, with expected outcomes worked out by
//! hand in the comments, plus the adversarial cases of the issue and the exhaustive
//! optimality check of knapsack over units.

#[path = "common/groups.rs"]
mod groups;
#[path = "common/rng.rs"]
mod rng;

use std::sync::Arc;

use ctxpack::diagnostics::{
    ExclusionReason, GroupDecision, InclusionReason, PipelineStage, SelectionReport, TraceDetail,
};
use ctxpack::model::{ScoredItem, Units};
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, SliceOutcome, Slicer,
};
use ctxpack::{
    ContextBudget, ContextItem, ErrorCode, GroupValue, OverflowStrategy, Pipeline, RunOptions,
    Selection,
};

use groups::{
    check_whole_and_adjacent, item, kind, pipeline, placed_contents, placed_tokens, Options,
};
use rng::Rng;

fn greedy() -> Arc<dyn Slicer> {
    Arc::new(GreedySlice::new())
}

fn chrono() -> Arc<dyn Placer> {
    Arc::new(ChronologicalPlacer::new())
}

fn ushaped() -> Arc<dyn Placer> {
    Arc::new(UShapedPlacer::new())
}

fn budget(target: i64) -> ContextBudget {
    ContextBudget::new(target.max(1_000_000), target).unwrap()
}

fn traced(p: &Pipeline, items: &[ContextItem], b: &ContextBudget) -> (Selection, SelectionReport) {
    let options = RunOptions {
        trace: TraceDetail::Item,
        on_overflow: None,
    };
    let mut selection = p.run_with(items, b, &options).expect("run");
    let report = selection.report.take().expect("report");
    let untraced = p.run(items, b).expect("untraced run");
    assert_eq!(
        untraced.indices, selection.indices,
        "traced and untraced differ"
    );
    check_whole_and_adjacent(items, &selection.indices).unwrap();
    (selection, report)
}

/// The recorded reason of input position `index`.
fn reason_of(report: &SelectionReport, index: usize) -> &ExclusionReason {
    &report
        .excluded
        .iter()
        .find(|e| e.index == index)
        .unwrap_or_else(|| panic!("item {index} is not excluded"))
        .reason
}

fn group_excluded(
    group: &str,
    member_index: usize,
    content: &str,
    reason: &str,
) -> ExclusionReason {
    ExclusionReason::GroupExcluded {
        group: group.into(),
        member_index,
        member_content: content.into(),
        member_reason: reason.into(),
    }
}

/// A tool call and its result, a user turn and an unrelated document.
fn call_and_result(result_tokens: i64) -> Vec<ContextItem> {
    vec![
        item("user: weather in Oslo?", 10, 0.9)
            .timestamp(1)
            .build()
            .unwrap(),
        item("call get_weather(Oslo)", 20, 0.8)
            .group("c1")
            .timestamp(2)
            .build()
            .unwrap(),
        item("doc: Oslo guide", 30, 0.5)
            .timestamp(3)
            .build()
            .unwrap(),
        item("result: 4 °C, rain", result_tokens, 0.1)
            .group("c1")
            .timestamp(4)
            .build()
            .unwrap(),
    ]
}

// ---------------------------------------------------------------------------------------
// Slicing
// ---------------------------------------------------------------------------------------

#[test]
fn greedy_takes_a_group_by_its_density_and_places_it_whole() {
    // Units: user 10 @ 0.9 (density 0.09), c1 = 20 + 40 tokens @ 0.8 + 0.1 = 0.9 (0.015),
    // doc 30 @ 0.5 (0.0167). Target 80: user (room 70), doc (room 40); c1 needs 60.
    let items = call_and_result(40);
    let p = pipeline(greedy(), chrono(), Options::default());
    let (sel, report) = traced(&p, &items, &budget(80));
    assert_eq!(sel.indices, [0, 2]);
    // The group's first member (input order) carries the unit's reason with the group's
    // tokens; the other member names it. available = 80 - 40 selected.
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::BudgetExceeded {
            item_tokens: 60,
            available_tokens: 40
        }
    );
    assert_eq!(
        reason_of(&report, 3),
        &group_excluded("c1", 1, "call get_weather(Oslo)", "BudgetExceeded")
    );
    let g = &report.groups[0];
    assert_eq!(
        (g.key.as_str(), g.members.as_slice(), g.tokens),
        ("c1", &[1, 3][..], 60)
    );
    assert_eq!(
        g.decision,
        GroupDecision::Excluded {
            stage: PipelineStage::Slice,
            member_index: 1
        }
    );
    assert_eq!(g.value, Some(0.9));
    // Target 100: everything fits. Chronological: user (t1), c1 at its earliest member
    // (t2) with both members together, then doc (t3) — although the result is dated t4.
    let (sel, report) = traced(&p, &items, &budget(100));
    assert_eq!(sel.indices, [0, 1, 3, 2]);
    assert_eq!(report.groups[0].decision, GroupDecision::Included);
}

#[test]
fn without_groups_the_same_items_split_the_pair() {
    // The same transcript with the keys removed: at target 80 greedy takes the call
    // (density 0.04) and leaves its result out — the failure groups exist to prevent.
    let items: Vec<ContextItem> = call_and_result(40)
        .into_iter()
        .map(|it| {
            let mut b = item(
                it.content(),
                it.tokens(),
                it.future_relevance_hint().unwrap(),
            );
            b = b.timestamp(it.timestamp().unwrap());
            b.build().unwrap()
        })
        .collect();
    let p = pipeline(greedy(), chrono(), Options::default());
    let sel = p.run(&items, &budget(80)).unwrap();
    assert_eq!(sel.indices, [0, 1, 2]);
}

#[test]
fn u_shaped_ranks_a_group_by_its_value() {
    // Input a .9, b .5, g = {c .3, d .2}, e .4. Merged (Sort order): a, b, e, c, d; units
    // by earliest position: a, b, e, g.
    // Sum: g = .5 ties b, b is the earlier unit: ranks a, b, g, e -> left a, g; right b, e
    //   -> a, c, d, e, b.
    // Mean: g = .25 (max: .3): ranks a, b, e, g -> left a, e; right b, g -> a, e, c, d, b.
    let items = vec![
        item("a", 10, 0.9).build().unwrap(),
        item("b", 10, 0.5).build().unwrap(),
        item("c", 10, 0.3).group("g").build().unwrap(),
        item("d", 10, 0.2).group("g").build().unwrap(),
        item("e", 10, 0.4).build().unwrap(),
    ];
    for (mode, want) in [
        (GroupValue::Sum, [0, 2, 3, 4, 1]),
        (GroupValue::Mean, [0, 4, 2, 3, 1]),
        (GroupValue::Max, [0, 4, 2, 3, 1]),
    ] {
        let o = Options {
            group_value: mode,
            ..Options::default()
        };
        let (sel, _) = traced(&pipeline(greedy(), ushaped(), o), &items, &budget(1000));
        assert_eq!(sel.indices, want, "{mode:?}");
    }
}

#[test]
fn knapsack_is_exact_over_units_and_follows_the_value_mode() {
    // q = 1, target 100. x 50 @ .6, g = {y 30 @ .4, z 30 @ .4}, w 40 @ .5.
    // Sum: {g, w} = 100 tokens, 1.3 beats {x, w} = 90 tokens, 1.1 ({x, g} = 110 > 100).
    // Max: g is worth .4: {x, w} 1.1 beats {g, w} 0.9.
    let items = vec![
        item("x", 50, 0.6).build().unwrap(),
        item("y", 30, 0.4).group("g").build().unwrap(),
        item("z", 30, 0.4).group("g").build().unwrap(),
        item("w", 40, 0.5).build().unwrap(),
    ];
    let knapsack: Arc<dyn Slicer> = Arc::new(KnapsackSlice::new(1).unwrap());
    // Untimed, chronological keeps merged (Sort) order: w (.5), then the group.
    let (sel, _) = traced(
        &pipeline(knapsack.clone(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [3, 1, 2]);
    let max = Options {
        group_value: GroupValue::Max,
        ..Options::default()
    };
    let (sel, report) = traced(&pipeline(knapsack, chrono(), max), &items, &budget(100));
    assert_eq!(sel.indices, [0, 3]);
    assert_eq!(report.groups[0].value, Some(0.4));
}

#[test]
fn count_caps_count_every_member_of_a_mixed_group() {
    // cap ToolOutput 1. r1 (ToolOutput .9) is kept first in greedy order (density .09 vs
    // the group's 1.5 / 20 = .075); the group {call (Message), res (ToolOutput)} would be a
    // second ToolOutput: excluded whole.
    let items = vec![
        item("r1", 10, 0.9)
            .kind(kind("ToolOutput"))
            .build()
            .unwrap(),
        item("call", 10, 0.8)
            .kind(kind("Message"))
            .group("g")
            .build()
            .unwrap(),
        item("res", 10, 0.7)
            .kind(kind("ToolOutput"))
            .group("g")
            .build()
            .unwrap(),
    ];
    let entries = vec![CountQuotaEntry::new(kind("ToolOutput"), 0, 1).unwrap()];
    let cq = CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Degrade).unwrap();
    let (sel, report) = traced(
        &pipeline(Arc::new(cq), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [0]);
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::CountCapExceeded {
            kind: "ToolOutput".into(),
            cap: 1,
            count: 1
        }
    );
    assert_eq!(
        reason_of(&report, 2),
        &group_excluded("g", 1, "call", "CountCapExceeded")
    );

    // A requirement counts each member of its kind: require 2 ToolOutput, cap 3. Units by
    // value: g (1.5), r1 (.9); committing g gives 1, r1 gives 2: satisfied, no shortfall.
    let entries = vec![CountQuotaEntry::new(kind("ToolOutput"), 2, 3).unwrap()];
    let cq = CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Throw).unwrap();
    let (sel, report) = traced(
        &pipeline(Arc::new(cq), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices.len(), 3);
    assert!(report.count_requirement_shortfalls.is_empty());

    // A group whose two members are both of a kind capped at 1 can never be committed.
    let pair = vec![
        item("t1", 10, 0.9)
            .kind(kind("Tool"))
            .group("p")
            .build()
            .unwrap(),
        item("t2", 10, 0.9)
            .kind(kind("Tool"))
            .group("p")
            .build()
            .unwrap(),
    ];
    let entries = vec![CountQuotaEntry::new(kind("tool"), 1, 1).unwrap()];
    let cq = CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Degrade).unwrap();
    let (sel, report) = traced(
        &pipeline(Arc::new(cq), chrono(), Options::default()),
        &pair,
        &budget(100),
    );
    assert!(sel.indices.is_empty());
    assert_eq!(report.count_requirement_shortfalls.len(), 1);
    assert_eq!(report.count_requirement_shortfalls[0].satisfied_count, 0);
}

#[test]
fn count_constrained_knapsack_keeps_units_together_through_the_re_sort() {
    // Phase 2 knapsack takes everything; the re-sort orders units by value: g (.5 + .45 =
    // .95) before a (.6) before b (.3); cap Doc 2 keeps g's Doc and a, drops b.
    let items = vec![
        item("a", 10, 0.6).kind(kind("Doc")).build().unwrap(),
        item("b", 10, 0.3).kind(kind("Doc")).build().unwrap(),
        item("g1", 10, 0.5)
            .kind(kind("Doc"))
            .group("g")
            .build()
            .unwrap(),
        item("g2", 10, 0.45)
            .kind(kind("Msg"))
            .group("g")
            .build()
            .unwrap(),
    ];
    let entries = vec![CountQuotaEntry::new(kind("Doc"), 0, 2).unwrap()];
    let ccks = CountConstrainedKnapsackSlice::new(
        entries,
        KnapsackSlice::new(1).unwrap(),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let (sel, report) = traced(
        &pipeline(Arc::new(ccks), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    let mut placed = sel.indices.clone();
    placed.sort_unstable();
    assert_eq!(placed, [0, 2, 3]);
    assert!(matches!(
        reason_of(&report, 1),
        ExclusionReason::CountCapExceeded {
            cap: 2,
            count: 2,
            ..
        }
    ));
}

#[test]
fn percentage_quotas_charge_a_mixed_group_to_each_members_kind() {
    // Target 100, ToolOutput cap 30 %. Masses: Message 50 (call 10, m2 40), ToolOutput 45
    // (res 25, t2 20); pool 95: Message floor(100 * 50 / 95) = 52, ToolOutput
    // min(floor(100 * 45 / 95) = 47, 30) = 30.
    // The group {call, res} is offered in "message" (the first of its kinds) at 35 tokens:
    // greedy takes it (room 17; m2's 40 does not fit). Its ToolOutput member's 25 tokens
    // fit ToolOutput's 30, which leaves 5: t2 (20) no longer fits. ToolOutput: 25 <= 30.
    let build = |res_tokens: i64| {
        vec![
            item("call", 10, 0.8)
                .kind(kind("Message"))
                .group("g")
                .build()
                .unwrap(),
            item("res", res_tokens, 0.7)
                .kind(kind("ToolOutput"))
                .group("g")
                .build()
                .unwrap(),
            item("m2", 40, 0.2).kind(kind("Message")).build().unwrap(),
            item("t2", 20, 0.6)
                .kind(kind("ToolOutput"))
                .build()
                .unwrap(),
        ]
    };
    let quota = || -> Arc<dyn Slicer> {
        let entries = vec![QuotaEntry::new(kind("ToolOutput"), 0.0, 30.0).unwrap()];
        Arc::new(QuotaSlice::new(entries, greedy()).unwrap())
    };
    let p = pipeline(quota(), chrono(), Options::default());
    let (sel, _) = traced(&p, &build(25), &budget(100));
    assert_eq!(sel.indices, [0, 1]);
    // res 35: masses Message 50, ToolOutput 55, pool 105: Message 47, ToolOutput 30. The
    // group (45 tokens) is chosen in "message" but its 35 ToolOutput tokens exceed 30: it
    // is dropped; t2 (20) then fits ToolOutput. The group's lead: BudgetExceeded with the
    // group's 45 tokens, available 100 - 20.
    let items = build(35);
    let (sel, report) = traced(&p, &items, &budget(100));
    assert_eq!(sel.indices, [3]);
    assert_eq!(
        reason_of(&report, 0),
        &ExclusionReason::BudgetExceeded {
            item_tokens: 45,
            available_tokens: 80
        }
    );
}

// ---------------------------------------------------------------------------------------
// Deduplication
// ---------------------------------------------------------------------------------------

#[test]
fn two_ok_results_in_different_groups_are_both_kept() {
    let items = vec![
        item("call lookup(1)", 10, 0.5).group("c1").build().unwrap(),
        item("ok", 2, 0.5).group("c1").build().unwrap(),
        item("call lookup(2)", 10, 0.5).group("c2").build().unwrap(),
        item("ok", 2, 0.5).group("c2").build().unwrap(),
    ];
    let (sel, report) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [0, 1, 2, 3]);
    assert!(report.excluded.is_empty());
}

#[test]
fn identical_groups_deduplicate_whole_the_better_one_survives() {
    // Same member contents in the same order under different keys: a duplicate. g2 is worth
    // .9 + .1 = 1.0 against g1's .2 + .1 = .3 (strictly greater wins).
    let items = vec![
        item("call f()", 10, 0.2).group("g1").build().unwrap(),
        item("done", 5, 0.1).group("g1").build().unwrap(),
        item("call f()", 10, 0.9).group("g2").build().unwrap(),
        item("done", 5, 0.1).group("g2").build().unwrap(),
    ];
    let (sel, report) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [2, 3]);
    assert_eq!(
        reason_of(&report, 0),
        &ExclusionReason::Deduplicated {
            deduplicated_against: "call f()".into()
        }
    );
    assert_eq!(
        reason_of(&report, 1),
        &group_excluded("g1", 0, "call f()", "Deduplicated")
    );
    assert_eq!(
        report.groups[0].decision,
        GroupDecision::Excluded {
            stage: PipelineStage::Deduplicate,
            member_index: 0
        }
    );
    // Equal values: the earliest group survives.
    let tied: Vec<ContextItem> = items
        .iter()
        .map(|it| {
            item(it.content(), it.tokens(), 0.5)
                .group(it.group().unwrap())
                .build()
                .unwrap()
        })
        .collect();
    let (sel, _) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &tied,
        &budget(100),
    );
    assert_eq!(sel.indices, [0, 1]);
    // Member order matters: reversed contents are not a duplicate.
    let swapped = vec![
        item("call f()", 10, 0.2).group("g1").build().unwrap(),
        item("done", 5, 0.1).group("g1").build().unwrap(),
        item("done", 5, 0.1).group("g2").build().unwrap(),
        item("call f()", 10, 0.9).group("g2").build().unwrap(),
    ];
    let (sel, _) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &swapped,
        &budget(100),
    );
    assert_eq!(sel.indices.len(), 4);
}

#[test]
fn grouped_and_ungrouped_items_never_deduplicate_against_each_other() {
    // "ok" alone, "ok" in a group, "ok" as a one-member group, and two equal members of one
    // group: nothing is removed. Two ungrouped "note"s still deduplicate as the spec says.
    let items = vec![
        item("ok", 1, 0.9).build().unwrap(),
        item("call", 5, 0.5).group("g").build().unwrap(),
        item("ok", 1, 0.5).group("g").build().unwrap(),
        item("ok", 1, 0.5).group("solo").build().unwrap(),
        item("x", 1, 0.5).group("twins").build().unwrap(),
        item("x", 1, 0.5).group("twins").build().unwrap(),
        item("note", 1, 0.3).build().unwrap(),
        item("note", 1, 0.4).build().unwrap(),
    ];
    let (sel, report) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [0, 1, 2, 3, 4, 5, 7]);
    assert_eq!(report.excluded.len(), 1);
    assert_eq!(report.excluded[0].index, 6);
    assert!(matches!(
        report.excluded[0].reason,
        ExclusionReason::Deduplicated { .. }
    ));
}

// ---------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------

#[test]
fn a_negative_token_member_excludes_its_group() {
    let items = vec![
        item("call", 10, 0.9).group("g").build().unwrap(),
        item("broken result", -5, 0.9).group("g").build().unwrap(),
        item("other", 10, 0.5).build().unwrap(),
    ];
    let (sel, report) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [2]);
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::NegativeTokens { tokens: -5 }
    );
    assert_eq!(
        reason_of(&report, 0),
        &group_excluded("g", 1, "broken result", "NegativeTokens")
    );
    assert_eq!(report.excluded[0].score, 0.0, "scored at Classify: 0.0");
    let g = &report.groups[0];
    assert_eq!(
        g.decision,
        GroupDecision::Excluded {
            stage: PipelineStage::Classify,
            member_index: 1
        }
    );
    assert_eq!((g.tokens, g.value), (5, None));
    assert_eq!(report.total_tokens_considered, 15);
}

#[test]
fn a_pinned_member_pins_its_group() {
    // The pinned call pins its result too: both bypass slicing, score 1.0, reason Pinned;
    // the pinned tokens (20 + 50) are checked against max - reserve.
    let items = vec![
        item("call", 20, 0.1)
            .pinned(true)
            .group("g")
            .build()
            .unwrap(),
        item("doc", 30, 0.9).build().unwrap(),
        item("result", 50, 0.1).group("g").build().unwrap(),
    ];
    let p = pipeline(greedy(), chrono(), Options::default());
    let (sel, report) = traced(&p, &items, &budget(100));
    // Nothing is dated: merged order, the pinned group first and together.
    assert_eq!(sel.indices, [0, 2, 1]);
    assert_eq!(
        sel.reasons,
        [
            InclusionReason::Pinned,
            InclusionReason::Pinned,
            InclusionReason::Scored
        ]
    );
    assert_eq!((sel.scores[0], sel.scores[1]), (1.0, 1.0));
    assert_eq!(report.groups[0].pinned_by, Some(0));
    assert_eq!(report.groups[0].value, None);
    // Effective target 100 - 70 = 30: doc fits exactly.
    let err = p
        .run(&items, &ContextBudget::new(60, 60).unwrap())
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::PinnedExceedsBudget);
    assert_eq!(
        err.to_string(),
        "pinned tokens (70) exceed available budget (60)"
    );
}

// ---------------------------------------------------------------------------------------
// Placement, overflow and the pinned-first option
// ---------------------------------------------------------------------------------------

#[test]
fn truncate_drops_whole_groups_and_keeps_a_pinned_group_that_overflows() {
    // Pinned group {sys 30, rules 40} = 70 > target 60. Under Truncate it stays whole; the
    // effective target is 0, so the pair {a 5, b 5} is left out at Slice, whole, with
    // PinnedOverride (decision D4: 10 > 0 and 10 <= 60). Under Throw: an error.
    let items = vec![
        item("sys", 30, 0.0)
            .pinned(true)
            .group("p")
            .build()
            .unwrap(),
        item("a", 5, 0.9).group("q").build().unwrap(),
        item("rules", 40, 0.0).group("p").build().unwrap(),
        item("b", 5, 0.8).group("q").build().unwrap(),
    ];
    let b = ContextBudget::new(100, 60).unwrap();
    let err = pipeline(greedy(), chrono(), Options::default())
        .run(&items, &b)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Overflow);
    let truncate = Options {
        overflow: OverflowStrategy::Truncate,
        ..Options::default()
    };
    let (sel, report) = traced(&pipeline(greedy(), chrono(), truncate), &items, &b);
    assert_eq!(sel.indices, [0, 2]);
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::PinnedOverride {
            displaced_by: "sys".into()
        }
    );
    assert_eq!(
        reason_of(&report, 3),
        &group_excluded("q", 1, "a", "PinnedOverride")
    );
    assert_eq!(placed_tokens(&items, &sel), 70);
}

#[test]
fn truncate_meets_a_group_at_its_first_member_in_the_merged_list() {
    // Proceed-free overflow from a count quota's Phase 1 (it ignores the budget): require
    // 2 Doc commits g {d1 40, m 40} (value 1.6) and d2 (30, .5): 110 > target 100.
    // Truncate walks the merged (Sort) list: d1 (.9) meets g: 80 <= 100 kept; d2 (.5)
    // 110 > 100 dropped.
    let items = vec![
        item("d1", 40, 0.9)
            .kind(kind("Doc"))
            .group("g")
            .build()
            .unwrap(),
        item("d2", 30, 0.5).kind(kind("Doc")).build().unwrap(),
        item("m", 40, 0.7)
            .kind(kind("Msg"))
            .group("g")
            .build()
            .unwrap(),
    ];
    let entries = vec![CountQuotaEntry::new(kind("Doc"), 2, 5).unwrap()];
    let cq = CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Degrade).unwrap();
    let truncate = Options {
        overflow: OverflowStrategy::Truncate,
        ..Options::default()
    };
    let (sel, report) = traced(
        &pipeline(Arc::new(cq), chrono(), truncate),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [0, 2]);
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::BudgetExceeded {
            item_tokens: 30,
            available_tokens: 20
        }
    );
}

#[test]
fn pinned_first_puts_an_undated_system_prompt_first() {
    // Chronological placement puts undated items last (spec 05 §2.4); the option moves
    // the pinned ones to the front in input order, a pinned group staying together.
    let items = vec![
        item("system prompt", 10, 0.0).pinned(true).build().unwrap(),
        item("user 1", 10, 0.5).timestamp(1).build().unwrap(),
        item("memory a", 10, 0.0)
            .pinned(true)
            .group("mem")
            .build()
            .unwrap(),
        item("pinned note", 10, 0.0).pinned(true).build().unwrap(),
        item("memory b", 10, 0.0)
            .group("mem")
            .timestamp(0)
            .build()
            .unwrap(),
    ];
    let (sel, _) = traced(
        &pipeline(greedy(), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    // Off: the pinned group is placed at its earliest timestamp (0), the rest undated last.
    assert_eq!(sel.indices, [2, 4, 1, 0, 3]);
    let on = Options {
        pinned_first: true,
        ..Options::default()
    };
    let (sel, _) = traced(&pipeline(greedy(), chrono(), on), &items, &budget(100));
    assert_eq!(sel.indices, [0, 2, 4, 3, 1]);
    let (sel, _) = traced(&pipeline(greedy(), ushaped(), on), &items, &budget(100));
    assert_eq!(&sel.indices[..4], [0, 2, 4, 3]);
    // Without groups the option is a stable move of the pinned items to the front.
    let plain: Vec<ContextItem> = items
        .iter()
        .map(|it| {
            let b = item(it.content(), it.tokens(), 0.5).pinned(it.pinned());
            match it.timestamp() {
                Some(t) => b.timestamp(t).build().unwrap(),
                None => b.build().unwrap(),
            }
        })
        .collect();
    let sel = pipeline(greedy(), chrono(), on)
        .run(&plain, &budget(100))
        .unwrap();
    assert_eq!(sel.indices, [0, 2, 3, 4, 1]);
}

// ---------------------------------------------------------------------------------------
// Custom components
// ---------------------------------------------------------------------------------------

/// A custom slicer that returns fixed positions of the sorted list.
#[derive(Debug)]
struct Fixed(Vec<usize>);

impl Slicer for Fixed {
    fn slice(&self, _: &[ScoredItem<'_>], _: &ContextBudget) -> ctxpack::Result<SliceOutcome> {
        Ok(SliceOutcome {
            selected: self.0.clone(),
            ..SliceOutcome::default()
        })
    }
}

#[test]
fn a_custom_slicer_returning_half_a_group_loses_the_group() {
    // Sorted: call (.9), x (.5), result (.1). The slicer returns call and x: the group is
    // incomplete, so call is dropped too (result is never added: it could break the
    // budget). Lead: the member the slicer left out (result), with its own item reason.
    let items = vec![
        item("call", 10, 0.9).group("g").build().unwrap(),
        item("result", 10, 0.1).group("g").build().unwrap(),
        item("x", 10, 0.5).build().unwrap(),
    ];
    let p = pipeline(Arc::new(Fixed(vec![0, 1])), chrono(), Options::default());
    let (sel, report) = traced(&p, &items, &budget(100));
    assert_eq!(sel.indices, [2]);
    assert_eq!(
        reason_of(&report, 1),
        &ExclusionReason::BudgetExceeded {
            item_tokens: 10,
            available_tokens: 90
        }
    );
    assert_eq!(
        reason_of(&report, 0),
        &group_excluded("g", 1, "result", "BudgetExceeded")
    );
    assert!(report.groups[0].partial_selection);
    // The same slicer inside a count quota (Phase 2) is cut the same way.
    let cq = CountQuotaSlice::new(
        vec![],
        Arc::new(Fixed(vec![0, 1])),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let (sel, report) = traced(
        &pipeline(Arc::new(cq), chrono(), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(sel.indices, [2]);
    assert!(report.groups[0].partial_selection);
}

/// A custom placer that reverses its input.
#[derive(Debug)]
struct Reverse;

impl Placer for Reverse {
    fn place(&self, items: &[ScoredItem<'_>]) -> ctxpack::Result<Vec<usize>> {
        Ok((0..items.len()).rev().collect())
    }
}

#[test]
fn a_custom_placer_sees_items_and_groups_are_gathered_after_it() {
    // Merged (Sort order): a .9, c .8, b .5, d .1; reversed: d, b, c, a. The group {a, d}
    // moves to its first placed member (d) with its members in input order: a, d, b, c.
    let items = vec![
        item("a", 1, 0.9).group("g").build().unwrap(),
        item("b", 1, 0.5).build().unwrap(),
        item("c", 1, 0.8).build().unwrap(),
        item("d", 1, 0.1).group("g").build().unwrap(),
    ];
    let (sel, _) = traced(
        &pipeline(greedy(), Arc::new(Reverse), Options::default()),
        &items,
        &budget(100),
    );
    assert_eq!(placed_contents(&items, &sel), ["a", "d", "b", "c"]);
}

// ---------------------------------------------------------------------------------------
// Report wire form
// ---------------------------------------------------------------------------------------

#[test]
fn the_json_report_lists_groups_and_names_the_responsible_member() {
    let items = call_and_result(40);
    let p = pipeline(greedy(), chrono(), Options::default());
    let (_, report) = traced(&p, &items, &budget(80));
    let json: serde_json::Value =
        serde_json::from_str(&ctxpack::diagnostics::report_to_json(&report, &items)).unwrap();
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(
        groups[0],
        serde_json::json!({
            "key": "c1", "members": [1, 3], "tokens": 60, "value": 0.9,
            "decision": "Excluded", "stage": "Slice", "member_index": 1
        })
    );
    let result = json["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["item"]["content"] == "result: 4 °C, rain")
        .unwrap();
    assert_eq!(result["item"]["group"], "c1");
    assert_eq!(
        result["reason"],
        serde_json::json!({
            "reason": "GroupExcluded", "group": "c1", "member_index": 1,
            "member_content": "call get_weather(Oslo)", "member_reason": "BudgetExceeded"
        })
    );
    // Without group keys there is no "groups" member at all.
    let plain = vec![item("a", 1, 0.5).build().unwrap()];
    let (_, report) = traced(&p, &plain, &budget(80));
    let text = ctxpack::diagnostics::report_to_json(&report, &plain);
    assert!(
        !text.contains("\"groups\"") && !text.contains("\"group\""),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------
// Adversarial cases
// ---------------------------------------------------------------------------------------

#[test]
fn a_group_larger_than_the_budget_is_left_out_whole_by_every_slicer() {
    // {big 70, tail 40} = 110 tokens > target 100; the small item still fits.
    let items = vec![
        item("big", 70, 0.9).group("huge").build().unwrap(),
        item("small", 20, 0.1).build().unwrap(),
        item("tail", 40, 0.9).group("huge").build().unwrap(),
    ];
    let slicers: Vec<Arc<dyn Slicer>> = vec![
        greedy(),
        Arc::new(KnapsackSlice::new(1).unwrap()),
        Arc::new(QuotaSlice::new(vec![], greedy()).unwrap()),
        Arc::new(CountQuotaSlice::new(vec![], greedy(), ScarcityBehavior::Degrade).unwrap()),
        Arc::new(
            CountConstrainedKnapsackSlice::new(
                vec![],
                KnapsackSlice::new(1).unwrap(),
                ScarcityBehavior::Degrade,
            )
            .unwrap(),
        ),
    ];
    for slicer in slicers {
        let (sel, report) = traced(
            &pipeline(slicer.clone(), chrono(), Options::default()),
            &items,
            &budget(100),
        );
        assert_eq!(sel.indices, [1], "{slicer:?}");
        assert_eq!(
            reason_of(&report, 0),
            &ExclusionReason::BudgetExceeded {
                item_tokens: 110,
                available_tokens: 80
            },
            "{slicer:?}"
        );
        assert_eq!(
            reason_of(&report, 2),
            &group_excluded("huge", 0, "big", "BudgetExceeded")
        );
    }
}

#[test]
fn zero_token_members_count_with_their_group() {
    // {marker 0, payload 50}: a 50-token unit, not a free one: at target 40 it is out whole.
    // {m1 0, m2 0}: a zero-token unit, always taken while the target is positive.
    let items = vec![
        item("marker", 0, 0.9).group("g").build().unwrap(),
        item("payload", 50, 0.9).group("g").build().unwrap(),
        item("m1", 0, 0.1).group("free").build().unwrap(),
        item("m2", 0, 0.1).group("free").build().unwrap(),
    ];
    for slicer in [
        greedy(),
        Arc::new(KnapsackSlice::new(10).unwrap()) as Arc<dyn Slicer>,
    ] {
        let p = pipeline(slicer, chrono(), Options::default());
        let (sel, report) = traced(&p, &items, &budget(40));
        assert_eq!(sel.indices, [2, 3]);
        assert_eq!(
            sel.reasons,
            [InclusionReason::ZeroToken, InclusionReason::ZeroToken]
        );
        assert!(matches!(
            reason_of(&report, 0),
            ExclusionReason::BudgetExceeded {
                item_tokens: 50,
                ..
            }
        ));
        let (sel, _) = traced(&p, &items, &budget(60));
        assert_eq!(
            sel.reasons
                .iter()
                .filter(|r| **r == InclusionReason::ZeroToken)
                .count(),
            3
        );
    }
}

#[test]
fn one_member_groups_select_and_place_like_their_items() {
    // With deduplication off (groups deduplicate only against groups), giving every item
    // a group of its own changes nothing, for every slicer and placer.
    let mut rng = Rng::new(7);
    for case in 0..300 {
        let n = 1 + rng.below(12);
        let plain: Vec<ContextItem> = (0..n)
            .map(|i| {
                let b = item(
                    &format!("i{i}"),
                    rng.range(0, 40),
                    (rng.below(5) as f64) / 4.0,
                )
                .kind(kind(["A", "B"][rng.below(2)]));
                let b = if rng.chance(0.5) {
                    b.timestamp(rng.range(0, 5))
                } else {
                    b
                };
                b.pinned(rng.chance(0.1)).build().unwrap()
            })
            .collect();
        let solo: Vec<ContextItem> = plain
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let mut b = item(
                    it.content(),
                    it.tokens(),
                    it.future_relevance_hint().unwrap(),
                )
                .kind(it.kind().clone())
                .pinned(it.pinned())
                .group(format!("solo{i}"));
                if let Some(t) = it.timestamp() {
                    b = b.timestamp(t);
                }
                b.build().unwrap()
            })
            .collect();
        let entries = || vec![CountQuotaEntry::new(kind("A"), 1, 2).unwrap()];
        let slicers: Vec<Arc<dyn Slicer>> = vec![
            greedy(),
            Arc::new(KnapsackSlice::new(5).unwrap()),
            Arc::new(
                QuotaSlice::new(
                    vec![QuotaEntry::new(kind("B"), 10.0, 40.0).unwrap()],
                    greedy(),
                )
                .unwrap(),
            ),
            Arc::new(CountQuotaSlice::new(entries(), greedy(), ScarcityBehavior::Degrade).unwrap()),
            Arc::new(
                CountConstrainedKnapsackSlice::new(
                    entries(),
                    KnapsackSlice::new(5).unwrap(),
                    ScarcityBehavior::Degrade,
                )
                .unwrap(),
            ),
        ];
        let target = rng.range(0, 150);
        for slicer in slicers {
            for placer in [chrono(), ushaped()] {
                let o = Options {
                    dedup: false,
                    overflow: OverflowStrategy::Truncate,
                    ..Options::default()
                };
                let p = pipeline(slicer.clone(), placer, o);
                let b = budget(target);
                let (want, got) = (p.dry_run(&plain, &b), p.dry_run(&solo, &b));
                match (want, got) {
                    (Ok(w), Ok(g)) => {
                        let idx = |r: &SelectionReport| {
                            r.included.iter().map(|e| e.index).collect::<Vec<_>>()
                        };
                        assert_eq!(idx(&w), idx(&g), "case {case} {slicer:?}");
                        let ex = |r: &SelectionReport| {
                            r.excluded
                                .iter()
                                .map(|e| (e.index, e.reason.clone()))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(ex(&w), ex(&g), "case {case} {slicer:?}");
                    }
                    (Err(w), Err(g)) => assert_eq!(w, g),
                    (w, g) => panic!("case {case}: {w:?} vs {g:?}"),
                }
            }
        }
    }
}

#[test]
fn a_hundred_thousand_items_in_fifty_thousand_groups() {
    // Pairs (call, result) in input order, interleaved scores; about half fit.
    let n = 100_000;
    let mut rng = Rng::new(42);
    let items: Vec<ContextItem> = (0..n)
        .map(|i| {
            item(&format!("item {i}"), rng.range(1, 200), rng.unit())
                .group(format!("pair {}", i / 2))
                .timestamp(i as i64)
                .build()
                .unwrap()
        })
        .collect();
    let total: i64 = items.iter().map(ContextItem::tokens).sum();
    // Knapsack with 1000-token buckets: every pair (2 to 398 tokens) weighs one bucket, so
    // at most target / 1000 pairs fit; greedy fills about half the items.
    for (slicer, at_least) in [
        (greedy(), n / 4),
        (
            Arc::new(KnapsackSlice::new(1000).unwrap()) as Arc<dyn Slicer>,
            n / 20,
        ),
    ] {
        let p = pipeline(slicer, chrono(), Options::default());
        let sel = p.run(&items, &budget(total / 2)).unwrap();
        check_whole_and_adjacent(&items, &sel.indices).unwrap();
        let placed = sel.indices.len();
        assert!(placed > at_least && placed % 2 == 0, "{placed} placed");
        assert!(placed_tokens(&items, &sel) <= total / 2);
        let report = p.dry_run(&items, &budget(total / 2)).unwrap();
        assert_eq!(report.groups.len(), n / 2);
        assert_eq!(report.included.len() + report.excluded.len(), n);
    }
}

// ---------------------------------------------------------------------------------------
// Exhaustive: knapsack over units is optimal
// ---------------------------------------------------------------------------------------

/// `max(0, floor(value * 10000))`, the knapsack's value of a score (spec 04 §3.2).
fn scaled(value: f64) -> i64 {
    ((value * 10000.0).floor() as i64).max(0)
}

#[test]
fn knapsack_with_groups_finds_the_optimum_over_units_exhaustively() {
    const SCORES: [f64; 7] = [0.0, 0.05, 0.1, 0.25, 0.5, 0.57, 0.9];
    let (mut cases, mut nontrivial) = (0, 0);
    for seed in 0..6000u64 {
        let mut rng = Rng::new(seed);
        let n = 1 + rng.below(12);
        let keys = 1 + rng.below(5);
        let q = *rng.pick(&[1i64, 3, 10]);
        let mode = *rng.pick(&GroupValue::ALL);
        let items: Vec<ContextItem> = (0..n)
            .map(|i| {
                let tokens = if rng.chance(0.1) { 0 } else { rng.range(1, 60) };
                let b = ContextItem::builder(format!("i{i}"), tokens);
                if rng.chance(0.6) {
                    b.group(format!("g{}", rng.below(keys))).build().unwrap()
                } else {
                    b.build().unwrap()
                }
            })
            .collect();
        let scored: Vec<ScoredItem> = items
            .iter()
            .map(|item| ScoredItem {
                item,
                score: *rng.pick(&SCORES),
            })
            .collect();
        let units = Units::new(&scored, mode).unwrap();
        let target = rng.range(1, 200);
        let out = KnapsackSlice::new(q)
            .unwrap()
            .slice_grouped(
                &scored,
                &units,
                &ContextBudget::new(target, target).unwrap(),
            )
            .unwrap();
        // Whole units, each once.
        let mut taken = vec![0usize; units.len()];
        for &p in &out.selected {
            taken[units.unit_of(p)] += 1;
        }
        let unit_tokens = |u: usize| -> i64 {
            units
                .members(u)
                .iter()
                .map(|&m| items[m as usize].tokens())
                .sum()
        };
        let cap = target / q;
        let weight = |u: usize| (unit_tokens(u) + q - 1) / q;
        let mut used = (0i64, 0i64); // (weight, value) of the positive units taken
        for (u, &count) in taken.iter().enumerate() {
            let size = units.members(u).len();
            assert!(count == 0 || count == size, "seed {seed}: unit {u} split");
            if unit_tokens(u) == 0 {
                assert_eq!(count, size, "seed {seed}: zero-token unit {u} left out");
            } else if count > 0 {
                used.0 += weight(u);
                used.1 += scaled(units.value(u));
            }
        }
        assert!(
            used.0 <= cap,
            "seed {seed}: weight {} over capacity {cap}",
            used.0
        );
        // Brute force over every subset of the positive-token units.
        let positive: Vec<usize> = (0..units.len()).filter(|&u| unit_tokens(u) > 0).collect();
        let mut best = 0i64;
        for mask in 0u32..(1 << positive.len()) {
            let (mut w, mut v) = (0i64, 0i64);
            for (bit, &u) in positive.iter().enumerate() {
                if mask >> bit & 1 == 1 {
                    w += weight(u);
                    v += scaled(units.value(u));
                }
            }
            if w <= cap {
                best = best.max(v);
            }
        }
        assert_eq!(
            used.1, best,
            "seed {seed}: value {} but the optimum is {best}",
            used.1
        );
        cases += 1;
        let all_weight: i64 = positive.iter().map(|&u| weight(u)).sum();
        if all_weight > cap && best > 0 && !units.all_single() {
            nontrivial += 1;
        }
    }
    assert_eq!(cases, 6000);
    assert!(
        nontrivial > 2000,
        "only {nontrivial} cases needed a real choice among groups"
    );
}

#[test]
fn the_whole_and_adjacent_check_rejects_splits_and_gaps() {
    let items = vec![
        item("a", 1, 0.5).group("g").build().unwrap(),
        item("b", 1, 0.5).build().unwrap(),
        item("c", 1, 0.5).group("g").build().unwrap(),
    ];
    assert!(check_whole_and_adjacent(&items, &[0, 2, 1]).is_ok());
    assert!(check_whole_and_adjacent(&items, &[1]).is_ok());
    assert!(check_whole_and_adjacent(&items, &[0, 1])
        .unwrap_err()
        .contains("split"));
    assert!(check_whole_and_adjacent(&items, &[0, 1, 2])
        .unwrap_err()
        .contains("adjacent"));
    assert!(check_whole_and_adjacent(&items, &[2, 0, 1])
        .unwrap_err()
        .contains("adjacent"));
}

// ---------------------------------------------------------------------------------------
// Policy JSON extension
// ---------------------------------------------------------------------------------------

#[test]
fn policies_carry_the_group_value_and_pinned_first_options() {
    use ctxpack::policy::{Policy, Preset};
    let text =
        r#"{"scorers":[{"type":"recency","weight":1}],"groupValue":"MEAN","pinnedFirst":true}"#;
    let policy = Policy::from_json(text).unwrap();
    assert_eq!(
        (policy.group_value, policy.pinned_first),
        (GroupValue::Mean, true)
    );
    let built = policy.build_pipeline().unwrap();
    assert_eq!(
        (built.group_value(), built.pinned_first()),
        (GroupValue::Mean, true)
    );
    assert_eq!(
        Policy::from_pipeline(&built).unwrap().group_value,
        GroupValue::Mean
    );
    let written = policy.to_json().unwrap();
    assert!(
        written.ends_with(r#""overflowStrategy":"throw","groupValue":"mean","pinnedFirst":true}"#),
        "{written}"
    );
    assert_eq!(Policy::from_json(&written).unwrap(), policy);
    // Absent, null or default: nothing is written, so other readers see the plain format.
    let plain = Policy::from_json(
        r#"{"scorers":[{"type":"recency","weight":1}],"groupValue":null,"pinnedFirst":null}"#,
    )
    .unwrap();
    assert_eq!(
        (plain.group_value, plain.pinned_first),
        (GroupValue::Sum, false)
    );
    for preset in Preset::ALL {
        let json = preset.policy().to_json().unwrap();
        assert!(
            !json.contains("groupValue") && !json.contains("pinnedFirst"),
            "{json}"
        );
    }
    for (bad, message) in [
        (
            r#""groupValue":"median""#,
            r#"invalid policy: groupValue: unknown group value "median"; known values: sum, max, mean"#,
        ),
        (
            r#""groupValue":2"#,
            "invalid policy: groupValue: expected a string, found a number",
        ),
        (
            r#""pinnedFirst":"yes""#,
            "invalid policy: pinnedFirst: expected a boolean, found a string",
        ),
    ] {
        let text = format!(r#"{{"scorers":[{{"type":"recency","weight":1}}],{bad}}}"#);
        assert_eq!(Policy::from_json(&text).unwrap_err().to_string(), message);
    }
}
