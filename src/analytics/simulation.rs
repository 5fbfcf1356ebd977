//! Budget simulation (spec 07 §5): which items a smaller budget loses, and the smallest
//! budget that includes a given item. Both assume that shrinking the budget never adds an
//! item, which holds for greedy and knapsack slicing but not for quotas, so both refuse
//! the quota slicers up front.

use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::Pipeline;
use crate::slicer::QuotaSlice;

/// The guard message of [`marginal_items`] for a percentage QuotaSlice (the references'
/// text).
pub const MSG_MARGINAL_QUOTA: &str = "GetMarginalItems requires monotonic item inclusion. \
QuotaSlice produces non-monotonic inclusion as budget changes shift percentage allocations.";

/// The guard message of [`min_budget_for`] (the references' text).
pub const MSG_MIN_BUDGET: &str = "FindMinBudgetFor requires monotonic item inclusion. \
QuotaSlice and CountQuotaSlice produce non-monotonic inclusion as budget changes shift \
allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget simulation.";

/// The items included at `budget` that drop out when the budget shrinks by `slack` tokens (.NET
/// `GetMarginalItems`), as input positions in the placed order of the full run.
///
/// * Refuses a percentage QuotaSlice ([`MSG_MARGINAL_QUOTA`], [`Error::PipelineConfig`]), exactly
///   as the specification and both references do. The count-quota slicers are not refused (no
///   source guards them here), although their inclusion is not monotonic either (spec 04 §6.5): the
///   result then describes these two runs only.
/// * `slack == 0` returns an empty list without running anything; a negative slack grows the budget
///   (allowed, as in the references).
/// * The smaller budget is `max − slack`, `target − slack`, with the same output reserve, reserved
///   slots and safety margin. The references reset slots and margin, but they compare against a
///   full run that ignores them (crate) or honours them (.NET); since ctxpack honours them
///   (decision D1 in docs/decisions.md), keeping them makes both runs comparable. An invalid
///   smaller budget fails with [`Error::InvalidBudget`].
/// * Items are matched by position (decision D15), so duplicate contents are told apart.
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::analytics::marginal_items;
/// use ctxpack::placer::UShapedPlacer;
/// use ctxpack::scorer::ReflexiveScorer;
/// use ctxpack::slicer::GreedySlice;
/// use ctxpack::{ContextBudget, ContextItem, Pipeline};
///
/// let items: Vec<ContextItem> = [("a", 50, 0.9), ("b", 60, 0.2), ("c", 40, 0.5)]
///     .into_iter()
///     .map(|(content, tokens, hint)| {
///         ContextItem::builder(content, tokens)
///             .future_relevance_hint(hint)
///             .build()
///     })
///     .collect::<Result<_, _>>()?;
/// let pipeline = Pipeline::builder()
///     .scorer(Arc::new(ReflexiveScorer::new()))
///     .slicer(Arc::new(GreedySlice::new()))
///     .placer(Arc::new(UShapedPlacer::new()))
///     .build()?;
/// // Greedy by score per token: "a" and "c" fill 90 of 100 tokens. At 80, "c" no longer
/// // fits after "a"; at 40, "a" does not fit and "c" alone does.
/// let budget = ContextBudget::new(100, 100)?;
/// assert_eq!(marginal_items(&pipeline, &items, &budget, 20)?, [2]);
/// assert_eq!(marginal_items(&pipeline, &items, &budget, 60)?, [0]);
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub fn marginal_items(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    slack: i64,
) -> Result<Vec<usize>> {
    if pipeline.slicer().as_any().is::<QuotaSlice>() {
        return Err(Error::PipelineConfig(MSG_MARGINAL_QUOTA.into()));
    }
    if slack == 0 {
        return Ok(Vec::new());
    }
    let shrink = |value: i64, what: &str| {
        value.checked_sub(slack).ok_or_else(|| {
            Error::InvalidArgument(format!("{what} ({value}) minus slack ({slack}) overflows"))
        })
    };
    let smaller = ContextBudget::with_all(
        shrink(budget.max_tokens(), "max_tokens")?,
        shrink(budget.target_tokens(), "target_tokens")?,
        budget.output_reserve(),
        budget.reserved_slots().to_vec(),
        budget.estimation_safety_margin_percent(),
    )?;
    let full = pipeline.dry_run(items, budget)?;
    let cut = pipeline.dry_run(items, &smaller)?;
    let mut kept = vec![false; items.len()];
    for x in &cut.included {
        if let Some(k) = kept.get_mut(x.index) {
            *k = true;
        }
    }
    Ok(full
        .included
        .iter()
        .map(|x| x.index)
        .filter(|&i| !kept.get(i).copied().unwrap_or(false))
        .collect())
}

