//! Exhaustive and property checks of item variants (`docs/variants.md`).
//!
//! * The knapsack's multiple-choice optimum against brute force: every input of up to 10
//!   items with up to 3 forms each, with and without groups, every assignment of "left
//!   out" or one level to every unit tried. The levels themselves are recomputed here from
//!   the items by an independent (quadratic) dominance rule.
//! * Greedy's rule, replayed independently: units by full-form density, each at the richest
//!   level that fits the room left.
//! * Whole pipeline runs over every built-in slicer × placer × deduplication × overflow
//!   strategy on random items with variants, groups, pinned items and zero-token forms: at
//!   most one form per item, only kept forms, one level per group, budget and caps kept,
//!   reasons consistent with the forms, traced and untraced runs equal, and the variants
//!   turned off giving exactly the run without them.
//!
//! `CTXPACK_VARIANT_CASES` scales the number of generated inputs (default 1).

#[path = "common/rng.rs"]
mod rng;

use std::collections::BTreeMap;
use std::sync::Arc;

use ctxpack::diagnostics::{InclusionReason, TraceDetail};
use ctxpack::model::{GroupValue, Units};
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::scorer::ReflexiveScorer;
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, SliceOutcome, Slicer,
};
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, ErrorCode, OverflowStrategy, Pipeline, RunOptions,
    ScoredItem,
};

use rng::Rng;

