//! Property names and enum spellings of the policy JSON (spec 07 §1.4, §3 and the ctxpack
//! extensions), shared by the reader and the writer.

use crate::model::OverflowStrategy;
use crate::policy::PlacerType;
use crate::slicer::ScarcityBehavior;

/// A JSON enumeration: its spellings (written as given, read ASCII case-insensitively) and
/// how many of them, from the start, also have a .NET integer ordinal.
pub(super) struct JsonEnum {
    /// The name used in error messages.
    pub what: &'static str,
    /// Spellings, ordinal order first, then ctxpack extensions.
    pub names: &'static [&'static str],
    /// The first `ordinals` names are also accepted as integers `0..ordinals`.
    pub ordinals: usize,
}

pub(super) const SCORER_TYPES: JsonEnum = JsonEnum {
    what: "scorer type",
    names: &[
        "recency",
        "priority",
        "kind",
        "tag",
        "frequency",
        "reflexive",
        "scaled",
        "composite",
        "decay",
        "metadataTrust",
        "metadataKey",
    ],
    ordinals: 7,
};

pub(super) const SLICER_TYPES: JsonEnum = JsonEnum {
    what: "slicer type",
    names: &[
        "greedy",
        "knapsack",
        "stream",
        "countQuota",
        "countConstrainedKnapsack",
    ],
    ordinals: 3,
};

/// The values of `PLACER_TYPES`, `OVERFLOW_STRATEGIES` and `SCARCITY`, index for index.
pub(super) const PLACER_VALUES: [PlacerType; 2] = [PlacerType::Chronological, PlacerType::UShaped];
pub(super) const OVERFLOW_VALUES: [OverflowStrategy; 3] = [
    OverflowStrategy::Throw,
    OverflowStrategy::Truncate,
    OverflowStrategy::Proceed,
];
pub(super) const SCARCITY_VALUES: [ScarcityBehavior; 2] =
    [ScarcityBehavior::Degrade, ScarcityBehavior::Throw];

/// The name of `value` in `e`, whose values are `values` (index for index).
pub(super) fn name_of<T: PartialEq>(e: &JsonEnum, values: &[T], value: &T) -> &'static str {
    let i = values
        .iter()
        .position(|v| v == value)
        .expect("every value has a name");
    e.names[i]
}

pub(super) const PLACER_TYPES: JsonEnum = JsonEnum {
    what: "placer type",
    names: &["chronological", "uShaped"],
    ordinals: 2,
};

pub(super) const OVERFLOW_STRATEGIES: JsonEnum = JsonEnum {
    what: "overflow strategy",
    names: &["throw", "truncate", "proceed"],
    ordinals: 3,
};

pub(super) const SCARCITY: JsonEnum = JsonEnum {
    what: "scarcity behavior",
    names: &["degrade", "throw"],
    ordinals: 0,
};

pub(super) const CURVE_TYPES: JsonEnum = JsonEnum {
    what: "decay curve type",
    names: &["exponential", "window", "step"],
    ordinals: 0,
};

/// Top-level properties, in writing order (.NET order, extensions after their relatives).
pub(super) const POLICY_PROPS: &[&str] = &[
    "scorers",
    "slicerType",
    "placerType",
    "deduplicationEnabled",
    "overflowStrategy",
    "knapsackBucketSize",
    "knapsackTableLimitBytes",
    "streamBatchSize",
    "quotas",
    "countQuotas",
    "scarcity",
    "innerSlicer",
    "groupValue",
    "pinnedFirst",
    "name",
    "description",
];

/// Properties of a nested slicer object (`innerSlicer`).
pub(super) const SLICER_PROPS: &[&str] = &[
    "slicerType",
    "knapsackBucketSize",
    "knapsackTableLimitBytes",
    "quotas",
    "countQuotas",
    "scarcity",
    "innerSlicer",
];

/// ScorerEntry properties, in writing order.
pub(super) const ENTRY_PROPS: &[&str] = &[
    "type",
    "weight",
    "kindWeights",
    "tagWeights",
    "innerScorer",
    "children",
    "curve",
    "nullTimestampScore",
    "defaultScore",
    "key",
    "value",
    "boost",
];

/// Extension ScorerEntry properties and the scorer type (index into `SCORER_TYPES`) that
/// owns each; they are rejected on every other type.
pub(super) const OWNED_ENTRY_PROPS: &[(&str, usize)] = &[
    ("innerScorer", SCALED),
    ("children", COMPOSITE),
    ("curve", DECAY),
    ("nullTimestampScore", DECAY),
    ("defaultScore", METADATA_TRUST),
    ("key", METADATA_KEY),
    ("value", METADATA_KEY),
    ("boost", METADATA_KEY),
];

pub(super) const QUOTA_PROPS: &[&str] = &["kind", "minPercent", "maxPercent"];
pub(super) const COUNT_QUOTA_PROPS: &[&str] = &["kind", "requireCount", "capCount"];
pub(super) const CURVE_PROPS: &[&str] = &["type", "halfLifeNanos", "maxAgeNanos", "windows"];
pub(super) const WINDOW_PROPS: &[&str] = &["maxAgeNanos", "score"];

// Indices into SCORER_TYPES.
pub(super) const RECENCY: usize = 0;
pub(super) const PRIORITY: usize = 1;
pub(super) const KIND: usize = 2;
pub(super) const TAG: usize = 3;
pub(super) const FREQUENCY: usize = 4;
pub(super) const REFLEXIVE: usize = 5;
pub(super) const SCALED: usize = 6;
pub(super) const COMPOSITE: usize = 7;
pub(super) const DECAY: usize = 8;
pub(super) const METADATA_TRUST: usize = 9;
pub(super) const METADATA_KEY: usize = 10;

// Indices into SLICER_TYPES.
pub(super) const GREEDY: usize = 0;
pub(super) const KNAPSACK: usize = 1;
pub(super) const STREAM: usize = 2;
pub(super) const COUNT_QUOTA: usize = 3;
pub(super) const COUNT_CONSTRAINED_KNAPSACK: usize = 4;

// Indices into CURVE_TYPES.
pub(super) const EXPONENTIAL: usize = 0;
pub(super) const WINDOW: usize = 1;
pub(super) const STEP: usize = 2;
