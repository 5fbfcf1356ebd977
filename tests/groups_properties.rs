//! Property tests of item groups (`docs/groups.md`): seeded random inputs with groups
//! (mixed kinds, zero and negative tokens, pinned members, duplicate contents and
//! duplicate groups) run through every built-in slicer × placer × deduplication ×
//! overflow strategy, with random group-value modes and the pinned-first option. Every
//! run that succeeds must keep each group whole and adjacent, respect the budget and the
//! caps, agree with its traced twin, and explain every excluded member consistently.
//!
//! `CTXPACK_GROUP_CASES` sets the number of generated inputs (default 500; each runs under
//! the 60 configurations).

#[path = "common/groups.rs"]
mod groups;
#[path = "common/rng.rs"]
mod rng;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ctxpack::diagnostics::{
    ExclusionReason, GroupDecision, InclusionReason, SelectionReport, TraceDetail,
};
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, Slicer,
};
use ctxpack::{ContextBudget, ContextItem, ErrorCode, GroupValue, OverflowStrategy, RunOptions};

use groups::{check_whole_and_adjacent, item, kind, pipeline, Options};
use rng::Rng;

const KINDS: [&str; 3] = ["Message", "ToolOutput", "Document"];

/// One generated input.
struct Input {
    items: Vec<ContextItem>,
    budget: ContextBudget,
}

fn generate(rng: &mut Rng) -> Input {
    let n = rng.below(28);
    let keys = 1 + n / 3;
    let shared = ["ok", "done", "same", "{}", "error", "retry"];
    let mut items: Vec<ContextItem> = Vec::with_capacity(n + 6);
    for i in 0..n {
        let content = if rng.chance(0.25) {
            rng.pick(&shared).to_string()
        } else {
            format!("item {i}")
        };
        let tokens = match rng.below(30) {
            0..=2 => 0,
            3 => -rng.range(1, 20),
            _ => rng.range(1, 120),
        };
        let mut b = item(&content, tokens, (rng.below(9) as f64) / 8.0)
            .kind(kind(KINDS[rng.below(KINDS.len())]))
            .pinned(rng.chance(0.05));
        if rng.chance(0.7) {
            b = b.timestamp(rng.range(0, 40));
        }
        if rng.chance(0.5) {
            b = b.group(format!("g{}", rng.below(keys)));
        }
        items.push(b.build().unwrap());
    }
    // Sometimes repeat a group's contents under a new key: a duplicate group.
    if rng.chance(0.3) {
        if let Some(key) = items.iter().find_map(|i| i.group().map(str::to_owned)) {
            let copies: Vec<ContextItem> = items
                .iter()
                .filter(|i| i.group() == Some(key.as_str()))
                .map(|i| {
                    let score = (rng.below(9) as f64) / 8.0;
                    item(i.content(), i.tokens().max(0), score)
                        .kind(i.kind().clone())
                        .group(format!("{key}-copy"))
                        .build()
                        .unwrap()
                })
                .collect();
            items.extend(copies);
        }
    }
    let total: i64 = items.iter().map(|i| i.tokens().max(0)).sum();
    let target = rng.range(0, total.max(1));
    let reserve = if rng.chance(0.2) { rng.range(0, 20) } else { 0 };
    let max = target + reserve + rng.range(0, 100);
    Input {
        items,
        budget: ContextBudget::with_all(max, target, reserve, Vec::new(), 0.0).unwrap(),
    }
}

/// The five built-in slicers, with random configurations.
fn slicers(rng: &mut Rng) -> Vec<(&'static str, Arc<dyn Slicer>)> {
    let q = *rng.pick(&[1i64, 7, 25]);
    let count_entries = |rng: &mut Rng| {
        let mut entries = Vec::new();
        for k in KINDS {
            if rng.chance(0.6) {
                let require = rng.below(3);
                let cap = require + rng.below(3);
                if cap > 0 || require == 0 {
                    entries.push(CountQuotaEntry::new(kind(k), require, cap).unwrap());
                }
            }
        }
        entries
    };
    let scarcity = |rng: &mut Rng| {
        if rng.chance(0.2) {
            ScarcityBehavior::Throw
        } else {
            ScarcityBehavior::Degrade
        }
    };
    let mut percent = Vec::new();
    for k in KINDS {
        if rng.chance(0.6) {
            let require = (rng.below(4) * 10) as f64;
            let cap = require + (rng.below(7) * 10) as f64;
            percent.push(QuotaEntry::new(kind(k), require, cap).unwrap());
        }
    }
    let greedy: Arc<dyn Slicer> = Arc::new(GreedySlice::new());
    let cq_entries = count_entries(rng);
    let cq_scarcity = scarcity(rng);
    let ccks_entries = count_entries(rng);
    let ccks_scarcity = scarcity(rng);
    vec![
        ("greedy", greedy.clone()),
        ("knapsack", Arc::new(KnapsackSlice::new(q).unwrap())),
        (
            "quota",
            Arc::new(QuotaSlice::new(percent, greedy.clone()).unwrap()),
        ),
        (
            "count-quota",
            Arc::new(CountQuotaSlice::new(cq_entries, greedy, cq_scarcity).unwrap()),
        ),
        (
            "count-constrained-knapsack",
            Arc::new(
                CountConstrainedKnapsackSlice::new(
                    ccks_entries,
                    KnapsackSlice::new(q).unwrap(),
                    ccks_scarcity,
                )
                .unwrap(),
            ),
        ),
    ]
}