/// The smallest probe budget in `[items[target].tokens, ceiling]` at which the item at
/// position `target` is included (.NET `FindMinBudgetFor`), or `None` when even `ceiling`
/// does not include it. For an item with variants (`docs/variants.md`), `tokens` is its
/// cheapest form's and "included" counts any form.
///
/// * Refuses a slicer that is not monotonic in the budget
///   ([`Slicer::monotonic_in_budget`](crate::slicer::Slicer::monotonic_in_budget): QuotaSlice,
///   CountQuotaSlice, CountConstrainedKnapsackSlice) with [`Error::PipelineConfig`]
///   ([`MSG_MIN_BUDGET`]), then checks that `target` is a
///   position of `items` and that `ceiling >= items[target].tokens`
///   ([`Error::InvalidArgument`]), in that order.
/// * Each probe is a dry run with `max = target = b`, no reserve, no slots, no margin;
///   the pipeline's configuration is all that is used.
/// * Binary search on `(lo, hi) = (tokens, ceiling)` while `hi − lo > 1`, then probe `lo`
///   and `hi` (the references' lower-bound probe: with tokens 100 and ceiling 101 the
///   answer is 100 when 100 suffices). At most ⌈log₂(ceiling − tokens)⌉ + 2 dry runs.
/// * Errors of a probe propagate (pinned items above a probe, a Throw overflow, a negative
///   probe budget for a negative-token target).
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::analytics::min_budget_for;
/// use ctxpack::placer::ChronologicalPlacer;
/// use ctxpack::scorer::ReflexiveScorer;
/// use ctxpack::slicer::GreedySlice;
/// use ctxpack::{ContextItem, Pipeline};
///
/// let hinted = |tokens, hint| ContextItem::builder("x", tokens).future_relevance_hint(hint);
/// let items = [hinted(50, 0.9).build()?, hinted(60, 0.2).build()?, hinted(40, 0.5).build()?];
/// let pipeline = Pipeline::builder()
///     .scorer(Arc::new(ReflexiveScorer::new()))
///     .slicer(Arc::new(GreedySlice::new()))
///     .placer(Arc::new(ChronologicalPlacer::new()))
///     .deduplication(false) // the three contents are equal
///     .build()?;
/// // Greedy takes the other two first (better score per token): item 1 needs 50 + 40 + 60.
/// assert_eq!(min_budget_for(&pipeline, &items, 1, 1000)?, Some(150));
/// assert_eq!(min_budget_for(&pipeline, &items, 1, 149)?, None);
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub fn min_budget_for(
    pipeline: &Pipeline,
    items: &[ContextItem],
    target: usize,
    ceiling: i64,
) -> Result<Option<i64>> {
    if !pipeline.slicer().monotonic_in_budget() {
        return Err(Error::PipelineConfig(MSG_MIN_BUDGET.into()));
    }
    let Some(item) = items.get(target) else {
        return Err(Error::InvalidArgument(format!(
            "target ({target}) must be the position of an element of items (0..{})",
            items.len()
        )));
    };
    // An item with variants (docs/variants.md) can be placed as its cheapest form.
    let tokens = (0..item.form_count())
        .map(|f| item.form_tokens(f))
        .min()
        .unwrap_or(item.tokens());
    if ceiling < tokens {
        return Err(Error::InvalidArgument(format!(
            "search ceiling ({ceiling}) must be >= the target item's tokens ({tokens})"
        )));
    }
    let included_at = |b: i64| -> Result<bool> {
        let report = pipeline.dry_run(items, &ContextBudget::new(b, b)?)?;
        Ok(report.included.iter().any(|x| x.index == target))
    };
    let (mut lo, mut hi) = (tokens, ceiling);
    // i128: `hi − lo` may not fit in i64 when `lo` is negative.
    while i128::from(hi) - i128::from(lo) > 1 {
        let mid = (i128::from(lo) + (i128::from(hi) - i128::from(lo)) / 2) as i64;
        if included_at(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if included_at(lo)? {
        return Ok(Some(lo));
    }
    // Dry runs are deterministic: when lo == hi a second probe cannot change the answer.
    if hi != lo && included_at(hi)? {
        return Ok(Some(hi));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::ScoredItem;
    use crate::placer::ChronologicalPlacer;
    use crate::scorer::ReflexiveScorer;
    use crate::slicer::{
        CountConstrainedKnapsackSlice, CountQuotaSlice, GreedySlice, KnapsackSlice, QuotaSlice,
        ScarcityBehavior, SliceOutcome, Slicer,
    };

    /// An item whose score under ReflexiveScorer is `score`.
    fn item(content: &str, tokens: i64, score: f64) -> ContextItem {
        ContextItem::builder(content, tokens)
            .future_relevance_hint(score)
            .build()
            .unwrap()
    }

    fn pipeline(slicer: Arc<dyn Slicer>, dedup: bool) -> Pipeline {
        Pipeline::builder()
            .scorer(Arc::new(ReflexiveScorer::new()))
            .slicer(slicer)
            .placer(Arc::new(ChronologicalPlacer::new()))
            .deduplication(dedup)
            .build()
            .unwrap()
    }

    fn greedy() -> Pipeline {
        pipeline(Arc::new(GreedySlice::new()), true)
    }

    /// A custom slicer that declares itself non-monotonic; running it is a test failure.
    #[derive(Debug)]
    struct NonMonotonic;

    impl Slicer for NonMonotonic {
        fn slice(&self, _: &[ScoredItem<'_>], _: &ContextBudget) -> Result<SliceOutcome> {
            panic!("the guard must refuse this slicer before any run")
        }
        fn monotonic_in_budget(&self) -> bool {
            false
        }
    }

    fn quota() -> Pipeline {
        let inner = Arc::new(GreedySlice::new());
        pipeline(Arc::new(QuotaSlice::new(vec![], inner).unwrap()), true)
    }

    fn count_quota() -> Pipeline {
        let inner = Arc::new(GreedySlice::new());
        let slicer = CountQuotaSlice::new(vec![], inner, ScarcityBehavior::Degrade).unwrap();
        pipeline(Arc::new(slicer), true)
    }

    fn count_constrained_knapsack() -> Pipeline {
        let knapsack = KnapsackSlice::new(1).unwrap();
        let slicer =
            CountConstrainedKnapsackSlice::new(vec![], knapsack, ScarcityBehavior::Degrade)
                .unwrap();
        pipeline(Arc::new(slicer), true)
    }

    #[test]
    fn guards_refuse_non_monotonic_slicers() {
        let items = vec![item("a", 10, 0.5)];
        let budget = ContextBudget::new(100, 100).unwrap();
        let config = |m: &str| Error::PipelineConfig(m.into());
        assert_eq!(
            marginal_items(&quota(), &items, &budget, 5),
            Err(config(MSG_MARGINAL_QUOTA))
        );
        // Count quotas are not guarded for marginal items (07 §5.1).
        assert_eq!(
            marginal_items(&count_quota(), &items, &budget, 5),
            Ok(vec![])
        );
        // The guard comes before the slack = 0 shortcut.
        assert_eq!(
            marginal_items(&quota(), &items, &budget, 0),
            Err(config(MSG_MARGINAL_QUOTA))
        );
        let non_monotonic = pipeline(Arc::new(NonMonotonic), true);
        for p in [
            quota(),
            count_quota(),
            count_constrained_knapsack(),
            non_monotonic,
        ] {
            assert_eq!(
                min_budget_for(&p, &items, 0, 100),
                Err(config(MSG_MIN_BUDGET))
            );
            // The guard comes before the argument checks.
            assert_eq!(
                min_budget_for(&p, &items, 7, -1),
                Err(config(MSG_MIN_BUDGET))
            );
        }
    }

    #[test]
    fn min_budget_checks_its_arguments_in_order() {
        let items = vec![item("a", 10, 0.5), item("b", 20, 0.5)];
        let p = greedy();
        assert_eq!(
            min_budget_for(&p, &items, 2, 5),
            Err(Error::InvalidArgument(
                "target (2) must be the position of an element of items (0..2)".into()
            ))
        );
        assert_eq!(
            min_budget_for(&p, &items, 1, 19),
            Err(Error::InvalidArgument(
                "search ceiling (19) must be >= the target item's tokens (20)".into()
            ))
        );
    }

    #[test]
    fn zero_slack_runs_nothing() {
        let items = vec![item("a", 10, 0.5)];
        // A budget the pipeline could not even run with: nothing is run.
        let budget = ContextBudget::new(0, 0).unwrap();
        assert_eq!(marginal_items(&greedy(), &items, &budget, 0), Ok(vec![]));
    }

    #[test]
    fn invalid_smaller_budget_is_an_error() {
        let items = vec![item("a", 10, 0.5)];
        let budget = ContextBudget::new(100, 30).unwrap();
        let err = marginal_items(&greedy(), &items, &budget, 31).unwrap_err();
        assert_eq!(
            err,
            Error::InvalidBudget("target_tokens (-1) must be >= 0".into())
        );
        let budget = ContextBudget::with_all(100, 30, 80, vec![], 0.0).unwrap();
        let err = marginal_items(&greedy(), &items, &budget, 25).unwrap_err();
        assert_eq!(
            err,
            Error::InvalidBudget("output_reserve (80) must be <= max_tokens (75)".into())
        );
        let err = marginal_items(&greedy(), &items, &budget, i64::MIN).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidArgument);
    }

    #[test]
    fn marginal_items_are_the_ones_a_smaller_budget_loses() {
        let items = vec![
            item("a", 10, 0.9),
            item("b", 10, 0.8),
            item("c", 10, 0.7),
            item("d", 10, 0.6),
        ];
        let budget = ContextBudget::new(30, 30).unwrap();
        assert_eq!(marginal_items(&greedy(), &items, &budget, 10), Ok(vec![2]));
        assert_eq!(
            marginal_items(&greedy(), &items, &budget, 20),
            Ok(vec![1, 2])
        );
        assert_eq!(
            marginal_items(&greedy(), &items, &budget, 30),
            Ok(vec![0, 1, 2])
        );
        // A negative slack grows the budget: nothing included at 30 is lost at 40.
        assert_eq!(marginal_items(&greedy(), &items, &budget, -10), Ok(vec![]));
        // Knapsack is monotonic too and accepted.
        let knapsack = pipeline(Arc::new(KnapsackSlice::new(1).unwrap()), true);
        assert_eq!(marginal_items(&knapsack, &items, &budget, 10), Ok(vec![2]));
    }

    #[test]
    fn marginal_items_tell_duplicates_apart_by_position() {
        let items = vec![item("x", 10, 0.9), item("x", 10, 0.5)];
        let budget = ContextBudget::new(20, 20).unwrap();
        let p = pipeline(Arc::new(GreedySlice::new()), false);
        assert_eq!(marginal_items(&p, &items, &budget, 10), Ok(vec![1]));
    }

    #[test]
    fn marginal_items_keep_reserved_slots_and_margin() {
        // Slots of 10 leave 20 of the 30 target; the smaller run keeps them, so shrinking
        // by 10 loses exactly one item (resetting slots would lose none).
        let items = vec![item("a", 10, 0.9), item("b", 10, 0.8), item("c", 10, 0.7)];
        let slots = vec![(crate::model::ContextKind::new("Memory").unwrap(), 10)];
        let budget = ContextBudget::with_all(30, 30, 0, slots, 0.0).unwrap();
        assert_eq!(marginal_items(&greedy(), &items, &budget, 10), Ok(vec![1]));
    }

    #[test]
    fn min_budget_binary_search() {
        // Densities: c 0.1, a 0.09, b 0.005 -> b needs c + a + b = 35 tokens.
        let items = vec![item("a", 10, 0.9), item("b", 20, 0.1), item("c", 5, 0.5)];
        let p = greedy();
        assert_eq!(min_budget_for(&p, &items, 1, 100), Ok(Some(35)));
        assert_eq!(min_budget_for(&p, &items, 1, 35), Ok(Some(35)));
        assert_eq!(min_budget_for(&p, &items, 1, 34), Ok(None));
        assert_eq!(min_budget_for(&p, &items, 2, 1000), Ok(Some(5)));
        assert_eq!(min_budget_for(&p, &items, 0, 1000), Ok(Some(15)));
        // ceiling == tokens: one probe.
        assert_eq!(min_budget_for(&p, &items, 2, 5), Ok(Some(5)));
    }

    #[test]
    fn min_budget_probes_the_lower_bound() {
        // tokens 100, ceiling 101: the references' answer is 100 (the spec's would be 101).
        let items = vec![item("big", 100, 0.5)];
        assert_eq!(min_budget_for(&greedy(), &items, 0, 101), Ok(Some(100)));
    }

    #[test]
    fn min_budget_propagates_run_errors() {
        let pinned = ContextItem::builder("pinned", 50)
            .pinned(true)
            .build()
            .unwrap();
        let items = vec![pinned, item("t", 10, 0.5)];
        // The first probe (35) is below the pinned 50 tokens.
        let err = min_budget_for(&greedy(), &items, 1, 60).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::PinnedExceedsBudget);
        // Probes at or above 50 run; the target needs 60.
        assert_eq!(min_budget_for(&greedy(), &items, 1, 100), Ok(Some(60)));
        // A negative-token target makes a probe budget invalid.
        let items = vec![item("neg", -5, 0.5)];
        let err = min_budget_for(&greedy(), &items, 0, 0).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidBudget);
    }
}
