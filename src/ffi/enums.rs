//! The C enumerations. Arguments and struct fields that carry them are `int32_t`, so an
//! out-of-range value from the caller is a `CTXPACK_INVALID_ARGUMENT` status instead of
//! undefined behaviour; the enums give the values their names.

use crate::analytics::{ItemStatus, QuotaMode};
use crate::diagnostics::{
    DowngradeCause, ExclusionReason, GroupDecision, InclusionReason, PipelineStage, TraceDetail,
};
use crate::ffi::status::{FfiError, FfiResult};
use crate::model::{GroupValue, OverflowStrategy};
use crate::policy::JsonWarningKind;
use crate::slicer::ScarcityBehavior;

/// What the Place stage does when the selection exceeds `target_tokens`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_overflow_strategy {
    /// Fail the run with `CTXPACK_OVERFLOW` (the default).
    Throw = 0,
    /// Drop non-pinned items that do not fit.
    Truncate = 1,
    /// Keep everything and report an overflow event.
    Proceed = 2,
}

/// How much a run records for its selection report.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_trace_detail {
    /// No report (the default; nothing is recorded or allocated for diagnostics).
    None = 0,
    /// Stage events, included and excluded items, totals, shortfalls.
    Stage = 1,
    /// As `STAGE`, plus one item event per inclusion and exclusion.
    Item = 2,
}

/// The format of a chat request (`ctxpack_chat_trim`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_chat_format {
    /// An OpenAI Chat Completions request body (`POST /v1/chat/completions`).
    Openai = 0,
    /// An Anthropic Messages request body (`POST /v1/messages`).
    Anthropic = 1,
}

/// Why an item is in the final window.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_inclusion_reason {
    /// Selected by score (or kept by truncation / proceed).
    Scored = 1,
    /// The item is pinned.
    Pinned = 2,
    /// The item has zero tokens.
    ZeroToken = 3,
    /// The item is in the window as one of its cheaper variants instead of in full
    /// (docs/variants.md): `ctxpack_included_entry` has the form placed, the full and
    /// chosen tokens and the cause. Only items with variants can have it; a caller whose
    /// `ctxpack_included_entry` predates those fields receives SCORED there instead.
    Downgraded = 4,
}

/// Why an item is in the window as a cheaper variant (`ctxpack_included_entry.cause`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_downgrade_cause {
    /// The entry's reason is not DOWNGRADED.
    None = 0,
    /// The full form needs more tokens than the form placed plus everything left unused:
    /// it cannot be put back without removing something else.
    BudgetExceeded = 1,
    /// The full form would fit in what is left unused, but the slicer's rule chose the
    /// cheaper form (the knapsack's optimum, a quota's per-kind budget, a count quota's
    /// commitment, a group's shared level).
    SlicerChoice = 2,
    /// The Truncate overflow strategy moved the item to a cheaper form so that the window
    /// fits the target.
    Truncated = 3,
}

/// Why an item is not in the final window (spec 06 §7). The fields that go with each
/// reason are in `ctxpack_excluded_entry`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_exclusion_reason {
    /// A reason this version cannot name; its wire name is in `name`.
    Unknown = 0,
    /// Did not fit: `item_tokens`, `available_tokens`.
    BudgetExceeded = 1,
    /// Reserved by the spec: `reason_score`, `threshold`.
    ScoredTooLow = 2,
    /// Lost to identical content: `deduplicated_against`.
    Deduplicated = 3,
    /// Reserved by the spec: `kind`, `cap`, `actual`.
    QuotaCapExceeded = 4,
    /// Reserved by the spec: `displaced_by_kind`.
    QuotaRequireDisplaced = 5,
    /// Negative token count, dropped at Classify: `tokens`.
    NegativeTokens = 6,
    /// The room was taken by pinned items: `displaced_by`.
    PinnedOverride = 7,
    /// Reserved by the spec: `filter_name`.
    Filtered = 8,
    /// A count-quota cap was reached: `kind`, `count_cap`, `count`.
    CountCapExceeded = 9,
    /// Defined for wire compatibility: `kind`.
    CountRequireCandidatesExhausted = 10,
    /// The item's group was left out because another member was (docs/groups.md):
    /// `group`, `member_index`, `member_content`, `member_reason`. A caller whose
    /// `ctxpack_excluded_entry` predates these fields receives `UNKNOWN` named
    /// `"GroupExcluded"` instead.
    GroupExcluded = 11,
}

/// How a group's value is computed from its members' scores (docs/groups.md).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_group_value {
    /// The sum of the members' scores (the default).
    Sum = 0,
    /// The highest member score.
    Max = 1,
    /// The mean of the members' scores.
    Mean = 2,
}

/// Whether a group of the report is in the window (`ctxpack_group_entry.decision`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_group_decision {
    /// Every member is placed.
    Included = 1,
    /// No member is placed.
    Excluded = 2,
}

