//! Group 2: every slicer, on random sorted scored lists and effective budgets, against the crate's
//! slicer of the same configuration. The selected set must match; Greedy, Knapsack and Quota must
//! also match the crate's output order, the count-quota slicers their order after the Phase 1
//! commits (Phase 1 itself is ordered differently by design, decision D10 in docs/decisions.md).

use ctxpack::slicer::SliceOutcome;
use ctxpack::{Error, ScoredItem};

use crate::both::{both_all, id_of, Both};
use crate::check::same;
use crate::gen::{self, BudgetSpec, ItemProfile, ItemSpec, SlicerSpec};
use crate::harness::{verify, Case, HasItems};
use crate::reference::{count_expectation, CountExpectation};

/// One slicer case: a configuration, a sorted scored list and an effective budget.
#[derive(Debug, Clone)]
struct SliceCase {
    slicer: SlicerSpec,
    budget: BudgetSpec,
    items: Vec<ItemSpec>,
}

impl HasItems for SliceCase {
    fn items_mut(&mut self) -> &mut Vec<ItemSpec> {
        &mut self.items
    }
}

/// Generates and checks one case.
pub fn case(c: &Case) -> Result<(), String> {
    let mut rng = c.rng();
    let mut slicer = gen::slicer(&mut rng, false);
    let mut profile = ItemProfile::SLICING.sometimes_large(&mut rng);
    if !matches!(slicer, SlicerSpec::Ccks(..)) && rng.chance(0.3) {
        // Identity is the position: repeated contents must not confuse a slicer. (The
        // crate's CCKS looks scores up by content, 04 §7.2 rule 3, so it gets none.)
        profile = profile.with_duplicates(0.3);
    }
    let mut items = gen::items(&mut rng, &profile);
    for item in &mut items {
        item.score = gen::score(&mut rng);
    }
    gen::sort_by_score(&mut items);
    let budget = gen::slice_budget(&mut rng, &items);
    gen::fit_tables(&mut slicer, items.len(), budget.target);
    let spec = SliceCase {
        slicer,
        budget,
        items,
    };
    verify(spec, check)
}

/// Slices in both libraries and compares.
fn check(spec: &SliceCase) -> Result<(), String> {
    let (ours, theirs) = spec.slicer.both();
    let (our_items, their_items) = both_all(&spec.items);
    let (our_budget, their_budget) = spec.budget.both();
    let our_scored: Vec<ScoredItem> = our_items
        .iter()
        .zip(&spec.items)
        .map(|(item, s)| ScoredItem {
            item,
            score: s.score,
        })
        .collect();
    let their_scored: Vec<cupel::ScoredItem> = their_items
        .into_iter()
        .zip(&spec.items)
        .map(|(item, s)| cupel::ScoredItem {
            item,
            score: s.score,
        })
        .collect();
    let kinds: Vec<&str> = spec.items.iter().map(ItemSpec::kind_str).collect();
    let expect = count_expectation(&spec.slicer, &kinds, spec.budget.target);
    let got = ours.slice(&our_scored, &our_budget);
    if let Some(short) = &expect.throws {
        return expect_unmet(got, short);
    }
    let got = got.map_err(|e| format!("ctxpack slicer failed: {e}"))?;
    let want: Vec<usize> = theirs
        .slice(&their_scored, &their_budget)
        .map_err(|e| format!("cupel slicer failed: {e}"))?
        .iter()
        .map(id_of)
        .collect();
    let commits = committed_count(&spec.slicer, &kinds, spec.budget.target);
    compare(
        &spec.slicer,
        &want,
        &got,
        &expect,
        spec.items.len(),
        commits,
    )
}

/// How many items Phase 1 of a count-quota slicer commits: `min(require, candidates)`
/// summed over the entries (none for an empty input or a target `<= 0`).
fn committed_count(slicer: &SlicerSpec, kinds: &[&str], target: i64) -> usize {
    let Some((entries, _)) = slicer.count_entries() else {
        return 0;
    };
    if kinds.is_empty() || target <= 0 {
        return 0;
    }
    entries
        .iter()
        .map(|&(kind, required, _)| {
            let found = kinds
                .iter()
                .filter(|k| k.eq_ignore_ascii_case(kind))
                .count();
            required.min(found)
        })
        .sum()
}

/// Compares a ctxpack outcome with the crate's selection (input positions). Greedy, Knapsack and
/// Quota must agree on the output order; the count-quota slicers on the set and on the order after
/// the `commits` Phase 1 items (Phase 1 walks the entries in configuration order here, the kinds in
/// folded-name order in the crate: decision D10 in docs/decisions.md).
fn compare(
    slicer: &SlicerSpec,
    want: &[usize],
    got: &SliceOutcome,
    expect: &CountExpectation,
    len: usize,
    commits: usize,
) -> Result<(), String> {
    let mut seen = vec![false; len];
    for &p in &got.selected {
        if p >= len || std::mem::replace(&mut seen[p], true) {
            return Err(format!(
                "selected positions out of range or repeated: {:?}",
                got.selected
            ));
        }
    }
    if slicer.count_entries().is_some() {
        same(
            "selection after the Phase 1 commits, in output order",
            &want.get(commits..),
            &got.selected.get(commits..),
        )?;
    } else {
        same("selection in output order", &want.to_vec(), &got.selected)?;
    }
    same("selected set", &sorted(want), &sorted(&got.selected))?;
    same("shortfalls", &expect.shortfalls, &got.shortfalls)?;
    if slicer.count_entries().is_none() {
        same(
            "cap exclusions of a slicer without caps",
            &Vec::new(),
            &got.cap_excluded,
        )?;
    } else if let Some(p) = got
        .cap_excluded
        .iter()
        .find(|p| seen.get(**p).copied().unwrap_or(true))
    {
        return Err(format!(
            "cap-excluded position {p} is out of range or also selected"
        ));
    }
    Ok(())
}

/// Under Throw, ctxpack walks the configured entries in order (decision D10 in docs/decisions.md)
/// and fails on the first short one, naming it with the entry's spelling.
fn expect_unmet(
    got: ctxpack::Result<SliceOutcome>,
    short: &ctxpack::diagnostics::CountRequirementShortfall,
) -> Result<(), String> {
    match got {
        Err(Error::CountRequirementUnmet {
            kind,
            satisfied,
            required,
            ..
        }) => same(
            "CountRequirementUnmet (kind, satisfied, required)",
            &(
                short.kind.clone(),
                short.satisfied_count,
                short.required_count,
            ),
            &(kind, satisfied, required),
        ),
        other => Err(format!(
            "expected CountRequirementUnmet for {short:?}, got {other:?}"
        )),
    }
}

fn sorted(xs: &[usize]) -> Vec<usize> {
    let mut v = xs.to_vec();
    v.sort_unstable();
    v
}
