//! Budget simulation (spec 07 §5): which items a smaller budget loses, and the smallest
//! budget that includes a given item. Both assume that shrinking the budget never adds an
//! item, which holds for greedy and knapsack slicing but not for quotas, so both refuse
//! the quota slicers up front.

use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::Pipeline;

/// The guard message of [`marginal_items`] for a percentage QuotaSlice (the references'
/// text).
pub const MSG_MARGINAL_QUOTA: &str = "GetMarginalItems requires monotonic item inclusion. \
QuotaSlice produces non-monotonic inclusion as budget changes shift percentage allocations.";

/// The guard message of [`marginal_items`] for the count-quota slicers (a ctxpack guard,
/// see [`marginal_items`]).
pub const MSG_MARGINAL_COUNT_QUOTA: &str = "GetMarginalItems requires monotonic item inclusion. \
CountQuotaSlice and CountConstrainedKnapsackSlice produce non-monotonic inclusion as budget \
changes shift allocations.";

/// The guard message of [`min_budget_for`] (the references' text).
pub const MSG_MIN_BUDGET: &str = "FindMinBudgetFor requires monotonic item inclusion. \
QuotaSlice and CountQuotaSlice produce non-monotonic inclusion as budget changes shift \
allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget simulation.";

/// The items included at `budget` that drop out when the budget shrinks by `slack`
/// tokens (.NET `GetMarginalItems`), as input positions in the placed order of the full
/// run.
///
/// * Refuses a percentage QuotaSlice ([`MSG_MARGINAL_QUOTA`]) and, unlike the references,
///   the count-quota slicers too ([`MSG_MARGINAL_COUNT_QUOTA`]): their inclusion is not
///   monotonic either (spec 04 §6.5, §7.2 rule 6), so the answer would be meaningless.
///   Both are [`Error::PipelineConfig`].
/// * `slack == 0` returns an empty list without running anything; a negative slack grows
///   the budget (allowed, as in the references).
/// * The smaller budget is `max − slack`, `target − slack`, with the same output reserve,
///   reserved slots and safety margin. The references reset slots and margin, but they
///   compare against a full run that ignores them (crate) or honours them (.NET); since
///   ctxpack honours them (D1), keeping them makes both runs comparable. An invalid
///   smaller budget fails with [`Error::InvalidBudget`].
/// * Items are matched by position (D15), so duplicate contents are told apart.
pub fn marginal_items(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    slack: i64,
) -> Result<Vec<usize>> {
    let slicer = pipeline.slicer();
    if slicer.is_quota() {
        return Err(Error::PipelineConfig(MSG_MARGINAL_QUOTA.into()));
    }
    if slicer.is_count_quota() {
        return Err(Error::PipelineConfig(MSG_MARGINAL_COUNT_QUOTA.into()));
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
/// does not include it.
///
/// * Refuses QuotaSlice, CountQuotaSlice and CountConstrainedKnapsackSlice with
///   [`Error::PipelineConfig`] ([`MSG_MIN_BUDGET`]), then checks that `target` is a
///   position of `items` and that `ceiling >= items[target].tokens`
///   ([`Error::InvalidArgument`]), in that order.
/// * Each probe is a dry run with `max = target = b`, no reserve, no slots, no margin;
///   the pipeline's configuration is all that is used.
/// * Binary search on `(lo, hi) = (tokens, ceiling)` while `hi − lo > 1`, then probe `lo`
///   and `hi` (the references' lower-bound probe: with tokens 100 and ceiling 101 the
///   answer is 100 when 100 suffices). At most ⌈log₂(ceiling − tokens)⌉ + 2 dry runs.
/// * Errors of a probe propagate (pinned items above a probe, a Throw overflow, a negative
///   probe budget for a negative-token target).
pub fn min_budget_for(
    pipeline: &Pipeline,
    items: &[ContextItem],
    target: usize,
    ceiling: i64,
) -> Result<Option<i64>> {
    let slicer = pipeline.slicer();
    if slicer.is_quota() || slicer.is_count_quota() {
        return Err(Error::PipelineConfig(MSG_MIN_BUDGET.into()));
    }
    let Some(item) = items.get(target) else {
        return Err(Error::InvalidArgument(format!(
            "target ({target}) must be the position of an element of items (0..{})",
            items.len()
        )));
    };
    let tokens = item.tokens();
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
