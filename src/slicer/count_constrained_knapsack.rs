//! CountConstrainedKnapsackSlice (spec 04 §7): count quotas with a knapsack engine for
//! Phase 2 and a score re-sort before the caps.

use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem, Units};
use crate::slicer::count_common::CountQuotas;
use crate::slicer::shared::score_desc;
use crate::slicer::{CountQuotaEntry, KnapsackSlice, ScarcityBehavior, SliceOutcome, Slicer};

/// CountConstrainedKnapsackSlice: count quotas with a knapsack engine for Phase 2
/// (spec 04 §7).
///
/// Phases 1 and 3 are those of [`crate::slicer::CountQuotaSlice`]. Phase 2 runs the given
/// [`KnapsackSlice`] on the remaining items with `Budget(room, room)` and then re-sorts its
/// output stably by score descending (IEEE total order) before the caps are applied, so a
/// binding cap keeps the highest-scoring Phase 2 items. Among equal scores the knapsack
/// order is kept: zero-token items first (earliest first), then later input items first.
///
/// Scores are looked up by position. The reference implementations look them up by content,
/// which differs only when the remaining items repeat a content with different scores.
///
/// With groups (`docs/groups.md`), Phases 1 and 3 work on units as in CountQuotaSlice, the
/// knapsack is exact over units and the re-sort orders units by value, keeping each unit's
/// members together. With variants (`docs/variants.md`) the knapsack chooses levels and the
/// re-sort still ranks units by their full value.
///
/// A [`crate::Error::TableTooLarge`] from the knapsack propagates. It is not a
/// [`KnapsackSlice`] itself: CountQuotaSlice accepts it as an inner slicer.
#[derive(Debug, Clone)]
pub struct CountConstrainedKnapsackSlice {
    quotas: CountQuotas,
    knapsack: KnapsackSlice,
    scarcity: ScarcityBehavior,
}

impl CountConstrainedKnapsackSlice {
    /// Builds the slicer; fails only when two entries name the same kind under ASCII case folding
    /// (`invalid slicer configuration: duplicate entry for kind "<k>"`, decision D10 in
    /// docs/decisions.md).
    pub fn new(
        entries: Vec<CountQuotaEntry>,
        knapsack: KnapsackSlice,
        scarcity: ScarcityBehavior,
    ) -> Result<Self> {
        let quotas = CountQuotas::new(entries)?;
        Ok(Self {
            quotas,
            knapsack,
            scarcity,
        })
    }

    /// The entries, in configuration order.
    pub fn entries(&self) -> &[CountQuotaEntry] {
        self.quotas.entries()
    }

    /// The knapsack engine used in Phase 2.
    pub fn knapsack(&self) -> &KnapsackSlice {
        &self.knapsack
    }

    /// The scarcity behaviour.
    pub fn scarcity(&self) -> ScarcityBehavior {
        self.scarcity
    }

    /// Phase 2: the knapsack on the residual, re-sorted stably by score descending.
    fn knapsack_by_score(
        &self,
        rest: &[ScoredItem<'_>],
        room: &ContextBudget,
    ) -> Result<SliceOutcome> {
        let mut outcome = self.knapsack.slice(rest, room)?;
        outcome
            .selected
            .sort_by(|&a, &b| score_desc(rest[a].score, rest[b].score));
        Ok(outcome)
    }

    /// Phase 2 over units: the knapsack on the residual units, then the picked units
    /// re-sorted stably by unit value descending, each unit's members kept together.
    fn knapsack_units_by_value(
        &self,
        rest: &[ScoredItem<'_>],
        units: &Units,
        room: &ContextBudget,
    ) -> Result<SliceOutcome> {
        let mut outcome = self.knapsack.slice_grouped(rest, units, room)?;
        let mut picked: Vec<usize> = Vec::new();
        for &p in &outcome.selected {
            let u = units.unit_of(p);
            if picked.last() != Some(&u) {
                picked.push(u); // the knapsack lists each unit's members together
            }
        }
        picked.sort_by(|&a, &b| score_desc(units.value(a), units.value(b)));
        let forms_by_position: Vec<(usize, usize)> = outcome
            .forms
            .iter()
            .zip(&outcome.selected)
            .map(|(&f, &p)| (p, f))
            .collect();
        outcome.selected = units.expand(picked);
        if !forms_by_position.is_empty() {
            // Each member keeps the form the knapsack chose for it.
            let mut form_of = vec![0; rest.len()];
            for (p, f) in forms_by_position {
                form_of[p] = f;
            }
            outcome.forms = outcome.selected.iter().map(|&p| form_of[p]).collect();
        }
        Ok(outcome)
    }
}

impl Slicer for CountConstrainedKnapsackSlice {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        self.quotas.slice(
            "CountConstrainedKnapsackSlice",
            self.scarcity,
            items,
            budget,
            |rest, room| self.knapsack_by_score(rest, room),
        )
    }

    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        self.quotas.slice_grouped(
            "CountConstrainedKnapsackSlice",
            self.scarcity,
            items,
            units,
            budget,
            |rest, rest_units, room| self.knapsack_units_by_value(rest, rest_units, room),
        )
    }

