//! The pair-split sweep of the item-group issue, on the bundled agent transcript
//! (`examples/data/agent.jsonl`: 46 items, 9 tool-call groups of 2 or 3 items).
//!
//! For every preset and each of 71 budgets (target = max = 30 %, 31 %, …, 100 % of the
//! transcript's tokens), the transcript is selected twice: once with its group keys
//! removed (what a caller without groups gets) and once as written. A group check counts
//! as split when some but not all of its members are placed, or when its placed members do
//! not follow one another in input order (a provider rejects both). With the keys removed
//! calls and results are split; with them, never.
//!
//! `cargo test --release --test groups_sweep -- --nocapture` prints the table the README
//! quotes.

#[path = "common/groups.rs"]
mod groups;

use ctxpack::model::read_items;
use ctxpack::policy::Preset;
use ctxpack::{ContextBudget, ContextItem};

use groups::{check_whole_and_adjacent, groups_of};

const TRANSCRIPT: &str = include_str!("../examples/data/agent.jsonl");

/// Split counts of one preset: (runs, group checks, missing a member, out of order).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Splits {
    runs: usize,
    checks: usize,
    missing: usize,
    scattered: usize,
}

impl Splits {
    fn total(&self) -> usize {
        self.missing + self.scattered
    }
}

/// The same items without their group keys.
fn without_groups(items: &[ContextItem]) -> Vec<ContextItem> {
    items
        .iter()
        .map(|it| {
            let mut b = ContextItem::builder(it.content(), it.tokens())
                .kind(it.kind().clone())
                .source(it.source().clone())
                .tags(it.tags())
                .pinned(it.pinned());
            if let Some(t) = it.timestamp() {
                b = b.timestamp(t);
            }
            b.build().unwrap()
        })
        .collect()
}

/// Runs the 71 budgets for `preset` on `items`, checking the groups of `grouped` (the
/// transcript as written; `items` may be the same items without keys).
fn sweep(preset: Preset, items: &[ContextItem], grouped: &[ContextItem]) -> Splits {
    let pipeline = preset.policy().build_pipeline().unwrap();
    let total: i64 = items.iter().map(ContextItem::tokens).sum();
    let groups = groups_of(grouped);
    let mut splits = Splits::default();
    for percent in 30..=100 {
        let target = total * percent / 100;
        let budget = ContextBudget::new(target, target).unwrap();
        let selection = pipeline.run(items, &budget).unwrap();
        let mut rank = vec![None; items.len()];
        for (r, &i) in selection.indices.iter().enumerate() {
            rank[i] = Some(r);
        }
        splits.runs += 1;
        for members in groups.values() {
            splits.checks += 1;
            let ranks: Vec<Option<usize>> = members.iter().map(|&m| rank[m]).collect();
            let placed = ranks.iter().flatten().count();
            if placed != 0 && placed != members.len() {
                splits.missing += 1;
            } else if placed == members.len()
                && ranks.windows(2).any(|w| w[1] != w[0].map(|r| r + 1))
            {
                splits.scattered += 1;
            }
        }
        if items.iter().any(ContextItem::has_group) {
            check_whole_and_adjacent(items, &selection.indices).unwrap();
        }
    }
    splits
}

#[test]
fn no_budget_splits_a_tool_call_from_its_result() {
    let grouped = read_items(TRANSCRIPT).unwrap();
    let plain = without_groups(&grouped);
    assert_eq!(grouped.len(), 46);
    assert_eq!(groups_of(&grouped).len(), 9);
    println!("| preset | group checks | split without groups (missing + out of order) | split with groups |");
    println!("|---|---:|---:|---:|");
    let (mut before, mut after, mut checks) = (0, 0, 0);
    for preset in Preset::ALL {
        let b = sweep(preset, &plain, &grouped);
        let a = sweep(preset, &grouped, &grouped);
        assert_eq!((a.runs, a.checks), (71, 639));
        println!(
            "| {} | {} | {} ({} + {}) | {} |",
            preset.name(),
            a.checks,
            b.total(),
            b.missing,
            b.scattered,
            a.total()
        );
        assert_eq!(a.total(), 0, "{preset:?} split a group: {a:?}");
        assert!(
            b.total() > 0,
            "{preset:?}: without groups nothing was split"
        );
        before += b.total();
        after += a.total();
        checks += a.checks;
    }
    println!("| all presets | {checks} | {before} | {after} |");
}
