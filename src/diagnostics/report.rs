//! The SelectionReport of a traced run (spec 06 §9).

use crate::diagnostics::{
    CountRequirementShortfall, ExclusionReason, InclusionReason, OverflowEvent, PipelineStage,
    TraceEvent,
};
use crate::model::PrunedForm;

/// An item in the final window.
#[derive(Debug, Clone, PartialEq)]
pub struct IncludedItem {
    /// Position in the caller's input.
    pub index: usize,
    /// 1.0 for pinned items, otherwise the computed score (decision D6 in docs/decisions.md).
    pub score: f64,
    /// Why it is included.
    pub reason: InclusionReason,
}

/// An item left out of the final window.
#[derive(Debug, Clone, PartialEq)]
pub struct ExcludedItem {
    /// Position in the caller's input.
    pub index: usize,
    /// The score when it was excluded (0.0 for negative-token items).
    pub score: f64,
    /// Why it is excluded.
    pub reason: ExclusionReason,
}

/// Everything a traced run decided, and why.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SelectionReport {
    /// Stage events (and item events at Item detail), in recording order.
    pub events: Vec<TraceEvent>,
    /// Included items in final placed order.
    pub included: Vec<IncludedItem>,
    /// Excluded items, score descending (total order), ties in recording order.
    pub excluded: Vec<ExcludedItem>,
    /// Number of input items.
    pub total_candidates: usize,
    /// Sum of every input item's tokens, negative ones included (decision D18 in
    /// docs/decisions.md). Wider than a token count so that it is exact whatever the items: tracing
    /// a run never makes it fail where the untraced run succeeds.
    pub total_tokens_considered: i128,
    /// Count requirements the slicer could not meet (decision D10 in docs/decisions.md).
    pub count_requirement_shortfalls: Vec<CountRequirementShortfall>,
    /// The overflow event of a Proceed run that went over target (decision D7 in
    /// docs/decisions.md).
    pub overflow: Option<OverflowEvent>,
    /// The groups of the input, in order of their first member (the group extension,
    /// `docs/groups.md`); empty when no item has a group key.
    pub groups: Vec<GroupReport>,
    /// The variants no selection could need, pruned before slicing (the variant extension,
    /// `docs/variants.md`), in input order and form order; empty without variants.
    pub pruned_forms: Vec<PrunedForm>,
}

/// One group of the input and what happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupReport {
    /// The group key.
    pub key: String,
    /// Input positions of the members, in input order.
    pub members: Vec<usize>,
    /// Sum of the members' tokens (saturating; negative members included).
    pub tokens: i64,
    /// The group's value (from its members' scores) when it was scored; `None` for a
    /// pinned group and for one excluded at Classify.
    pub value: Option<f64>,
    /// Whether the group is in the window.
    pub decision: GroupDecision,
    /// The first pinned member, when that member pinned the whole group.
    pub pinned_by: Option<usize>,
    /// True when a slicer returned only some of the members, so that the pipeline dropped
    /// the group.
    pub partial_selection: bool,
}

/// Whether a group is in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupDecision {
    /// Every member is placed.
    Included,
    /// No member is placed.
    Excluded {
        /// The stage that excluded the group.
        stage: PipelineStage,
        /// Input position of the member whose exclusion took the group out; it carries
        /// its own reason, every other member [`ExclusionReason::GroupExcluded`].
        member_index: usize,
    },
}

impl GroupDecision {
    /// The wire name: `Included` or `Excluded`.
    pub fn name(self) -> &'static str {
        match self {
            GroupDecision::Included => "Included",
            GroupDecision::Excluded { .. } => "Excluded",
        }
    }
}