/// The slicer's budget: 02 §6.1 without reserved slots or margin.
fn effective_target(budget: &ContextBudget, pinned_tokens: i64) -> i64 {
    let hi = (budget.max_tokens() - budget.output_reserve() - pinned_tokens).max(0);
    (budget.target_tokens() - pinned_tokens).max(0).min(hi)
}

/// Everything a successful grouped run must satisfy.
fn check_run(
    input: &Input,
    slicer: &dyn Slicer,
    o: Options,
    placed: &[usize],
    reasons: &[InclusionReason],
    report: &SelectionReport,
) -> Result<(), String> {
    let items = &input.items;
    let budget = &input.budget;
    check_whole_and_adjacent(items, placed)?;

    // Every input position is reported exactly once.
    let mut seen = vec![0; items.len()];
    for e in &report.included {
        seen[e.index] += 1;
    }
    for e in &report.excluded {
        seen[e.index] += 1;
    }
    if seen.iter().any(|&c| c != 1) {
        return Err(format!("report coverage {seen:?}"));
    }

    let pinned: Vec<usize> = placed
        .iter()
        .zip(reasons)
        .filter(|(_, r)| **r == InclusionReason::Pinned)
        .map(|(&i, _)| i)
        .collect();
    let pinned_tokens: i64 = pinned.iter().map(|&i| items[i].tokens()).sum();
    let total: i64 = placed.iter().map(|&i| items[i].tokens()).sum();
    let free = total - pinned_tokens;

    // Pinned items come first with the option.
    if o.pinned_first && placed[..pinned.len()] != pinned[..] {
        return Err(format!("pinned items not first: {placed:?}"));
    }
    // Every item pinned by itself is placed, unless a negative member took its group out.
    for (i, it) in items.iter().enumerate() {
        let negative_group = it
            .group()
            .is_some_and(|g| items.iter().any(|m| m.group() == Some(g) && m.tokens() < 0));
        if it.pinned() && it.tokens() >= 0 && !negative_group && !pinned.contains(&i) {
            return Err(format!("pinned item {i} not placed as pinned"));
        }
    }

    // Budget.
    let target = budget.target_tokens();
    match o.overflow {
        OverflowStrategy::Throw if total > target => {
            return Err(format!("Throw run placed {total} > target {target}"));
        }
        OverflowStrategy::Truncate if pinned_tokens <= target && total > target => {
            return Err(format!("Truncate run placed {total} > target {target}"));
        }
        OverflowStrategy::Truncate if pinned_tokens > target && free > 0 => {
            return Err(format!(
                "Truncate kept {free} free tokens over pinned overflow"
            ));
        }
        _ => {}
    }
    let count_quota = matches!(
        slicer.as_any().type_id(),
        t if t == std::any::TypeId::of::<CountQuotaSlice>()
            || t == std::any::TypeId::of::<CountConstrainedKnapsackSlice>()
    );
    let effective = effective_target(budget, pinned_tokens);
    if !count_quota && free > effective {
        return Err(format!(
            "slicer placed {free} > effective target {effective}"
        ));
    }

    // Caps, counted over the items the slicer chose (pinned items are not sliced).
    let free_items: Vec<&ContextItem> = placed
        .iter()
        .zip(reasons)
        .filter(|(_, r)| **r != InclusionReason::Pinned)
        .map(|(&i, _)| &items[i])
        .collect();
    for (cap_kind, cap) in slicer.count_caps() {
        let count = free_items.iter().filter(|i| i.kind() == cap_kind).count();
        if count > *cap {
            return Err(format!("{count} items of {cap_kind:?} over cap {cap}"));
        }
    }
    if let Some(quota) = slicer.as_any().downcast_ref::<QuotaSlice>() {
        for entry in quota.entries() {
            let cap = ((entry.cap() / 100.0) * effective as f64).floor() as i64;
            let used: i64 = free_items
                .iter()
                .filter(|i| i.kind() == entry.kind())
                .map(|i| i.tokens())
                .sum();
            if used > cap {
                return Err(format!(
                    "{used} tokens of {:?} over cap {cap}",
                    entry.kind()
                ));
            }
        }
    }

    check_group_explanations(items, placed, report)
}

