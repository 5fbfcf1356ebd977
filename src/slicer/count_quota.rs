//! CountQuotaSlice (spec 04 §5–§6, decision D10 in docs/decisions.md): commit required counts per
//! kind, delegate the rest to an inner slicer, enforce per-kind caps.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextKind, ScoredItem, Units};
use crate::slicer::count_common::CountQuotas;
use crate::slicer::{KnapsackSlice, SliceOutcome, Slicer};

/// What a count-quota slicer does when a required kind has too few candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScarcityBehavior {
    /// Commit what exists and record a shortfall (the default).
    #[default]
    Degrade,
    /// Fail the slice with `CountRequirementUnmet`.
    Throw,
}

/// One count quota: commit `require_count` items of `kind`, keep at most `cap_count`.
#[derive(Debug, Clone, PartialEq)]
pub struct CountQuotaEntry {
    kind: ContextKind,
    require_count: usize,
    cap_count: usize,
}

impl CountQuotaEntry {
    /// Validates, zero cap first (spec 04 §5.1):
    /// `kind "<k>": cap_count is 0 but require_count is <r>; a zero cap with a positive
    /// requirement can never be satisfied`, then
    /// `kind "<k>": require_count (<r>) must be <= cap_count (<c>)`, each as an
    /// `invalid slicer configuration` error (`<k>` in Rust `{:?}` form).
    pub fn new(kind: ContextKind, require_count: usize, cap_count: usize) -> Result<Self> {
        if cap_count == 0 && require_count > 0 {
            return Err(Error::SlicerConfig(format!(
                "kind {kind:?}: cap_count is 0 but require_count is {require_count}; \
                 a zero cap with a positive requirement can never be satisfied"
            )));
        }
        if require_count > cap_count {
            return Err(Error::SlicerConfig(format!(
                "kind {kind:?}: require_count ({require_count}) must be <= cap_count ({cap_count})"
            )));
        }
        Ok(Self {
            kind,
            require_count,
            cap_count,
        })
    }

    /// The kind (compared with ASCII case folding).
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }

    /// Items committed in Phase 1.
    pub fn require_count(&self) -> usize {
        self.require_count
    }

    /// Maximum items of the kind in the result (Phase 1 commits included).
    pub fn cap_count(&self) -> usize {
        self.cap_count
    }
}

/// Exact text of the construction error for a KnapsackSlice inner slicer (spec 04 §6.1).
const KNAPSACK_INNER_MESSAGE: &str = "CountQuotaSlice does not support KnapsackSlice as the inner \
     slicer in this version. Use GreedySlice as the inner slicer. A \
     CountConstrainedKnapsackSlice will be provided in a future release.";

/// CountQuotaSlice: commit required counts, delegate the rest, enforce caps (spec 04 §6).
///
/// * Phase 1 walks the entries in configuration order and commits the top `require_count`
///   items of each kind by score (descending, IEEE total order, ties in input order),
///   regardless of the budget. A kind with fewer candidates yields a shortfall (Degrade) or
///   fails the call with [`Error::CountRequirementUnmet`] (Throw), even when it has none.
/// * Phase 2 runs the inner slicer on the remaining items (input order) with
///   `Budget(room, room)`, `room = max(0, target − committed tokens)`; it is skipped when the
///   room is 0 or nothing remains.
/// * Phase 3 walks the inner output in its order and drops items of a kind that already has
///   `cap_count` items (Phase 1 commits included); they are reported in
///   [`SliceOutcome::cap_excluded`].
///
/// Output order: the commits, then the surviving Phase 2 items in inner output order.
/// Shortfalls are reported in [`SliceOutcome::shortfalls`]. Phase 1 can exceed the target.
///
/// With groups (`docs/groups.md`), every phase works on units: a unit counts toward each
/// entry with one per member of that entry's kind; Phase 1 ranks units by value; a unit
/// that would take any capped kind over its cap is never committed or kept, so no cap is
/// exceeded for any member's kind. With variants (`docs/variants.md`), counts do not
/// depend on the form; Phase 1 commits a unit at its richest level that fits what the
/// commits left of the target (its cheapest level when none fits), Phase 2's room is the
/// target minus the committed forms' tokens, and the inner slicer chooses the other forms.
#[derive(Debug, Clone)]
pub struct CountQuotaSlice {
    quotas: CountQuotas,
    inner: Arc<dyn Slicer>,
    scarcity: ScarcityBehavior,
}