fn scale() -> u64 {
    std::env::var("CTXPACK_VARIANT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

const QUALITIES: [f64; 6] = [1.0, 0.9, 0.75, 0.5, 0.25, 0.05];
const KINDS: [&str; 3] = ["Message", "ToolOutput", "Document"];

/// The kept forms of `item` by the definition: form `f` is dropped when another form `g`
/// has no more tokens and at least its quality and is strictly better in one or comes
/// first; the full form always stays. Richest (most tokens) first.
fn kept_by_definition(item: &ContextItem) -> Vec<usize> {
    let n = item.form_count();
    let (t, q) = (|f| item.form_tokens(f), |f| item.form_quality(f));
    let mut kept: Vec<usize> = (0..n)
        .filter(|&f| {
            f == 0
                || !(0..n).any(|g| {
                    g != f && t(g) <= t(f) && q(g) >= q(f) && (t(g) < t(f) || q(g) > q(f) || g < f)
                })
        })
        .collect();
    kept.sort_by_key(|&f| std::cmp::Reverse(t(f)));
    kept
}

/// One unit's levels, recomputed: (tokens, value, form of each member).
struct Level {
    tokens: i64,
    value: f64,
    forms: Vec<usize>,
}

fn levels_by_definition(items: &[ScoredItem<'_>], members: &[u32], mode: GroupValue) -> Vec<Level> {
    let kept: Vec<Vec<usize>> = members
        .iter()
        .map(|&m| kept_by_definition(items[m as usize].item))
        .collect();
    let count = kept.iter().map(Vec::len).max().unwrap_or(1);
    (0..count)
        .map(|l| {
            let forms: Vec<usize> = kept.iter().map(|k| k[l.min(k.len() - 1)]).collect();
            let tokens = members
                .iter()
                .zip(&forms)
                .map(|(&m, &f)| items[m as usize].item.form_tokens(f))
                .sum();
            let value = mode.of(members.iter().zip(&forms).map(|(&m, &f)| {
                let s = &items[m as usize];
                s.score * s.item.form_quality(f)
            }));
            Level {
                tokens,
                value,
                forms,
            }
        })
        .collect()
}

/// Knapsack value of a level value: `max(0, floor(v × 10000))`.
fn scaled(v: f64) -> i64 {
    ((v * 10000.0).floor() as i64).max(0)
}

/// Random items for the slicer-level checks: `n` items with up to 2 variants each, some
/// grouped.
fn random_items(
    rng: &mut Rng,
    n: usize,
    grouped: bool,
    bucket: i64,
) -> (Vec<ContextItem>, Vec<f64>) {
    let mut items = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    for i in 0..n {
        let tokens = |rng: &mut Rng| match rng.below(10) {
            0 => 0,
            _ => rng.range(1, 3 * bucket + 30),
        };
        let mut b = ContextItem::builder(format!("item {i}"), tokens(rng));
        for v in 0..rng.below(3) {
            b = b.variant(
                format!("item {i} form {}", v + 1),
                tokens(rng),
                *rng.pick(&QUALITIES),
            );
        }
        if grouped && rng.chance(0.6) {
            b = b.group(format!("g{}", rng.below(1 + n / 4)));
        }
        items.push(b.build().unwrap());
        scores.push(match rng.below(10) {
            0 => 0.0,
            1 => -0.25,
            _ => (1 + rng.below(20)) as f64 / 20.0,
        });
    }
    (items, scores)
}

/// Best total value of picking at most one level per unit within `cap` buckets; units
/// whose full level has no tokens are always in. Counts the assignments tried.
fn brute_force(units: &[Vec<(i64, i64)>], cap: i64, tried: &mut u64) -> i64 {
    fn go(units: &[Vec<(i64, i64)>], i: usize, room: i64, value: i64, tried: &mut u64) -> i64 {
        if i == units.len() {
            *tried += 1;
            return value;
        }
        let mut best = i64::MIN;
        for &(w, v) in &units[i] {
            if w <= room {
                best = best.max(go(units, i + 1, room - w, value.saturating_add(v), tried));
            }
        }
        best.max(go(units, i + 1, room, value, tried))
    }
    go(units, 0, cap, 0, tried)
}

#[test]
fn knapsack_finds_the_multiple_choice_optimum_exhaustively() {
    const BUCKETS: [i64; 4] = [1, 2, 5, 10];
    let (mut cases, mut tried, mut downgrades, mut grouped_cases) = (0u64, 0u64, 0u64, 0u64);
    for seed in 0..6000 * scale() {
        let mut rng = Rng::new(seed);
        let q = *rng.pick(&BUCKETS);
        let n = rng.below(11);
        let grouped = seed % 2 == 1;
        let (items, scores) = random_items(&mut rng, n, grouped, q);
        let mode = *rng.pick(&GroupValue::ALL);
        let scored: Vec<ScoredItem> = items
            .iter()
            .zip(&scores)
            .map(|(item, &score)| ScoredItem { item, score })
            .collect();
        let units = Units::new(&scored, mode).unwrap();
        let target = rng.range(1, 6 * q + 80);
        let cap = target / q;
        let weight = |t: i64| if t <= 0 { 0 } else { (t + q - 1) / q };
        // The units' levels, checked against the definition, as (weight, value) options.
        let mut options: Vec<Vec<(i64, i64)>> = Vec::new();
        let mut expected: Vec<Vec<Level>> = Vec::new();
        for u in 0..units.len() {
            let levels = levels_by_definition(&scored, units.members(u), mode);
            assert_eq!(units.level_count(u), levels.len(), "seed {seed} unit {u}");
            for (l, level) in levels.iter().enumerate() {
                // Without any variant the units have no levels (level 0 only): its tokens
                // are then the members' own.
                let tokens = units.level_tokens(u, l).unwrap_or_else(|| {
                    assert!(!units.has_levels() && l == 0);
                    let members = units.members(u).iter();
                    members.map(|&m| items[m as usize].tokens()).sum()
                });
                assert_eq!(tokens, level.tokens, "seed {seed}");
                assert_eq!(units.level_value(u, l).to_bits(), level.value.to_bits());
                for (&m, &f) in units.members(u).iter().zip(&level.forms) {
                    assert_eq!(units.form_at(m as usize, l), f, "seed {seed}");
                }
            }
            options.push(
                levels
                    .iter()
                    .map(|l| (weight(l.tokens), scaled(l.value)))
                    .collect(),
            );
            expected.push(levels);
        }
        let slicer = KnapsackSlice::new(q).unwrap();
        let out = slicer
            .slice_grouped(
                &scored,
                &units,
                &ContextBudget::new(target, target).unwrap(),
            )
            .unwrap();
        // Validity: every unit at most once, whole, at one level: the lowest level at which
        // each member has its form, the highest of these over the members, gives every
        // member its form.
        let mut level_of: BTreeMap<usize, usize> = BTreeMap::new();
        let mut seen = vec![false; n];
        for (i, &p) in out.selected.iter().enumerate() {
            assert!(
                !std::mem::replace(&mut seen[p], true),
                "seed {seed}: {p} twice"
            );
            let u = units.unit_of(p);
            let f = out.form(i);
            let k = units
                .members(u)
                .iter()
                .position(|&m| m as usize == p)
                .unwrap();
            let l = expected[u]
                .iter()
                .position(|lv| lv.forms[k] == f)
                .unwrap_or_else(|| panic!("seed {seed}: form {f} of {p} is no level"));
            let level = level_of.entry(u).or_insert(l);
            *level = (*level).max(l);
        }
        for (i, &p) in out.selected.iter().enumerate() {
            let level = level_of[&units.unit_of(p)];
            assert_eq!(
                units.form_at(p, level),
                out.form(i),
                "seed {seed}: not one level"
            );
        }
        for &u in level_of.keys() {
            assert!(
                units.members(u).iter().all(|&m| seen[m as usize]),
                "seed {seed}: partial"
            );
        }
        // Zero-token units, and units with a zero-token level, are always in.
        for (u, levels) in expected.iter().enumerate() {
            let has_free = levels.iter().any(|l| l.tokens == 0);
            assert!(
                !has_free || level_of.contains_key(&u),
                "seed {seed}: unit {u} left out"
            );
        }
        let chosen_weight: i64 = level_of.iter().map(|(&u, &l)| options[u][l].0).sum();
        let chosen_value: i64 = level_of.iter().map(|(&u, &l)| options[u][l].1).sum();
        assert!(chosen_weight <= cap, "seed {seed}: {chosen_weight} > {cap}");
        let best = brute_force(&options, cap, &mut tried);
        assert_eq!(chosen_value, best, "seed {seed}: q {q} target {target}");
        downgrades += level_of.values().filter(|&&l| l > 0).count() as u64;
        grouped_cases += u64::from(!units.all_single());
        cases += 1;
    }
    println!(
        "knapsack over levels: {cases} inputs ({grouped_cases} with groups), {tried} \
         assignments tried, {downgrades} units chosen below their full level"
    );
    assert!(
        downgrades > 2000 && grouped_cases > 1500,
        "{downgrades} {grouped_cases}"
    );
}

#[test]
fn greedy_takes_units_by_full_density_at_their_richest_fitting_level() {
    let mut downgrades = 0;
    for seed in 0..3000 * scale() {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let n = rng.below(16);
        let (items, scores) = random_items(&mut rng, n, seed % 2 == 0, 20);
        let scored: Vec<ScoredItem> = items
            .iter()
            .zip(&scores)
            .map(|(item, &score)| ScoredItem { item, score })
            .collect();
        let mode = *rng.pick(&GroupValue::ALL);
        let units = Units::new(&scored, mode).unwrap();
        let target = rng.range(1, 200);
        let out = GreedySlice::new()
            .slice_grouped(
                &scored,
                &units,
                &ContextBudget::new(target, target).unwrap(),
            )
            .unwrap();
        // Replay: density of the full level (zero tokens first), ties by unit order.
        let levels: Vec<Vec<Level>> = (0..units.len())
            .map(|u| levels_by_definition(&scored, units.members(u), mode))
            .collect();
        let density = |u: usize| match levels[u][0].tokens {
            0 => f64::MAX,
            t => levels[u][0].value / t as f64,
        };
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_by(|&a, &b| density(b).total_cmp(&density(a)).then(a.cmp(&b)));
        let mut room = target;
        let mut expected: Vec<(usize, usize)> = Vec::new();
        for u in order {
            if let Some(l) = levels[u]
                .iter()
                .position(|l| l.tokens == 0 || l.tokens <= room)
            {
                room -= levels[u][l].tokens;
                for (&m, &f) in units.members(u).iter().zip(&levels[u][l].forms) {
                    expected.push((m as usize, f));
                }
                downgrades += usize::from(l > 0);
            }
        }
        let got: Vec<(usize, usize)> = out
            .selected
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, out.form(i)))
            .collect();
        assert_eq!(got, expected, "seed {seed}");
    }
    assert!(downgrades > 1000, "{downgrades}");
}

/// A generated pipeline input.
struct Input {
    items: Vec<ContextItem>,
    budget: ContextBudget,
}

fn generate(rng: &mut Rng) -> Input {
    let n = rng.below(24);
    let shared = ["ok", "same", "{}"];
    let mut items = Vec::with_capacity(n);
    for i in 0..n {
        let content = if rng.chance(0.2) {
            rng.pick(&shared).to_string()
        } else {
            format!("item {i}")
        };
        let tokens = match rng.below(20) {
            0 => 0,
            1 => -rng.range(1, 9),
            _ => rng.range(1, 150),
        };
        let mut b = ContextItem::builder(content, tokens)
            .future_relevance_hint((rng.below(9) as f64) / 8.0)
            .kind(ContextKind::new(*rng.pick(&KINDS)).unwrap())
            .pinned(rng.chance(0.05));
        if rng.chance(0.8) {
            b = b.timestamp(rng.range(0, 40));
        }
        for v in 0..rng.below(3) {
            let t = match rng.below(8) {
                0 => 0,
                _ => rng.range(0, 160),
            };
            b = b.variant(format!("item {i} v{v}"), t, *rng.pick(&QUALITIES));
        }
        if rng.chance(0.3) {
            b = b.group(format!("g{}", rng.below(1 + n / 4)));
        }
        items.push(b.build().unwrap());
    }
    let target = rng.range(0, 500);
    let max = target + rng.range(0, 100);
    let budget = ContextBudget::new(max, target).unwrap();
    Input { items, budget }
}

/// Selects every item in full, whatever the budget (so that Truncate has work to do).
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

fn slicers() -> Vec<(&'static str, Arc<dyn Slicer>)> {
    let kind = |k: &str| ContextKind::new(k).unwrap();
    let count = |r, c| CountQuotaEntry::new(kind("ToolOutput"), r, c).unwrap();
    vec![
        ("all", Arc::new(All)),
        ("greedy", Arc::new(GreedySlice::new())),
        ("knapsack", Arc::new(KnapsackSlice::new(7).unwrap())),
        (
            "quota",
            Arc::new(
                QuotaSlice::new(
                    vec![QuotaEntry::new(kind("Document"), 10.0, 40.0).unwrap()],
                    Arc::new(GreedySlice::new()),
                )
                .unwrap(),
            ),
        ),
        (
            "count-quota",
            Arc::new(
                CountQuotaSlice::new(
                    vec![count(2, 3)],
                    Arc::new(GreedySlice::new()),
                    ScarcityBehavior::Degrade,
                )
                .unwrap(),
            ),
        ),
        (
            "count-knapsack",
            Arc::new(
                CountConstrainedKnapsackSlice::new(
                    vec![count(2, 3)],
                    KnapsackSlice::new(5).unwrap(),
                    ScarcityBehavior::Degrade,
                )
                .unwrap(),
            ),
        ),
    ]
}

fn build(
    slicer: &Arc<dyn Slicer>,
    placer: Arc<dyn Placer>,
    dedup: bool,
    overflow: OverflowStrategy,
    variants: bool,
) -> Pipeline {
    Pipeline::builder()
        .scorer(Arc::new(ReflexiveScorer::new()))
        .slicer(slicer.clone())
        .placer(placer)
        .deduplication(dedup)
        .overflow_strategy(overflow)
        .use_variants(variants)
        .build()
        .unwrap()
}

#[test]
fn every_slicer_and_placer_keeps_the_rules_of_variants() {
    let placers: [fn() -> Arc<dyn Placer>; 2] = [
        || Arc::new(ChronologicalPlacer::new()),
        || Arc::new(UShapedPlacer::new()),
    ];
    let strategies = [
        OverflowStrategy::Throw,
        OverflowStrategy::Truncate,
        OverflowStrategy::Proceed,
    ];
    let (mut runs, mut downgraded, mut truncated) = (0u64, 0u64, 0u64);
    for seed in 0..400 * scale() {
        let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9));
        let input = generate(&mut rng);
        let items = &input.items;
        for (name, slicer) in slicers() {
            for placer in placers {
                for dedup in [true, false] {
                    for overflow in strategies {
                        let p = build(&slicer, placer(), dedup, overflow, true);
                        let context = format!("seed {seed} {name} dedup {dedup} {overflow:?}");
                        let traced = p.run_with(
                            items,
                            &input.budget,
                            &RunOptions {
                                trace: TraceDetail::Item,
                                on_overflow: None,
                            },
                        );
                        let plain = p.run(items, &input.budget);
                        let s = match (plain, traced) {
                            (Ok(s), Ok(t)) => {
                                assert_eq!(
                                    (&s.indices, &s.forms, &s.reasons),
                                    (&t.indices, &t.forms, &t.reasons),
                                    "{context}"
                                );
                                s
                            }
                            (Err(a), Err(b)) => {
                                assert_eq!(a, b, "{context}");
                                assert!(
                                    matches!(
                                        a.code(),
                                        ErrorCode::Overflow | ErrorCode::PinnedExceedsBudget
                                    ),
                                    "{context}: {a}"
                                );
                                continue;
                            }
                            (a, b) => panic!("{context}: {a:?} vs {b:?}"),
                        };
                        runs += 1;
                        check_forms(items, &s, &context);
                        check_budget(items, &s, &input.budget, overflow, name, &context);
                        for r in &s.reasons {
                            if let InclusionReason::Downgraded { cause, .. } = r {
                                downgraded += 1;
                                truncated += u64::from(cause.name() == "Truncated");
                            }
                        }
                        // Off, the variants change nothing: the run is the run without them.
                        if seed % 4 == 0 {
                            let off = build(&slicer, placer(), dedup, overflow, false);
                            let stripped = strip(items);
                            let a = off
                                .run(items, &input.budget)
                                .map(|s| (s.indices, s.reasons));
                            let b = build(&slicer, placer(), dedup, overflow, true)
                                .run(&stripped, &input.budget)
                                .map(|s| (s.indices, s.reasons));
                            assert_eq!(a, b, "{context}: variants off");
                        }
                    }
                }
            }
        }
    }
    println!("{runs} runs, {downgraded} items placed downgraded ({truncated} by Truncate)");
    assert!(
        runs > 10_000 && downgraded > 2_000 && truncated > 20,
        "{runs} {downgraded} {truncated}"
    );
}

