//! The engine-independent description of a conformance vector.
//!
//! Parsing turns a TOML file into these plain values; an [`crate::engine::Engine`] turns
//! them into components and runs them. Nothing here refers to ctxpack types, so an engine
//! that drives the C ABI can consume exactly the same descriptions.

use std::path::PathBuf;

/// Tier of a vector, taken from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Under a `required/` folder.
    Required,
    /// Under an `optional/` folder.
    Optional,
    /// Neither (the project's own vectors).
    Project,
}

impl Tier {
    /// Label used in reports.
    pub fn label(self) -> &'static str {
        match self {
            Tier::Required => "required",
            Tier::Optional => "optional",
            Tier::Project => "project",
        }
    }
}

/// One parsed vector file.
#[derive(Debug, Clone)]
pub struct Vector {
    /// `[test].name`.
    pub name: String,
    /// What to run and what to expect.
    pub case: Case,
}

/// Where a vector file was found.
#[derive(Debug, Clone)]
pub struct VectorFile {
    /// Full path of the file.
    pub path: PathBuf,
    /// Path shown in reports.
    pub display: String,
    /// Tier from the path.
    pub tier: Tier,
}

impl Case {
    /// True when the vector uses the variant extension (an item with variants, or the
    /// `use_variants` option of the pipeline); engines without it skip such vectors.
    pub fn uses_variants(&self) -> bool {
        let scored = |items: &[ScoredItemSpec]| items.iter().any(|s| !s.item.variants.is_empty());
        match self {
            Case::ConstructionError(_) | Case::Scoring(_) => false,
            Case::Slicing(c) => scored(&c.items),
            Case::Placing(c) => scored(&c.items),
            Case::Pipeline(c) => {
                c.items.iter().any(|i| !i.variants.is_empty()) || !c.pipeline.use_variants
            }
        }
    }

    /// True when the vector uses the item-group extension (a group key on an item, or a
    /// group option of the pipeline); engines without it skip such vectors.
    pub fn uses_groups(&self) -> bool {
        let scored = |items: &[ScoredItemSpec]| items.iter().any(|s| s.item.group.is_some());
        match self {
            Case::ConstructionError(_) | Case::Scoring(_) => false,
            Case::Slicing(c) => scored(&c.items),
            Case::Placing(c) => scored(&c.items),
            Case::Pipeline(c) => {
                c.items.iter().any(|i| i.group.is_some()) || c.pipeline.uses_group_options()
            }
        }
    }
}

/// The test a vector describes.
#[derive(Debug, Clone)]
pub enum Case {
    /// `expect_construction_error = true`: building the component must fail. `Err` holds
    /// the reason the configuration could not even be described (an invalid value such as a
    /// non-finite duration), which counts as a construction failure.
    ConstructionError(Result<Component, String>),
    /// Score every item against the whole list.
    Scoring(ScoringCase),
    /// Slice scored items with a plain budget.
    Slicing(SlicingCase),
    /// Place scored items.
    Placing(PlacingCase),
    /// Run the whole pipeline.
    Pipeline(PipelineCase),
}

/// A component whose construction is under test.
#[derive(Debug, Clone)]
pub enum Component {
    /// A scorer.
    Scorer(ScorerSpec),
    /// A slicer.
    Slicer(SlicerSpec),
    /// A placer.
    Placer(PlacerSpec),
    /// Scorer, slicer and placer of a pipeline.
    Pipeline(PipelineSpec),
}

/// A candidate item, field for field as in the vector (absent fields are `None` / empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemSpec {
    /// Identifies the item in every assertion.
    pub content: String,
    /// Caller-counted tokens (may be negative).
    pub tokens: i64,
    /// Kind; `None` means the data-model default.
    pub kind: Option<String>,
    /// Source; `None` means the data-model default.
    pub source: Option<String>,
    /// Nanoseconds since the Unix epoch, UTC.
    pub timestamp: Option<i64>,
    /// Priority.
    pub priority: Option<i64>,
    /// Tags in file order.
    pub tags: Vec<String>,
    /// `futureRelevanceHint`.
    pub future_relevance_hint: Option<f64>,
    /// Pinned flag.
    pub pinned: bool,
    /// Metadata entries (string values only), in file order.
    pub metadata: Vec<(String, String)>,
    /// `original_tokens` (extension).
    pub original_tokens: Option<i64>,
    /// `group` (extension: the item-group key).
    pub group: Option<String>,
    /// `variants` (extension: cheaper alternative forms), in file order.
    pub variants: Vec<VariantSpec>,
}