impl CountQuotaSlice {
    /// Builds the slicer. Fails if the inner slicer is a [`KnapsackSlice`] (not a wrapper of one,
    /// spec 04 §6.1 message), then if two entries name the same kind under ASCII case folding
    /// (`duplicate entry for kind "<k>"`, decision D10 in docs/decisions.md); both `invalid slicer
    /// configuration`.
    pub fn new(
        entries: Vec<CountQuotaEntry>,
        inner: Arc<dyn Slicer>,
        scarcity: ScarcityBehavior,
    ) -> Result<Self> {
        if inner.as_any().is::<KnapsackSlice>() {
            return Err(Error::SlicerConfig(KNAPSACK_INNER_MESSAGE.into()));
        }
        let quotas = CountQuotas::new(entries)?;
        Ok(Self {
            quotas,
            inner,
            scarcity,
        })
    }

    /// The entries, in configuration order.
    pub fn entries(&self) -> &[CountQuotaEntry] {
        self.quotas.entries()
    }

    /// The inner slicer used in Phase 2.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        &self.inner
    }

    /// The scarcity behaviour.
    pub fn scarcity(&self) -> ScarcityBehavior {
        self.scarcity
    }
}

impl Slicer for CountQuotaSlice {
    fn slice(&self, items: &[ScoredItem<'_>], budget: &ContextBudget) -> Result<SliceOutcome> {
        self.quotas.slice(
            "CountQuotaSlice",
            self.scarcity,
            items,
            budget,
            |rest, room| self.inner.slice(rest, room),
        )
    }

    fn slice_grouped(
        &self,
        items: &[ScoredItem<'_>],
        units: &Units,
        budget: &ContextBudget,
    ) -> Result<SliceOutcome> {
        self.quotas.slice_grouped(
            "CountQuotaSlice",
            self.scarcity,
            items,
            units,
            budget,
            |rest, rest_units, room| self.inner.slice_grouped(rest, rest_units, room),
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
    use crate::diagnostics::CountRequirementShortfall;
    use crate::slicer::test_support::{
        budget, check_count_case, contents, run, CountCase, Coverage, Fixture, Recorder,
    };
    use crate::slicer::{CountConstrainedKnapsackSlice, GreedySlice, KnapsackSlice, QuotaSlice};
    use crate::testutil::Rng;
    use crate::ErrorCode;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn entry(k: &str, r: usize, c: usize) -> CountQuotaEntry {
        CountQuotaEntry::new(kind(k), r, c).unwrap()
    }

    fn greedy() -> Arc<dyn Slicer> {
        Arc::new(GreedySlice::new())
    }

    fn cq(entries: Vec<CountQuotaEntry>) -> CountQuotaSlice {
        CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Degrade).unwrap()
    }

    fn cq_throw(entries: Vec<CountQuotaEntry>) -> CountQuotaSlice {
        CountQuotaSlice::new(entries, greedy(), ScarcityBehavior::Throw).unwrap()
    }

    fn shortfall(k: &str, required: u64, satisfied: u64) -> CountRequirementShortfall {
        CountRequirementShortfall {
            kind: k.into(),
            required_count: required,
            satisfied_count: satisfied,
        }
    }

    #[test]
    fn entry_validation_zero_cap_first() {
        let p = "invalid slicer configuration: ";
        let err = CountQuotaEntry::new(kind("tool"), 2, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{p}kind \"tool\": cap_count is 0 but require_count is 2; \
                 a zero cap with a positive requirement can never be satisfied"
            )
        );
        assert_eq!(err.code(), ErrorCode::SlicerConfig);
        let err = CountQuotaEntry::new(kind("Tool"), 3, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{p}kind \"Tool\": require_count (3) must be <= cap_count (2)")
        );
        let err = CountQuotaEntry::new(kind("a\"b"), 1, 0).unwrap_err();
        assert!(err
            .to_string()
            .starts_with(&format!("{p}kind \"a\\\"b\": cap_count is 0")));
        let e = entry("Tool", 0, 0);
        assert_eq!(
            (e.kind().as_str(), e.require_count(), e.cap_count()),
            ("Tool", 0, 0)
        );
        assert!(CountQuotaEntry::new(kind("x"), 2, 2).is_ok());
    }

    #[test]
    fn construction_rejects_knapsack_inner_then_duplicates() {
        let knapsack: Arc<dyn Slicer> = Arc::new(KnapsackSlice::new(100).unwrap());
        let err =
            CountQuotaSlice::new(vec![], knapsack.clone(), ScarcityBehavior::Degrade).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: CountQuotaSlice does not support KnapsackSlice as the \
             inner slicer in this version. Use GreedySlice as the inner slicer. A \
             CountConstrainedKnapsackSlice will be provided in a future release."
        );
        assert_eq!(err.code(), ErrorCode::SlicerConfig);
        let dup = vec![entry("tool", 1, 2), entry("TOOL", 0, 1)];
        let err = CountQuotaSlice::new(dup.clone(), knapsack.clone(), ScarcityBehavior::Degrade)
            .unwrap_err();
        assert!(
            err.to_string().contains("KnapsackSlice"),
            "knapsack check comes first"
        );
        let err = CountQuotaSlice::new(dup, greedy(), ScarcityBehavior::Degrade).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid slicer configuration: duplicate entry for kind \"TOOL\""
        );
        // Only the direct inner slicer is checked.
        let wrapped = QuotaSlice::new(vec![], knapsack).unwrap();
        assert!(CountQuotaSlice::new(vec![], Arc::new(wrapped), ScarcityBehavior::Degrade).is_ok());
        let ccks = CountConstrainedKnapsackSlice::new(
            vec![],
            KnapsackSlice::default(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        assert!(CountQuotaSlice::new(vec![], Arc::new(ccks), ScarcityBehavior::Degrade).is_ok());
    }

    #[test]
    fn getters_and_capabilities() {
        let s = CountQuotaSlice::new(
            vec![entry("tool", 1, 3), entry("Memory", 0, 2)],
            greedy(),
            ScarcityBehavior::Throw,
        )
        .unwrap();
        assert_eq!(s.entries().len(), 2);
        assert_eq!(s.scarcity(), ScarcityBehavior::Throw);
        assert!(s.inner().as_any().is::<GreedySlice>());
        assert_eq!(s.count_caps(), &[(kind("tool"), 3), (kind("Memory"), 2)]);
        assert!(!s.monotonic_in_budget());
        assert_eq!(ScarcityBehavior::default(), ScarcityBehavior::Degrade);
    }

    #[test]
    fn empty_or_no_target_does_nothing_even_under_throw() {
        let s = cq_throw(vec![entry("missing", 2, 2)]);
        let fx = Fixture::new(&[("a", 10, "x", 0.5)]);
        assert_eq!(run(&s, &fx.scored(), 0), SliceOutcome::default());
        assert_eq!(
            run(&s, &Fixture::new(&[]).scored(), 100),
            SliceOutcome::default()
        );
    }

    #[test]
    fn no_entries_delegates_everything() {
        let rec = Arc::new(Recorder::default());
        let s = CountQuotaSlice::new(vec![], rec.clone(), ScarcityBehavior::Degrade).unwrap();
        let fx = Fixture::new(&[("a", 10, "x", 0.5), ("b", 20, "y", 0.9)]);
        assert_eq!(run(&s, &fx.scored(), 100).selected, vec![0, 1]);
        assert_eq!(
            rec.calls(),
            vec![(vec!["a".to_string(), "b".to_string()], 100, 100)]
        );
    }

    fn tools(scores: &[f64]) -> Fixture {
        let specs: Vec<(String, i64, String, f64)> = scores
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                (
                    format!("tool-{}", (b'a' + i as u8) as char),
                    100,
                    "tool".to_string(),
                    s,
                )
            })
            .collect();
        Fixture::from_owned(&specs)
    }

    #[test]
    fn vector_baseline_and_require_and_cap() {
        let fx = tools(&[0.9, 0.7, 0.5]);
        let items = fx.scored();
        let out = run(&cq(vec![entry("tool", 2, 4)]), &items, 1000);
        assert_eq!(
            contents(&items, &out.selected),
            ["tool-a", "tool-b", "tool-c"]
        );
        assert!(out.shortfalls.is_empty() && out.cap_excluded.is_empty());

        let fx = tools(&[0.9, 0.7, 0.6, 0.4]);
        let items = fx.scored();
        let out = run(&cq(vec![entry("tool", 2, 2)]), &items, 1000);
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(out.cap_excluded, vec![2, 3]);
        assert!(out.shortfalls.is_empty());
    }

    #[test]
    fn vector_scarcity_degrade_and_tag_nonexclusive() {
        let fx = tools(&[0.9]);
        let out = run(&cq(vec![entry("tool", 3, 5)]), &fx.scored(), 1000);
        assert_eq!(out.selected, vec![0]);
        assert_eq!(out.shortfalls, vec![shortfall("tool", 3, 1)]);

        let fx = Fixture::new(&[
            ("item-critical", 100, "critical", 0.9),
            ("item-urgent", 100, "urgent", 0.8),
            ("item-extra", 100, "critical", 0.5),
        ]);
        let out = run(
            &cq(vec![entry("critical", 1, 4), entry("urgent", 1, 4)]),
            &fx.scored(),
            1000,
        );
        assert_eq!(out.selected, vec![0, 1, 2]);
    }

    #[test]
    fn zero_candidate_kind_is_a_shortfall_with_the_entry_spelling() {
        let fx = Fixture::new(&[("m", 10, "message", 0.5)]);
        let out = run(
            &cq(vec![entry("Tool", 2, 3), entry("MESSAGE", 1, 1)]),
            &fx.scored(),
            100,
        );
        assert_eq!(out.selected, vec![0]);
        assert_eq!(out.shortfalls, vec![shortfall("Tool", 2, 0)]);
    }

    #[test]
    fn throw_fails_at_the_first_short_entry_in_configuration_order() {
        let fx = Fixture::new(&[("a", 10, "alpha", 0.5), ("z", 10, "zulu", 0.5)]);
        let s = cq_throw(vec![entry("Zulu", 2, 2), entry("alpha", 3, 3)]);
        let err = s.slice(&fx.scored(), &budget(100)).unwrap_err();
        assert_eq!(
            err,
            Error::CountRequirementUnmet {
                slicer: "CountQuotaSlice",
                kind: "Zulu".into(),
                satisfied: 1,
                required: 2
            }
        );
        assert_eq!(
            err.to_string(),
            "CountQuotaSlice: candidate pool for kind 'Zulu' has 1 items but RequireCount is 2."
        );
        assert_eq!(err.code(), ErrorCode::CountRequirementUnmet);
        let err = cq_throw(vec![entry("ghost", 1, 1)])
            .slice(&fx.scored(), &budget(100))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CountQuotaSlice: candidate pool for kind 'ghost' has 0 items but RequireCount is 1."
        );
        // satisfied requirements do not throw
        assert_eq!(
            run(&cq_throw(vec![entry("ALPHA", 1, 1)]), &fx.scored(), 100).selected,
            vec![0, 1]
        );
    }

    #[test]
    fn commits_follow_configuration_order_then_score_then_input_order() {
        // unsorted input, interleaved kinds, a score tie inside kind b
        let fx = Fixture::new(&[
            ("a-low", 10, "a", 0.1),
            ("b-tie1", 10, "B", 0.5),
            ("a-high", 10, "A", 0.9),
            ("b-tie2", 10, "b", 0.5),
            ("b-top", 10, "b", 0.7),
            ("other", 10, "c", 0.99),
        ]);
        let items = fx.scored();
        let out = run(&cq(vec![entry("b", 2, 9), entry("a", 1, 9)]), &items, 1000);
        // commits: b by score (tie in input order), then a; Phase 2 in greedy density order
        assert_eq!(
            contents(&items, &out.selected),
            ["b-top", "b-tie1", "a-high", "other", "b-tie2", "a-low"]
        );
    }

    #[test]
    fn commits_may_exceed_the_target_and_the_inner_slicer_is_then_skipped() {
        let rec = Arc::new(Recorder::default());
        let s = CountQuotaSlice::new(
            vec![entry("t", 2, 5)],
            rec.clone(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let fx = Fixture::new(&[
            ("t1", 80, "t", 0.9),
            ("t2", 70, "t", 0.8),
            ("m", 1, "m", 0.1),
        ]);
        let out = run(&s, &fx.scored(), 100);
        assert_eq!(out.selected, vec![0, 1], "150 tokens over a target of 100");
        assert!(rec.calls().is_empty());
        // everything committed: rest empty, inner skipped
        let fx = Fixture::new(&[("t1", 1, "t", 0.9)]);
        assert_eq!(run(&s, &fx.scored(), 100).selected, vec![0]);
        assert!(rec.calls().is_empty());
    }

    #[test]
    fn inner_gets_the_residual_in_input_order_with_the_room() {
        let rec = Arc::new(Recorder::default());
        let s = CountQuotaSlice::new(
            vec![entry("t", 1, 5)],
            rec.clone(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let fx = Fixture::new(&[
            ("m1", 5, "m", 0.1),
            ("t1", 30, "t", 0.5),
            ("t2", 20, "t", 0.9),
            ("m2", 5, "m", 0.8),
        ]);
        let out = run(&s, &fx.scored(), 100);
        assert_eq!(
            rec.calls(),
            vec![(vec!["m1".to_string(), "t1".into(), "m2".into()], 80, 80)]
        );
        assert_eq!(out.selected, vec![2, 0, 1, 3]);
    }

    #[test]
    fn caps_apply_in_inner_output_order_seeded_by_commits() {
        // Greedy visits by density: t-small (0.5/10) before t-big (0.9/100).
        let fx = Fixture::new(&[
            ("t-commit", 10, "t", 0.95),
            ("t-big", 100, "t", 0.9),
            ("t-small", 10, "t", 0.5),
        ]);
        let items = fx.scored();
        let out = run(&cq(vec![entry("t", 1, 2)]), &items, 1000);
        assert_eq!(contents(&items, &out.selected), ["t-commit", "t-small"]);
        assert_eq!(
            out.cap_excluded,
            vec![1],
            "the higher-scored item loses: density order"
        );
    }

    #[test]
    fn require_equal_cap_short_lets_phase_two_fill_up_to_the_cap() {
        let fx = Fixture::new(&[("t1", 10, "t", 0.9), ("m", 10, "m", 0.5)]);
        let out = run(&cq(vec![entry("t", 2, 2)]), &fx.scored(), 100);
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(out.shortfalls, vec![shortfall("t", 2, 1)]);
        // require 0, cap 0: every Phase 2 item of the kind is excluded
        let fx = Fixture::new(&[
            ("t1", 10, "t", 0.9),
            ("m", 10, "m", 0.5),
            ("t2", 0, "T", 0.1),
        ]);
        let out = run(&cq(vec![entry("t", 0, 0)]), &fx.scored(), 100);
        assert_eq!(out.selected, vec![1]);
        assert_eq!(out.cap_excluded, vec![2, 0]);
    }

    #[test]
    fn zero_token_items_count_towards_require_and_cap() {
        let fx = Fixture::new(&[
            ("z1", 0, "t", 0.9),
            ("z2", 0, "t", 0.8),
            ("t1", 10, "t", 0.7),
        ]);
        let out = run(&cq(vec![entry("t", 1, 2)]), &fx.scored(), 100);
        assert_eq!(out.selected, vec![0, 1]);
        assert_eq!(out.cap_excluded, vec![2]);
    }

    #[test]
    fn inner_errors_propagate() {
        let tiny = KnapsackSlice::with_table_limit(1, 1).unwrap();
        let wrapped = QuotaSlice::new(vec![], Arc::new(tiny)).unwrap();
        let s = CountQuotaSlice::new(vec![], Arc::new(wrapped), ScarcityBehavior::Degrade).unwrap();
        let fx = Fixture::new(&[("a", 10, "x", 0.5)]);
        let err = s.slice(&fx.scored(), &budget(100)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TableTooLarge);
    }

    #[test]
    fn random_cases_match_the_reference() {
        let naive_greedy = |rest: &[ScoredItem<'_>], room: i64| {
            GreedySlice::new()
                .slice(rest, &budget(room))
                .unwrap()
                .selected
        };
        let mut coverage = Coverage::default();
        for seed in 0..3000u64 {
            let mut rng = Rng::new(seed);
            let case = CountCase::random(&mut rng);
            let slicer =
                CountQuotaSlice::new(case.quota_entries(), greedy(), case.scarcity()).unwrap();
            check_count_case(seed, &case, &slicer, &naive_greedy, &mut coverage);
        }
        coverage.assert_at_least(100);
    }
}