/// The items without their variants.
fn strip(items: &[ContextItem]) -> Vec<ContextItem> {
    items
        .iter()
        .map(|i| {
            let mut b = ContextItem::builder(i.content(), i.tokens())
                .kind(i.kind().clone())
                .pinned(i.pinned());
            if let Some(h) = i.future_relevance_hint() {
                b = b.future_relevance_hint(h);
            }
            if let Some(t) = i.timestamp() {
                b = b.timestamp(t);
            }
            if let Some(g) = i.group() {
                b = b.group(g);
            }
            b.build().unwrap()
        })
        .collect()
}

/// One form per placed item, a kept one; pinned items in full; the members of a group at
/// one level; reasons consistent with the forms.
fn check_forms(items: &[ContextItem], s: &ctxpack::Selection, context: &str) {
    let has_variants = items.iter().any(|i| i.has_variants() && !i.pinned());
    assert!(
        s.forms.is_empty() || s.forms.len() == s.indices.len(),
        "{context}"
    );
    let mut placed = vec![false; items.len()];
    let mut group_levels: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (rank, &i) in s.indices.iter().enumerate() {
        assert!(
            !std::mem::replace(&mut placed[i], true),
            "{context}: {i} twice"
        );
        let item = &items[i];
        let form = s.form(rank);
        let kept = kept_by_definition(item);
        let k = kept
            .iter()
            .position(|&f| f == form)
            .unwrap_or_else(|| panic!("{context}: item {i} placed as form {form}, not kept"));
        if item.pinned() {
            assert_eq!(form, 0, "{context}: pinned item {i} downgraded");
        }
        match s.reasons[rank] {
            InclusionReason::Downgraded {
                form: f,
                full_tokens,
                chosen_tokens,
                ..
            } => {
                assert!(form != 0 && f == form, "{context}");
                assert_eq!(
                    (full_tokens, chosen_tokens),
                    (item.tokens(), item.form_tokens(form))
                );
            }
            _ => assert_eq!(form, 0, "{context}: item {i} below full without the reason"),
        }
        if let Some(g) = item.group() {
            // A member at kept index k < its last is at level k; at its last, at level >= k.
            let (lo, hi) = if k + 1 < kept.len() {
                (k, k)
            } else {
                (k, usize::MAX)
            };
            let entry = group_levels.entry(g).or_insert((0, usize::MAX));
            *entry = (entry.0.max(lo), entry.1.min(hi));
            assert!(entry.0 <= entry.1, "{context}: group {g} not at one level");
        }
    }
    if !has_variants {
        assert!(s.forms.iter().all(|&f| f == 0), "{context}");
    }
}