/// A traced pipeline stage (Sort has no event).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_pipeline_stage {
    /// Split pinned, scoreable and negative-token items.
    Classify = 0,
    /// Score the scoreable items.
    Score = 1,
    /// Remove duplicate contents.
    Deduplicate = 2,
    /// Select what fits.
    Slice = 3,
    /// Merge, handle overflow, order.
    Place = 4,
}

/// The curve of a decay scorer; see `ctxpack_decay_config`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_decay_curve_kind {
    /// `2^(-age / half_life_ns)`.
    Exponential = 0,
    /// 1.0 while `age < max_age_ns`, then 0.0.
    Window = 1,
    /// The score of the first window with `age < max_age_ns`, else the last window's.
    Step = 2,
}

/// The clock of a decay scorer, read once per run.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_clock_kind {
    /// The system clock.
    System = 0,
    /// A fixed instant, `fixed_now_ns`.
    Fixed = 1,
}

/// What a count-quota slicer does when a required kind has too few candidates.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_scarcity {
    /// Select what exists and report a shortfall.
    Degrade = 0,
    /// Fail the run with `CTXPACK_COUNT_REQUIREMENT_UNMET`.
    Throw = 1,
}

/// Whether a variant of a sensitivity comparison included an item.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_item_status {
    /// The item is among the variant's included items.
    Included = 1,
    /// The item is among the variant's excluded items.
    Excluded = 2,
}

/// How a quota constraint is measured (`ctxpack_kind_quota_utilization.mode`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_quota_mode {
    /// Percent of the target's tokens (a percentage quota slicer).
    Percentage = 0,
    /// Number of items (the count-quota slicers).
    Count = 1,
}

/// What a lenient read of policy or budget JSON did (`ctxpack_json_warning.kind`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ctxpack_json_warning_kind {
    /// A property this version does not know (or a wrongly-cased name) was ignored.
    UnknownProperty = 1,
    /// A scorer entry without `type` was read as `recency`, as .NET reads it.
    MissingScorerType = 2,
    /// A `kindWeights` or `reservedSlots` key repeated an earlier kind with other letter
    /// case; the last value was kept under the first spelling.
    RepeatedKind = 3,
    /// A budget without `maxTokens` or `targetTokens` had it read as 0.
    MissingBudgetField = 4,
}

impl From<JsonWarningKind> for ctxpack_json_warning_kind {
    fn from(kind: JsonWarningKind) -> Self {
        match kind {
            JsonWarningKind::UnknownProperty => Self::UnknownProperty,
            JsonWarningKind::MissingScorerType => Self::MissingScorerType,
            JsonWarningKind::RepeatedKind => Self::RepeatedKind,
            JsonWarningKind::MissingBudgetField => Self::MissingBudgetField,
        }
    }
}

/// A C enumeration received as `int32_t`.
pub(crate) trait CEnum: Copy + 'static {
    /// Every value, in numeric order.
    const ALL: &'static [Self];
    /// The C type name, for messages.
    const NAME: &'static str;
    /// The numeric value.
    fn value(self) -> i32;
}

/// Converts an `int32_t` argument into an enumeration value.
pub(crate) fn enum_arg<T: CEnum>(value: i32, what: &str) -> FfiResult<T> {
    T::ALL
        .iter()
        .copied()
        .find(|v| v.value() == value)
        .ok_or_else(|| {
            FfiError::invalid(format!(
                "{what} is {value}, not a {} value (0 to {})",
                T::NAME,
                T::ALL.len() - 1
            ))
        })
}

macro_rules! c_enum {
    ($t:ident, [$($v:ident),+]) => {
        impl CEnum for $t {
            const ALL: &'static [Self] = &[$($t::$v),+];
            const NAME: &'static str = stringify!($t);
            fn value(self) -> i32 {
                self as i32
            }
        }
    };
}

c_enum!(ctxpack_overflow_strategy, [Throw, Truncate, Proceed]);
c_enum!(ctxpack_trace_detail, [None, Stage, Item]);
c_enum!(ctxpack_decay_curve_kind, [Exponential, Window, Step]);
c_enum!(ctxpack_clock_kind, [System, Fixed]);
c_enum!(ctxpack_scarcity, [Degrade, Throw]);
c_enum!(ctxpack_chat_format, [Openai, Anthropic]);
c_enum!(ctxpack_group_value, [Sum, Max, Mean]);

impl From<ctxpack_group_value> for GroupValue {
    fn from(v: ctxpack_group_value) -> Self {
        match v {
            ctxpack_group_value::Sum => GroupValue::Sum,
            ctxpack_group_value::Max => GroupValue::Max,
            ctxpack_group_value::Mean => GroupValue::Mean,
        }
    }
}

impl From<GroupDecision> for ctxpack_group_decision {
    fn from(d: GroupDecision) -> Self {
        match d {
            GroupDecision::Included => ctxpack_group_decision::Included,
            GroupDecision::Excluded { .. } => ctxpack_group_decision::Excluded,
        }
    }
}

