//! CountConstrainedKnapsackSlice (spec 04 §7): count quotas with a knapsack engine for
//! Phase 2 and a score re-sort before the caps.

use std::any::Any;

use crate::error::Result;
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::count_common::{score_desc, CountQuotas};
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
/// A [`crate::Error::TableTooLarge`] from the knapsack propagates. `is_knapsack()` is false.
#[derive(Debug, Clone)]
pub struct CountConstrainedKnapsackSlice {
    quotas: CountQuotas,
    knapsack: KnapsackSlice,
    scarcity: ScarcityBehavior,
}

impl CountConstrainedKnapsackSlice {
    /// Builds the slicer; fails only when two entries name the same kind under ASCII case
    /// folding (`invalid slicer configuration: duplicate entry for kind "<k>"`, D10).
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

    fn count_caps(&self) -> &[(ContextKind, usize)] {
        self.quotas.caps()
    }

    fn is_count_quota(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