/// The placed forms' tokens fit: under Throw and Truncate the target (or the pinned items
/// alone, when they exceed it); for the slicers that never overshoot, the effective target
/// for the non-pinned items under Proceed too; count caps kept.
fn check_budget(
    items: &[ContextItem],
    s: &ctxpack::Selection,
    budget: &ContextBudget,
    overflow: OverflowStrategy,
    slicer: &str,
    context: &str,
) {
    let tokens = |rank: usize| s.tokens(items, rank);
    let is_pinned = |rank: usize| s.reasons[rank] == InclusionReason::Pinned;
    let total: i64 = (0..s.indices.len()).map(tokens).sum();
    let pinned: i64 = (0..s.indices.len())
        .filter(|&r| is_pinned(r))
        .map(tokens)
        .sum();
    let target = budget.target_tokens();
    if overflow != OverflowStrategy::Proceed {
        assert!(total <= target.max(pinned), "{context}: {total} > {target}");
    }
    let sliced: i64 = (0..s.indices.len())
        .filter(|&r| !is_pinned(r))
        .map(tokens)
        .sum();
    if !slicer.starts_with("count") && slicer != "all" && overflow == OverflowStrategy::Proceed {
        assert!(
            sliced <= budget.effective(pinned).target_tokens().max(0),
            "{context}"
        );
    }
    if slicer.starts_with("count") {
        let tools = s
            .indices
            .iter()
            .zip(&s.reasons)
            .filter(|(&i, r)| {
                **r != InclusionReason::Pinned && items[i].kind().as_str() == "ToolOutput"
            })
            .count();
        assert!(tools <= 3, "{context}: {tools} tool outputs over the cap");
    }
}