impl From<ctxpack_overflow_strategy> for OverflowStrategy {
    fn from(v: ctxpack_overflow_strategy) -> Self {
        match v {
            ctxpack_overflow_strategy::Throw => OverflowStrategy::Throw,
            ctxpack_overflow_strategy::Truncate => OverflowStrategy::Truncate,
            ctxpack_overflow_strategy::Proceed => OverflowStrategy::Proceed,
        }
    }
}

impl From<ctxpack_trace_detail> for TraceDetail {
    fn from(v: ctxpack_trace_detail) -> Self {
        match v {
            ctxpack_trace_detail::None => TraceDetail::None,
            ctxpack_trace_detail::Stage => TraceDetail::Stage,
            ctxpack_trace_detail::Item => TraceDetail::Item,
        }
    }
}

impl From<ctxpack_scarcity> for ScarcityBehavior {
    fn from(v: ctxpack_scarcity) -> Self {
        match v {
            ctxpack_scarcity::Degrade => ScarcityBehavior::Degrade,
            ctxpack_scarcity::Throw => ScarcityBehavior::Throw,
        }
    }
}

impl From<InclusionReason> for ctxpack_inclusion_reason {
    fn from(r: InclusionReason) -> Self {
        match r {
            InclusionReason::Scored => ctxpack_inclusion_reason::Scored,
            InclusionReason::Pinned => ctxpack_inclusion_reason::Pinned,
            InclusionReason::ZeroToken => ctxpack_inclusion_reason::ZeroToken,
            InclusionReason::Downgraded { .. } => ctxpack_inclusion_reason::Downgraded,
        }
    }
}

impl From<DowngradeCause> for ctxpack_downgrade_cause {
    fn from(c: DowngradeCause) -> Self {
        match c {
            DowngradeCause::BudgetExceeded => ctxpack_downgrade_cause::BudgetExceeded,
            DowngradeCause::SlicerChoice => ctxpack_downgrade_cause::SlicerChoice,
            DowngradeCause::Truncated => ctxpack_downgrade_cause::Truncated,
        }
    }
}

impl From<&ExclusionReason> for ctxpack_exclusion_reason {
    fn from(r: &ExclusionReason) -> Self {
        use ctxpack_exclusion_reason as C;
        match r {
            ExclusionReason::BudgetExceeded { .. } => C::BudgetExceeded,
            ExclusionReason::ScoredTooLow { .. } => C::ScoredTooLow,
            ExclusionReason::Deduplicated { .. } => C::Deduplicated,
            ExclusionReason::QuotaCapExceeded { .. } => C::QuotaCapExceeded,
            ExclusionReason::QuotaRequireDisplaced { .. } => C::QuotaRequireDisplaced,
            ExclusionReason::NegativeTokens { .. } => C::NegativeTokens,
            ExclusionReason::PinnedOverride { .. } => C::PinnedOverride,
            ExclusionReason::Filtered { .. } => C::Filtered,
            ExclusionReason::CountCapExceeded { .. } => C::CountCapExceeded,
            ExclusionReason::CountRequireCandidatesExhausted { .. } => {
                C::CountRequireCandidatesExhausted
            }
            ExclusionReason::GroupExcluded { .. } => C::GroupExcluded,
            ExclusionReason::Unknown { .. } => C::Unknown,
        }
    }
}

impl From<ItemStatus> for ctxpack_item_status {
    fn from(s: ItemStatus) -> Self {
        match s {
            ItemStatus::Included => ctxpack_item_status::Included,
            ItemStatus::Excluded => ctxpack_item_status::Excluded,
        }
    }
}

impl From<QuotaMode> for ctxpack_quota_mode {
    fn from(m: QuotaMode) -> Self {
        match m {
            QuotaMode::Percentage => ctxpack_quota_mode::Percentage,
            QuotaMode::Count => ctxpack_quota_mode::Count,
        }
    }
}

impl From<PipelineStage> for ctxpack_pipeline_stage {
    fn from(s: PipelineStage) -> Self {
        match s {
            PipelineStage::Classify => ctxpack_pipeline_stage::Classify,
            PipelineStage::Score => ctxpack_pipeline_stage::Score,
            PipelineStage::Deduplicate => ctxpack_pipeline_stage::Deduplicate,
            PipelineStage::Slice => ctxpack_pipeline_stage::Slice,
            PipelineStage::Place => ctxpack_pipeline_stage::Place,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_are_errors() {
        assert_eq!(
            enum_arg::<ctxpack_trace_detail>(2, "t").unwrap(),
            ctxpack_trace_detail::Item
        );
        let e = enum_arg::<ctxpack_overflow_strategy>(3, "overflow_strategy").unwrap_err();
        assert_eq!(
            e.status,
            crate::ffi::status::ctxpack_status::CTXPACK_INVALID_ARGUMENT
        );
        assert!(e.message.contains("overflow_strategy is 3"));
        assert!(enum_arg::<ctxpack_scarcity>(-1, "s").is_err());
    }
}