/// The group listing agrees with the placement, and in every excluded group one member
/// carries a reason of its own while the others (negative members aside) name it.
fn check_group_explanations(
    items: &[ContextItem],
    placed: &[usize],
    report: &SelectionReport,
) -> Result<(), String> {
    let reasons: HashMap<usize, &ExclusionReason> = report
        .excluded
        .iter()
        .map(|e| (e.index, &e.reason))
        .collect();
    let groups: BTreeMap<&str, Vec<usize>> = groups::groups_of(items);
    if report.groups.len() != groups.len() {
        return Err(format!(
            "{} groups listed, {} in the input",
            report.groups.len(),
            groups.len()
        ));
    }
    for g in &report.groups {
        if groups.get(g.key.as_str()) != Some(&g.members) {
            return Err(format!("group {:?} lists members {:?}", g.key, g.members));
        }
        let in_window = g.members.iter().all(|m| placed.contains(m));
        match g.decision {
            GroupDecision::Included if !in_window => {
                return Err(format!("group {:?} listed Included but not placed", g.key))
            }
            GroupDecision::Included => {}
            GroupDecision::Excluded { member_index, .. } => {
                if g.members.iter().any(|m| placed.contains(m)) {
                    return Err(format!("group {:?} listed Excluded but placed", g.key));
                }
                if !g.members.contains(&member_index) {
                    return Err(format!("group {:?} blames a non-member", g.key));
                }
                if matches!(
                    reasons[&member_index],
                    ExclusionReason::GroupExcluded { .. }
                ) {
                    return Err(format!(
                        "group {:?}: the blamed member has no own reason",
                        g.key
                    ));
                }
                for &m in &g.members {
                    let ok = m == member_index
                        || items[m].tokens() < 0
                        || matches!(
                            reasons[&m],
                            ExclusionReason::GroupExcluded { member_index: by, group, .. }
                                if *by == member_index && group == &g.key
                        );
                    if !ok {
                        return Err(format!(
                            "group {:?}: member {m} has {:?}, expected it to name {member_index}",
                            g.key, reasons[&m]
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn every_slicer_placer_dedup_and_overflow_keeps_groups_whole() {
    let cases: u64 = std::env::var("CTXPACK_GROUP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let mut ran: BTreeMap<&str, usize> = BTreeMap::new();
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut runs = 0;
    for seed in 0..cases {
        let mut rng = Rng::new(seed ^ 0x6_0005);
        let input = generate(&mut rng);
        for (name, slicer) in slicers(&mut rng) {
            for placer in [
                Arc::new(ChronologicalPlacer::new()) as Arc<dyn Placer>,
                Arc::new(UShapedPlacer::new()),
            ] {
                for dedup in [true, false] {
                    for overflow in [
                        OverflowStrategy::Throw,
                        OverflowStrategy::Truncate,
                        OverflowStrategy::Proceed,
                    ] {
                        let o = Options {
                            dedup,
                            overflow,
                            group_value: *rng.pick(&GroupValue::ALL),
                            pinned_first: rng.chance(0.3),
                        };
                        let p = pipeline(slicer.clone(), placer.clone(), o);
                        runs += 1;
                        let untraced = p.run(&input.items, &input.budget);
                        let options = RunOptions {
                            trace: TraceDetail::Item,
                            on_overflow: None,
                        };
                        let traced = p.run_with(&input.items, &input.budget, &options);
                        let (untraced, traced) = match (untraced, traced) {
                            (Ok(u), Ok(t)) => (u, t),
                            (Err(a), Err(b)) if a == b => {
                                let allowed = [
                                    ErrorCode::PinnedExceedsBudget,
                                    ErrorCode::Overflow,
                                    ErrorCode::CountRequirementUnmet,
                                ];
                                assert!(
                                    allowed.contains(&a.code()),
                                    "seed {seed} {name}: unexpected error {a}"
                                );
                                *refused.entry(format!("{:?}", a.code())).or_default() += 1;
                                continue;
                            }
                            (a, b) => panic!("seed {seed} {name}: untraced {a:?}, traced {b:?}"),
                        };
                        assert_eq!(untraced.indices, traced.indices, "seed {seed} {name}");
                        let report = traced.report.as_ref().expect("report");
                        if let Err(why) = check_run(
                            &input,
                            slicer.as_ref(),
                            o,
                            &traced.indices,
                            &traced.reasons,
                            report,
                        ) {
                            panic!("seed {seed} {name} {o:?}: {why}");
                        }
                        *ran.entry(name).or_default() += 1;
                    }
                }
            }
        }
    }
    println!("{runs} runs; checked per slicer: {ran:?}; refused as expected: {refused:?}");
    for (name, count) in &ran {
        assert!(
            *count as u64 >= cases * 6,
            "{name}: only {count} successful runs"
        );
    }
}
