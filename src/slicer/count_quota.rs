//! CountQuotaSlice (spec 04 §5–§6, D10): commit required counts per kind, delegate the rest
//! to an inner slicer, enforce per-kind caps.

use std::any::Any;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextKind, ScoredItem};
use crate::slicer::count_common::CountQuotas;
use crate::slicer::{SliceOutcome, Slicer};

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
#[derive(Debug, Clone)]
pub struct CountQuotaSlice {
    quotas: CountQuotas,
    inner: Arc<dyn Slicer>,
    scarcity: ScarcityBehavior,
}

impl CountQuotaSlice {
    /// Builds the slicer. Fails if the inner slicer is a KnapsackSlice (`is_knapsack()`,
    /// spec 04 §6.1 message), then if two entries name the same kind under ASCII case
    /// folding (`duplicate entry for kind "<k>"`, D10); both `invalid slicer configuration`.
    pub fn new(
        entries: Vec<CountQuotaEntry>,
        inner: Arc<dyn Slicer>,
        scarcity: ScarcityBehavior,
    ) -> Result<Self> {
        if inner.is_knapsack() {
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