/// One variant of an item (extension).
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSpec {
    /// Its content.
    pub content: String,
    /// Its tokens.
    pub tokens: i64,
    /// Its quality.
    pub quality: f64,
}

/// An item with a pre-computed score (slicing and placing inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredItemSpec {
    /// The item.
    pub item: ItemSpec,
    /// Its score.
    pub score: f64,
}

/// A budget. Slicing vectors only set `max_tokens` and `target_tokens`.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSpec {
    /// Hard ceiling.
    pub max_tokens: i64,
    /// Soft target.
    pub target_tokens: i64,
    /// Output reserve.
    pub output_reserve: i64,
    /// Reserved slots per kind (extension `reserved_slots`), in file order.
    pub reserved_slots: Vec<(String, i64)>,
    /// Safety margin in percent (extension `estimation_safety_margin_percent`).
    pub estimation_safety_margin_percent: f64,
}

impl BudgetSpec {
    /// A budget with only a maximum and a target.
    pub fn plain(max_tokens: i64, target_tokens: i64) -> Self {
        BudgetSpec {
            max_tokens,
            target_tokens,
            output_reserve: 0,
            reserved_slots: Vec::new(),
            estimation_safety_margin_percent: 0.0,
        }
    }
}

/// A scorer and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum ScorerSpec {
    /// RecencyScorer.
    Recency,
    /// PriorityScorer.
    Priority,
    /// FrequencyScorer.
    Frequency,
    /// ReflexiveScorer.
    Reflexive,
    /// KindScorer; `None` means the default table.
    Kind(Option<Vec<(String, f64)>>),
    /// TagScorer with (tag, weight) pairs in file order.
    Tag(Vec<(String, f64)>),
    /// CompositeScorer with (child, raw weight) pairs in file order.
    Composite(Vec<(ScorerSpec, f64)>),
    /// ScaledScorer around an inner scorer.
    Scaled(Box<ScorerSpec>),
    /// DecayScorer with a fixed clock.
    Decay {
        /// The fixed "now", nanoseconds since the Unix epoch.
        reference_time: i64,
        /// The curve.
        curve: CurveSpec,
        /// Score of items without a timestamp.
        null_timestamp_score: f64,
    },
    /// MetadataTrustScorer.
    MetadataTrust {
        /// Score when `cupel:trust` is absent or unusable.
        default_score: f64,
    },
    /// MetadataKeyScorer.
    MetadataKey {
        /// Metadata key.
        key: String,
        /// Value that must match.
        value: String,
        /// Score on a match.
        boost: f64,
    },
}

/// A DecayScorer curve; durations in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub enum CurveSpec {
    /// `2^(-age/half_life)`.
    Exponential {
        /// Half-life.
        half_life_ns: i64,
    },
    /// 1 inside the window, else 0.
    Window {
        /// Window length.
        max_age_ns: i64,
    },
    /// Stepwise scores.
    Step {
        /// (max age, score) in file order.
        windows: Vec<(i64, f64)>,
    },
}

/// A slicer and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum SlicerSpec {
    /// GreedySlice.
    Greedy,
    /// KnapsackSlice.
    Knapsack {
        /// Bucket size (validated by the engine).
        bucket_size: i64,
    },
    /// QuotaSlice.
    Quota {
        /// Percentage quotas in file order.
        quotas: Vec<QuotaSpec>,
        /// Inner slicer.
        inner: Box<SlicerSpec>,
    },
    /// CountQuotaSlice.
    CountQuota {
        /// Count entries in file order.
        entries: Vec<CountEntrySpec>,
        /// Inner slicer.
        inner: Box<SlicerSpec>,
        /// Behaviour when a requirement cannot be met.
        scarcity: Scarcity,
    },
    /// CountConstrainedKnapsackSlice.
    CountConstrainedKnapsack {
        /// Count entries in file order.
        entries: Vec<CountEntrySpec>,
        /// Bucket size of the knapsack engine.
        bucket_size: i64,
        /// Behaviour when a requirement cannot be met.
        scarcity: Scarcity,
    },
}