    fn count_caps(&self) -> &[(ContextKind, usize)] {
        self.quotas.caps()
    }

    fn monotonic_in_budget(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slicer::test_support::{
        budget, check_count_case, contents, naive_knapsack, run, CountCase, Coverage, Fixture,
    };
    use crate::testutil::Rng;
    use crate::{Error, ErrorCode};

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn entry(k: &str, r: usize, c: usize) -> CountQuotaEntry {
        CountQuotaEntry::new(kind(k), r, c).unwrap()
    }

    fn ccks(entries: Vec<CountQuotaEntry>, q: i64) -> CountConstrainedKnapsackSlice {
        let knapsack = KnapsackSlice::new(q).unwrap();
        CountConstrainedKnapsackSlice::new(entries, knapsack, ScarcityBehavior::Degrade).unwrap()
    }

    #[test]
    fn construction_getters_and_capabilities() {
        let err = CountConstrainedKnapsackSlice::new(
            vec![entry("tool", 1, 2), entry("Tool", 1, 2)],
            KnapsackSlice::default(),
            ScarcityBehavior::Degrade,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: duplicate entry for kind \"Tool\""
        );
        let knapsack = KnapsackSlice::new(7).unwrap();
        let s = CountConstrainedKnapsackSlice::new(
            vec![entry("tool", 1, 2), entry("memory", 0, 1)],
            knapsack,
            ScarcityBehavior::Throw,
        )
        .unwrap();
        assert_eq!(s.entries().len(), 2);
        assert_eq!(s.knapsack(), &knapsack);
        assert_eq!(s.scarcity(), ScarcityBehavior::Throw);
        assert_eq!(s.count_caps(), &[(kind("tool"), 2), (kind("memory"), 1)]);
        assert!(!s.monotonic_in_budget());
    }

    #[test]
    fn empty_or_no_target_does_nothing() {
        let s = ccks(vec![entry("t", 1, 1)], 100);
        let fx = Fixture::new(&[("a", 10, "t", 0.5)]);
        assert_eq!(run(&s, &fx.scored(), 0), SliceOutcome::default());
        assert_eq!(
            run(&s, &Fixture::new(&[]).scored(), 10),
            SliceOutcome::default()
        );
    }

    #[test]
    fn vectors_baseline_cap_exclusion_degrade_nonexclusive() {
        let fx = Fixture::new(&[
            ("tool-a", 100, "tool", 0.9),
            ("tool-b", 100, "tool", 0.7),
            ("msg-x", 100, "msg", 0.5),
        ]);
        let items = fx.scored();
        let out = run(&ccks(vec![entry("tool", 2, 4)], 100), &items, 1000);
        assert_eq!(
            contents(&items, &out.selected),
            ["tool-a", "tool-b", "msg-x"]
        );
        assert!(out.shortfalls.is_empty() && out.cap_excluded.is_empty());

        let fx = Fixture::new(&[
            ("tool-a", 100, "tool", 0.9),
            ("tool-b", 100, "tool", 0.8),
            ("tool-c", 100, "tool", 0.7),
            ("tool-d", 100, "tool", 0.6),
        ]);
        let out = run(&ccks(vec![entry("tool", 1, 2)], 100), &fx.scored(), 600);
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(out.cap_excluded, vec![2, 3], "re-sorted: c before d");

        let fx = Fixture::new(&[("tool-a", 100, "tool", 0.9)]);
        let out = run(&ccks(vec![entry("tool", 3, 5)], 100), &fx.scored(), 500);
        assert_eq!(out.selected, vec![0]);
        assert_eq!(out.shortfalls.len(), 1);
        assert_eq!(
            (
                out.shortfalls[0].required_count,
                out.shortfalls[0].satisfied_count
            ),
            (3, 1)
        );

        let fx = Fixture::new(&[
            ("item-tool", 100, "tool", 0.9),
            ("item-memory", 100, "memory", 0.8),
            ("item-extra", 100, "tool", 0.5),
        ]);
        let s = ccks(vec![entry("tool", 1, 4), entry("memory", 1, 4)], 100);
        assert_eq!(run(&s, &fx.scored(), 1000).selected, vec![0, 1, 2]);
    }

    #[test]
    fn cap_keeps_the_highest_scoring_phase_two_items() {
        // CountQuotaSlice with Greedy keeps t-small here (density order); CCKS keeps t-big.
        let fx = Fixture::new(&[
            ("t-commit", 10, "t", 0.95),
            ("t-big", 100, "t", 0.9),
            ("t-small", 10, "t", 0.5),
        ]);
        let items = fx.scored();
        let out = run(&ccks(vec![entry("t", 1, 2)], 1), &items, 1000);
        assert_eq!(contents(&items, &out.selected), ["t-commit", "t-big"]);
        assert_eq!(out.cap_excluded, vec![2]);
    }

    #[test]
    fn ties_keep_knapsack_order_zero_token_first_then_later_input() {
        let fx = Fixture::new(&[
            ("t0", 10, "t", 0.99),
            ("p1", 10, "t", 0.5),
            ("z", 0, "t", 0.5),
            ("p2", 10, "t", 0.5),
        ]);
        let items = fx.scored();
        let out = run(&ccks(vec![entry("t", 1, 2)], 1), &items, 1000);
        assert_eq!(contents(&items, &out.selected), ["t0", "z"]);
        assert_eq!(out.cap_excluded, vec![3, 1]);
        let out = run(&ccks(vec![entry("t", 1, 3)], 1), &items, 1000);
        assert_eq!(contents(&items, &out.selected), ["t0", "z", "p2"]);
    }

    #[test]
    fn scores_are_looked_up_by_position() {
        // Same content, different scores: each copy keeps its own score.
        let fx = Fixture::new(&[
            ("dup", 10, "m", 0.9),
            ("x", 10, "m", 0.5),
            ("dup", 10, "m", 0.1),
        ]);
        let out = run(&ccks(vec![], 1), &fx.scored(), 1000);
        assert_eq!(out.selected, vec![0, 1, 2]);
    }

    #[test]
    fn knapsack_discretises_the_room_again() {
        // Commit 50 tokens; room 149 → cap 1 with q = 100: one 100-token item fits.
        let fx = Fixture::new(&[
            ("c", 50, "c", 0.9),
            ("a", 100, "m", 0.5),
            ("b", 40, "m", 0.4),
        ]);
        let out = run(&ccks(vec![entry("c", 1, 1)], 100), &fx.scored(), 199);
        assert_eq!(out.selected, vec![0, 1]);
    }

    #[test]
    fn errors_propagate_throw_and_table_too_large() {
        let fx = Fixture::new(&[("a", 10, "m", 0.5), ("t", 10, "t", 0.5)]);
        let s = CountConstrainedKnapsackSlice::new(
            vec![entry("t", 2, 2)],
            KnapsackSlice::default(),
            ScarcityBehavior::Throw,
        )
        .unwrap();
        let err = s.slice(&fx.scored(), &budget(100)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CountConstrainedKnapsackSlice: candidate pool for kind 't' has 1 items but RequireCount is 2."
        );
        assert_eq!(err.code(), ErrorCode::CountRequirementUnmet);
        let tiny = KnapsackSlice::with_table_limit(1, 1).unwrap();
        let s = CountConstrainedKnapsackSlice::new(
            vec![entry("t", 1, 2)],
            tiny,
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let err = s.slice(&fx.scored(), &budget(100)).unwrap_err();
        // residual: one candidate, room 90
        assert_eq!(
            err,
            Error::TableTooLarge {
                candidates: 1,
                capacity: 90,
                cells: 91,
                bytes: 16 + 8 * 91,
                limit: 1
            }
        );
    }

    #[test]
    fn random_cases_match_the_reference() {
        const BUCKETS: [i64; 4] = [1, 5, 10, 100];
        let mut coverage = Coverage::default();
        for seed in 0..2500u64 {
            let mut rng = Rng::new(seed);
            let case = CountCase::random(&mut rng);
            let q = *rng.pick(&BUCKETS);
            let knapsack = KnapsackSlice::new(q).unwrap();
            let slicer =
                CountConstrainedKnapsackSlice::new(case.quota_entries(), knapsack, case.scarcity())
                    .unwrap();
            let phase2 = |rest: &[ScoredItem<'_>], room: i64| {
                let mut picks = naive_knapsack(rest, room, q);
                picks.sort_by(|&a, &b| rest[b].score.total_cmp(&rest[a].score));
                picks
            };
            check_count_case(seed, &case, &slicer, &phase2, &mut coverage);
        }
        coverage.assert_at_least(100);
    }
}
