//! Differential tests against the reference crate `cupel` 1.2.0 (a dev-dependency): the
//! same random inputs through both implementations, compared by content (contents are
//! unique in every case).
//!
//! Greedy, Knapsack and Quota must agree on the output **order**. The count-quota slicers
//! must agree on the selected **set**; their Phase 1 order differs by design (D10: entries in
//! configuration order here, kinds in folded-name order in the crate).

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{ContextKind, ScoredItem};
use crate::slicer::test_support::{budget, CountCase, Fixture};
use crate::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaSlice, GreedySlice, KnapsackSlice, QuotaEntry,
    QuotaSlice, ScarcityBehavior, Slicer,
};
use crate::testutil::Rng;

const BUCKETS: [i64; 3] = [1, 10, 100];

fn reference_items(items: &[ScoredItem<'_>]) -> Vec<cupel::ScoredItem> {
    items
        .iter()
        .map(|s| cupel::ScoredItem {
            item: cupel::ContextItemBuilder::new(s.item.content(), s.item.tokens())
                .kind(cupel::ContextKind::new(s.item.kind().as_str()).unwrap())
                .build()
                .unwrap(),
            score: s.score,
        })
        .collect()
}

fn reference_budget(target: i64) -> cupel::ContextBudget {
    cupel::ContextBudget::new(target, target, 0, HashMap::new(), 0.0).unwrap()
}

fn ours(slicer: &dyn Slicer, items: &[ScoredItem<'_>], target: i64) -> Vec<String> {
    let out = slicer.slice(items, &budget(target)).unwrap();
    out.selected
        .iter()
        .map(|&p| items[p].item.content().to_string())
        .collect()
}

fn theirs(slicer: &dyn cupel::Slicer, items: &[cupel::ScoredItem], target: i64) -> Vec<String> {
    let out = slicer.slice(items, &reference_budget(target)).unwrap();
    out.iter().map(|i| i.content().to_string()).collect()
}

fn random_items(rng: &mut Rng) -> Vec<(String, i64, String, f64)> {
    const KINDS: [&str; 5] = ["a", "A", "b", "c", "Doc"];
    const SCORES: [f64; 5] = [0.1, 0.5, 0.57, 0.3, 0.0];
    let n = rng.below(20) as usize;
    (0..n)
        .map(|i| {
            let tokens = if rng.chance(0.1) {
                0
            } else {
                rng.range(1, 200)
            };
            let score = if rng.chance(0.5) {
                *rng.pick(&SCORES)
            } else {
                rng.unit()
            };
            (format!("i{i}"), tokens, rng.pick(&KINDS).to_string(), score)
        })
        .collect()
}

/// Random quota entries (distinct kinds, requires summing to at most 100) for both crates.
fn random_quota_entries(rng: &mut Rng) -> (Vec<QuotaEntry>, Vec<cupel::QuotaEntry>) {
    let (mut mine, mut reference) = (Vec::new(), Vec::new());
    let mut left = 100.0;
    for kind in ["a", "B", "ghost"] {
        if rng.chance(0.5) {
            let require = (rng.unit() * left).floor();
            let cap = require + (rng.unit() * (100.0 - require)).floor();
            left -= require;
            mine.push(QuotaEntry::new(ContextKind::new(kind).unwrap(), require, cap).unwrap());
            let kind = cupel::ContextKind::new(kind).unwrap();
            reference.push(cupel::QuotaEntry::new(kind, require, cap).unwrap());
        }
    }
    (mine, reference)
}

#[test]
fn greedy_knapsack_and_quota_match_the_crate_in_order() {
    for seed in 0..1500u64 {
        let mut rng = Rng::new(seed);
        let fx = Fixture::from_owned(&random_items(&mut rng));
        let items = fx.scored();
        let reference = reference_items(&items);
        let target = rng.range(0, 1500);
        let q = *rng.pick(&BUCKETS);

        let want = theirs(&cupel::GreedySlice, &reference, target);
        assert_eq!(
            ours(&GreedySlice::new(), &items, target),
            want,
            "greedy seed {seed}"
        );

        let knapsack = KnapsackSlice::new(q).unwrap();
        let want = theirs(&cupel::KnapsackSlice::new(q).unwrap(), &reference, target);
        assert_eq!(
            ours(&knapsack, &items, target),
            want,
            "knapsack seed {seed}"
        );

        let (mine, their_entries) = random_quota_entries(&mut rng);
        let (inner, their_inner): (Arc<dyn Slicer>, Box<dyn cupel::Slicer>) = if rng.chance(0.5) {
            (
                Arc::new(knapsack),
                Box::new(cupel::KnapsackSlice::new(q).unwrap()),
            )
        } else {
            (Arc::new(GreedySlice::new()), Box::new(cupel::GreedySlice))
        };
        let quota = QuotaSlice::new(mine, inner).unwrap();
        let their_quota = cupel::QuotaSlice::new(their_entries, their_inner).unwrap();
        let want = theirs(&their_quota, &reference, target);
        assert_eq!(ours(&quota, &items, target), want, "quota seed {seed}");
    }
}

#[test]
fn count_quota_slicers_match_the_crate_as_sets() {
    for seed in 0..1500u64 {
        let mut rng = Rng::new(seed);
        let mut case = CountCase::random(&mut rng);
        case.throw = false; // the crate never visits zero-candidate kinds (D10)
        if rng.chance(0.5) {
            case.entries.reverse(); // configuration order differs from folded-name order
        }
        let fx = Fixture::from_owned(&case.items);
        let items = fx.scored();
        let reference = reference_items(&items);
        let their_entries: Vec<cupel::CountQuotaEntry> = case
            .entries
            .iter()
            .map(|(k, r, c)| {
                let kind = cupel::ContextKind::new(k.clone()).unwrap();
                cupel::CountQuotaEntry::new(kind, *r, *c).unwrap()
            })
            .collect();
        let degrade = cupel::ScarcityBehavior::Degrade;
        let q = *rng.pick(&BUCKETS);

        let count = CountQuotaSlice::new(
            case.quota_entries(),
            Arc::new(GreedySlice::new()),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let their_count = cupel::CountQuotaSlice::new(
            their_entries.clone(),
            Box::new(cupel::GreedySlice),
            degrade,
        )
        .unwrap();
        let ccks = CountConstrainedKnapsackSlice::new(
            case.quota_entries(),
            KnapsackSlice::new(q).unwrap(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let their_knapsack = cupel::KnapsackSlice::new(q).unwrap();
        let their_ccks =
            cupel::CountConstrainedKnapsackSlice::new(their_entries, their_knapsack, degrade)
                .unwrap();
        let pairs: [(&dyn Slicer, &dyn cupel::Slicer); 2] =
            [(&count, &their_count), (&ccks, &their_ccks)];
        let commits = committed_count(&case, &items);
        for (mine, reference_slicer) in pairs {
            let mut got = ours(mine, &items, case.target);
            let mut want = theirs(reference_slicer, &reference, case.target);
            // Phase 2 survivors come after the commits, in the same order in both.
            assert_eq!(
                got.get(commits..),
                want.get(commits..),
                "seed {seed}, {mine:?}"
            );
            got.sort();
            want.sort();
            assert_eq!(got, want, "seed {seed}, {mine:?}");
        }
    }
}

/// How many items Phase 1 commits: `min(require, candidates)` summed over the entries.
fn committed_count(case: &CountCase, items: &[ScoredItem<'_>]) -> usize {
    if items.is_empty() || case.target <= 0 {
        return 0;
    }
    case.entries
        .iter()
        .map(|(kind, require, _)| {
            let available = items.iter().filter(|s| s.item.kind().matches(kind)).count();
            (*require).min(available)
        })
        .sum()
}