/// One percentage quota.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaSpec {
    /// Kind.
    pub kind: String,
    /// Required percentage.
    pub require: f64,
    /// Cap percentage.
    pub cap: f64,
}

/// One count quota.
#[derive(Debug, Clone, PartialEq)]
pub struct CountEntrySpec {
    /// Kind.
    pub kind: String,
    /// Items committed in Phase 1.
    pub require_count: u64,
    /// Maximum items of the kind.
    pub cap_count: u64,
}

/// Count-quota scarcity behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scarcity {
    /// Record a shortfall and continue.
    Degrade,
    /// Fail the slice.
    Throw,
}

/// A placer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacerSpec {
    /// ChronologicalPlacer.
    Chronological,
    /// UShapedPlacer.
    UShaped,
}

/// Overflow strategy of a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowSpec {
    /// Fail the run.
    Throw,
    /// Drop what does not fit.
    Truncate,
    /// Keep everything and report an overflow event.
    Proceed,
}

/// How a group's value is computed (extension `group_value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupValueSpec {
    /// Sum of the member scores (default).
    #[default]
    Sum,
    /// Highest member score.
    Max,
    /// Mean member score.
    Mean,
}

/// A whole pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    /// The scorer (a composite when the vector lists two or more entries).
    pub scorer: ScorerSpec,
    /// The slicer.
    pub slicer: SlicerSpec,
    /// The placer.
    pub placer: PlacerSpec,
    /// Deduplication flag.
    pub deduplication: bool,
    /// Overflow strategy.
    pub overflow: OverflowSpec,
    /// Group value mode (extension `group_value`).
    pub group_value: GroupValueSpec,
    /// Pinned items first (extension `pinned_first`).
    pub pinned_first: bool,
    /// Whether the items' variants are used (extension `use_variants`, default true).
    pub use_variants: bool,
}

impl PipelineSpec {
    /// True when the pipeline uses an option of the group extension.
    pub fn uses_group_options(&self) -> bool {
        self.group_value != GroupValueSpec::Sum || self.pinned_first
    }
}

/// A scoring test.
#[derive(Debug, Clone)]
pub struct ScoringCase {
    /// The scorer under test.
    pub scorer: ScorerSpec,
    /// The items, in file order.
    pub items: Vec<ItemSpec>,
    /// (content, expected score) pairs.
    pub expected: Vec<(String, f64)>,
    /// Tolerance.
    pub epsilon: f64,
}

/// A slicing test.
#[derive(Debug, Clone)]
pub struct SlicingCase {
    /// The slicer under test.
    pub slicer: SlicerSpec,
    /// How group values are computed when the items have groups (extension).
    pub group_value: GroupValueSpec,
    /// Scored items in file order.
    pub items: Vec<ScoredItemSpec>,
    /// The plain budget handed to the slicer.
    pub budget: BudgetSpec,
    /// What must happen.
    pub expected: SliceExpectation,
}

/// Expected slicing outcome.
#[derive(Debug, Clone)]
pub enum SliceExpectation {
    /// The slice succeeds with these results.
    Selected {
        /// Selected contents (multiset).
        contents: Vec<String>,
        /// Expected number of shortfalls, when given.
        shortfall_count: Option<i64>,
        /// Expected number of cap exclusions, when given.
        cap_excluded_count: Option<i64>,
        /// Expected form of selected items (extension `selected_forms`): content → form;
        /// every selected item not listed is expected in full (form 0).
        forms: Vec<(String, usize)>,
    },
    /// The slice fails (extension `expect_run_error`).
    Error,
}

/// A placing test.
#[derive(Debug, Clone)]
pub struct PlacingCase {
    /// The placer under test.
    pub placer: PlacerSpec,
    /// How group values are computed when the items have groups (extension).
    pub group_value: GroupValueSpec,
    /// Scored items in file order.
    pub items: Vec<ScoredItemSpec>,
    /// Expected contents in placed order.
    pub expected: Vec<String>,
}

/// A pipeline test.
#[derive(Debug, Clone)]
pub struct PipelineCase {
    /// The pipeline.
    pub pipeline: PipelineSpec,
    /// Input items in file order.
    pub items: Vec<ItemSpec>,
    /// The caller's budget.
    pub budget: BudgetSpec,
    /// What must happen.
    pub expected: PipelineExpectation,
    /// Score tolerance for diagnostics.
    pub epsilon: f64,
}

/// Expected pipeline outcome.
#[derive(Debug, Clone)]
pub enum PipelineExpectation {
    /// The run succeeds.
    Output {
        /// Contents in placed order.
        contents: Vec<String>,
        /// The form of each placed item (extension `form`, default 0), parallel.
        forms: Vec<usize>,
        /// `[expected.diagnostics]`, when present (boxed: most vectors have none).
        diagnostics: Option<Box<DiagnosticsExpectation>>,
        /// `[expected.overflow]` (extension), when present.
        overflow: Option<OverflowExpectation>,
    },
    /// The run fails (extension `expect_run_error`).
    Error,
}

/// `[expected.diagnostics]`; each part is checked only when present.
#[derive(Debug, Clone, Default)]
pub struct DiagnosticsExpectation {
    /// `total_candidates`.
    pub total_candidates: Option<i64>,
    /// `total_tokens_considered`.
    pub total_tokens_considered: Option<i64>,
    /// `[[expected.diagnostics.included]]`.
    pub included: Option<Vec<IncludedExpectation>>,
    /// `[[expected.diagnostics.excluded]]`.
    pub excluded: Option<Vec<ExcludedExpectation>>,
    /// `[[expected.diagnostics.shortfalls]]` (extension).
    pub shortfalls: Option<Vec<ShortfallSpec>>,
    /// `[[expected.diagnostics.groups]]` (extension).
    pub groups: Option<Vec<GroupExpectation>>,
    /// `[[expected.diagnostics.pruned_forms]]` (extension): (content, form, dominated_by).
    pub pruned_forms: Option<Vec<(String, usize, usize)>>,
}

/// One expected entry of the report's group listing (extension).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupExpectation {
    /// The group key.
    pub key: String,
    /// Member contents in input order.
    pub members: Vec<String>,
    /// Sum of the members' tokens, when given.
    pub tokens: Option<i64>,
    /// `Included` or `Excluded`.
    pub decision: String,
    /// The excluding stage, when given.
    pub stage: Option<String>,
    /// Content of the member whose exclusion took the group out, when given.
    pub member: Option<String>,
    /// Content of the member that pinned the group, when given.
    pub pinned_by: Option<String>,
    /// Whether a slicer returned the group in part, when given.
    pub partial_selection: Option<bool>,
}

/// One expected included entry.
#[derive(Debug, Clone)]
pub struct IncludedExpectation {
    /// Content.
    pub content: String,
    /// Score, when given.
    pub score: Option<f64>,
    /// Inclusion reason name, when given.
    pub reason: Option<String>,
    /// Reason fields given in the vector (extension: the `Downgraded` reason's), in file
    /// order.
    pub fields: Vec<(String, FieldValue)>,
}

/// One expected excluded entry.
#[derive(Debug, Clone)]
pub struct ExcludedExpectation {
    /// Content.
    pub content: String,
    /// Score at exclusion.
    pub score: f64,
    /// Exclusion reason name.
    pub reason: String,
    /// Variant fields given in the vector, in file order.
    pub fields: Vec<(String, FieldValue)>,
}

/// A count-requirement shortfall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortfallSpec {
    /// Kind.
    pub kind: String,
    /// Required count.
    pub required_count: u64,
    /// Satisfied count.
    pub satisfied_count: u64,
}

/// `[expected.overflow]` (extension).
#[derive(Debug, Clone)]
pub struct OverflowExpectation {
    /// Tokens over budget; 0 means no overflow event may be produced.
    pub tokens_over_budget: i64,
    /// Contents of the overflowing (merged) items in merged order, when given.
    pub contents: Option<Vec<String>>,
}

/// A value of a reason field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Integer field.
    Int(i64),
    /// Float field.
    Float(f64),
    /// String field.
    Str(String),
}

impl std::fmt::Display for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldValue::Int(v) => write!(f, "{v}"),
            FieldValue::Float(v) => write!(f, "{v:?}"),
            FieldValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}
