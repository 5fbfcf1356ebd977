//! Policies (spec 07 Part a): a whole pipeline configuration as plain data.
//!
//! A [`Policy`] describes scorers (with weights and configuration), the slicer, the placer,
//! deduplication and the overflow strategy, plus a name and a description. It never holds a
//! budget: callers supply the budget with each run. A policy
//!
//! * builds a [`Pipeline`] with [`Policy::build_pipeline`] (component constructors report
//!   their own errors, exactly as when building by hand);
//! * can be recovered from a pipeline built from built-in components with
//!   [`Policy::from_pipeline`];
//! * reads and writes the JSON form of the .NET package (`Wollax.Cupel.Json`), extended
//!   compatibly for what that format cannot express (see `docs/policy-json.md`): read
//!   leniently as .NET reads it, with [`JsonWarning`]s for what was ignored or filled in,
//!   or strictly ([`JsonReadOptions`]); its scorer entries may name host scorers
//!   registered in a [`ScorerRegistry`];
//! * comes ready-made as one of the seven [`Preset`]s of spec 07 §2.
//!
//! The same module reads and writes the .NET JSON form of a budget
//! ([`ContextBudget::from_json`], [`ContextBudget::to_json`]).
//!
//! Structural problems of a policy (those the .NET `CupelPolicy` constructor catches, and
//! every JSON problem) fail with [`Error::InvalidPolicy`]; the message starts with the JSON
//! path of the bad field (`scorers[2].weight: must be positive and finite (got -1)`), `$`
//! naming the document itself. Budget JSON fails the same way with
//! [`Error::InvalidBudget`].

use crate::diagnostics::SelectionReport;
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem, ContextKind, GroupValue, OverflowStrategy};
use crate::pipeline::Pipeline;
use crate::scorer::DecayCurve;
use crate::slicer::ScarcityBehavior;

mod budget_json;
mod build;
mod json_names;
mod json_options;
mod json_read;
mod json_text;
mod json_value;
mod json_write;
mod presets;
mod reflect;
mod registry;
mod validate;

pub use json_options::{JsonRead, JsonReadOptions, JsonWarning, JsonWarningKind};
pub use presets::Preset;
pub use registry::{RegisteredScorer, ScorerRegistry};

/// A declarative, budget-free description of a pipeline (spec 07 §1).
///
/// Fields are public so a policy can be written as a literal; [`Policy::validate`] (run by
/// every conversion) checks the structural rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Weighted scorers; each becomes one term of a composite scorer (policy step M1 in
    /// docs/decisions.md). At least one.
    pub scorers: Vec<ScorerEntry>,
    /// The slicer and its configuration (default: greedy).
    pub slicer: SlicerSpec,
    /// The placer (default: chronological).
    pub placer: PlacerType,
    /// Whether duplicate contents are removed (default: true).
    pub deduplication: bool,
    /// What to do when the selection exceeds the target (default: throw).
    pub overflow_strategy: OverflowStrategy,
    /// How a group's value is computed from its members' scores (extension, default sum;
    /// `docs/groups.md`).
    pub group_value: GroupValue,
    /// Place pinned items first, in input order (extension, default off).
    pub pinned_first: bool,
    /// Use the items' variants (extension, default on; `docs/variants.md`). Off, every item
    /// is selected in full or not at all.
    pub use_variants: bool,
    /// Optional name, free text.
    pub name: Option<String>,
    /// Optional description, free text.
    pub description: Option<String>,
}

/// One weighted scorer of a policy (.NET `ScorerEntry`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScorerEntry {
    /// Relative weight in the enclosing composite; must be finite and > 0. The weight of a scaled
    /// scorer's inner entry is validated but has no effect (policy step M2 in docs/decisions.md).
    pub weight: f64,
    /// Which scorer, with its configuration.
    pub scorer: ScorerSpec,
}

/// A built-in scorer and its configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum ScorerSpec {
    /// RecencyScorer (JSON `recency`).
    Recency,
    /// PriorityScorer (JSON `priority`).
    Priority,
    /// KindScorer (JSON `kind`): `None` uses the built-in default table.
    Kind {
        /// Weight per kind (>= 0 and finite, checked when the pipeline is built).
        weights: Option<Vec<(ContextKind, f64)>>,
    },
    /// TagScorer (JSON `tag`).
    Tag {
        /// Weight per tag, case-sensitive (>= 0 and finite, checked when built).
        weights: Vec<(String, f64)>,
    },
    /// FrequencyScorer (JSON `frequency`).
    Frequency,
    /// ReflexiveScorer (JSON `reflexive`).
    Reflexive,
    /// ScaledScorer over an inner scorer (JSON `scaled` with `innerScorer`).
    Scaled {
        /// The inner entry; its weight is ignored.
        inner: Box<ScorerEntry>,
    },
    /// A nested CompositeScorer (extension: JSON `composite` with `children`).
    Composite {
        /// The weighted children; at least one.
        children: Vec<ScorerEntry>,
    },
    /// DecayScorer on the system clock (extension: JSON `decay`).
    Decay {
        /// The curve (durations in nanoseconds).
        curve: DecayCurve,
        /// Score of items without a timestamp, in [0, 1] (default 0.5, decision D16 in
        /// docs/decisions.md).
        null_timestamp_score: f64,
    },
    /// MetadataTrustScorer (extension: JSON `metadataTrust`).
    MetadataTrust {
        /// Score when `cupel:trust` is absent or unusable, in [0, 1] (default 0.5, decision D16 in
        /// docs/decisions.md).
        default_score: f64,
    },
    /// MetadataKeyScorer (extension: JSON `metadataKey`).
    MetadataKey {
        /// The metadata key.
        key: String,
        /// The value that must match.
        value: String,
        /// The score on a match (finite, > 0).
        boost: f64,
    },
    /// A scorer the host registered under a type name (JSON: that name as `type`), read
    /// through a [`ScorerRegistry`].
    Registered(RegisteredScorer),
}

/// A built-in slicer and its configuration. Wrappers nest: a percentage quota wraps any
/// slicer except another percentage quota or a stream slicer.
#[derive(Debug, Clone, PartialEq)]
pub enum SlicerSpec {
    /// GreedySlice (JSON `greedy`).
    Greedy,
    /// KnapsackSlice (JSON `knapsack`).
    Knapsack(KnapsackSpec),
    /// The .NET StreamSlice (JSON `stream`). ctxpack runs synchronously, so a pipeline built from
    /// it uses GreedySlice, as .NET synchronous execution does (policy step M3 in
    /// docs/decisions.md). Top level only.
    Stream {
        /// Micro-batch size (> 0; absent means 32). Kept for JSON round trips only.
        batch_size: Option<i64>,
    },
    /// QuotaSlice: percentage quotas around an inner slicer (JSON `quotas`).
    Quota {
        /// The entries, in order; at least one. Duplicate kinds are merged at build time.
        entries: Vec<PercentQuota>,
        /// The wrapped slicer.
        inner: Box<SlicerSpec>,
    },
    /// CountQuotaSlice (extension: JSON `countQuota`).
    CountQuota {
        /// The count entries, in order.
        entries: Vec<CountQuota>,
        /// The inner slicer (must not be a knapsack; default greedy in JSON).
        inner: Box<SlicerSpec>,
        /// What to do when a required kind has too few candidates.
        scarcity: ScarcityBehavior,
    },
    /// CountConstrainedKnapsackSlice (extension: JSON `countConstrainedKnapsack`).
    CountConstrainedKnapsack {
        /// The count entries, in order.
        entries: Vec<CountQuota>,
        /// The knapsack engine of Phase 2.
        knapsack: KnapsackSpec,
        /// What to do when a required kind has too few candidates.
        scarcity: ScarcityBehavior,
    },
}

/// Configuration of a knapsack engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KnapsackSpec {
    /// Bucket size (> 0); `None` means the default of 100.
    pub bucket_size: Option<i64>,
    /// Keep-table memory limit in bytes (> 0, extension); `None` means 256 MiB (decision D11 in
    /// docs/decisions.md).
    pub table_limit_bytes: Option<u64>,
}

/// One percentage quota of a policy (.NET `QuotaEntry`): at least one bound, each in
/// [0, 100], `min <= max`. An absent minimum means 0, an absent maximum 100.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentQuota {
    /// The kind.
    pub kind: ContextKind,
    /// Minimum share of the target, in percent.
    pub min_percent: Option<f64>,
    /// Maximum share of the target, in percent.
    pub max_percent: Option<f64>,
}

/// One count quota of a policy; validated by `CountQuotaEntry::new` when built.
#[derive(Debug, Clone, PartialEq)]
pub struct CountQuota {
    /// The kind.
    pub kind: ContextKind,
    /// Items of the kind committed in Phase 1.
    pub require_count: usize,
    /// Maximum items of the kind in the result.
    pub cap_count: usize,
}

/// The built-in placers (JSON `chronological`, `uShaped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlacerType {
    /// ChronologicalPlacer (the default).
    #[default]
    Chronological,
    /// UShapedPlacer.
    UShaped,
}

impl ScorerEntry {
    /// An entry with `weight` and `scorer`.
    pub fn new(weight: f64, scorer: ScorerSpec) -> Self {
        Self { weight, scorer }
    }
}

impl Policy {
    /// A policy with `scorers` and every other field at its default: greedy slicer,
    /// chronological placer, deduplication on, overflow Throw, group value sum, pinned
    /// items placed like the others, variants used, no name or description.
    pub fn new(scorers: Vec<ScorerEntry>) -> Self {
        Self {
            scorers,
            slicer: SlicerSpec::Greedy,
            placer: PlacerType::Chronological,
            deduplication: true,
            overflow_strategy: OverflowStrategy::Throw,
            group_value: GroupValue::Sum,
            pinned_first: false,
            use_variants: true,
            name: None,
            description: None,
        }
    }

    /// The policy of a preset looked up by name (see [`Preset::from_name`] for the accepted
    /// spellings); an unknown name fails with [`Error::InvalidArgument`].
    ///
    /// ```
    /// use ctxpack::policy::{PlacerType, Policy, ScorerSpec};
    /// use ctxpack::{ContextBudget, ContextItem, ErrorCode};
    ///
    /// let rag = Policy::preset("rag")?;
    /// assert_eq!(rag.name.as_deref(), Some("Rag"));
    /// assert_eq!(rag.placer, PlacerType::UShaped);
    /// assert_eq!(rag.scorers[0].scorer, ScorerSpec::Reflexive);
    /// assert_eq!(Policy::preset("Document_QA")?, Policy::preset("document-qa")?);
    ///
    /// let items = vec![
    ///     ContextItem::builder("a passage", 40).future_relevance_hint(0.9).build()?,
    ///     ContextItem::builder("another passage", 80).future_relevance_hint(0.2).build()?,
    /// ];
    /// let selection = rag.build_pipeline()?.run(&items, &ContextBudget::new(100, 60)?)?;
    /// assert_eq!(selection.indices, vec![0]);
    ///
    /// let err = Policy::preset("no-such-preset").unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::InvalidArgument);
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    pub fn preset(name: &str) -> Result<Self> {
        Ok(Preset::from_name(name)?.policy())
    }

    /// Checks the structural rules (spec 07 §1.1–§1.3 and the extensions' shapes). Values
    /// the component constructors validate (kind weights, quota sums, count entries, decay
    /// curves, …) are checked by [`Policy::build_pipeline`] instead.
    pub fn validate(&self) -> Result<()> {
        validate::policy(self)
    }

    /// Builds the pipeline this policy describes (policy steps M1–M6 in docs/decisions.md): every
    /// scorer entry becomes a term of a composite scorer, percentage quotas wrap their slicer,
    /// decay scorers read the system clock. Fails with [`Error::InvalidPolicy`] for structural
    /// problems, and with the component's own error (ScorerConfig, SlicerConfig, …) otherwise.
    pub fn build_pipeline(&self) -> Result<Pipeline> {
        build::pipeline(self)
    }

    /// Recovers the policy of a pipeline built from built-in components. A top-level
    /// composite scorer gives one entry per child; any other scorer gives a single entry
    /// of weight 1. Name and description are `None`. Custom components (and a decay scorer
    /// on a clock other than the system clock) fail with [`Error::InvalidPolicy`].
    pub fn from_pipeline(pipeline: &Pipeline) -> Result<Self> {
        reflect::policy(pipeline)
    }

    /// Reads a policy from its JSON form (spec 07 §3 plus the ctxpack extensions) and
    /// validates it, leniently as .NET reads (see [`JsonReadOptions`]; the warnings are
    /// dropped — use [`Policy::from_json_with`] to see them). Every failure is an
    /// [`Error::InvalidPolicy`] naming the JSON path.
    pub fn from_json(json: &str) -> Result<Self> {
        Ok(json_read::policy(json, &JsonReadOptions::default())?.value)
    }

    /// Reads a policy from its JSON form with `options`: strict or lenient reading, and
    /// the host's registered scorer types. Returns the policy with the warnings of a
    /// lenient read. Every failure is an [`Error::InvalidPolicy`] naming the JSON path.
    ///
    /// ```
    /// use ctxpack::policy::{JsonReadOptions, JsonWarningKind, Policy, ScorerSpec};
    ///
    /// let json = r#"{"scorers":[{"weight":2}],"placerType":"uShaped","futureOption":1}"#;
    /// let read = Policy::from_json_with(json, &JsonReadOptions::default())?;
    /// assert_eq!(read.value.scorers[0].scorer, ScorerSpec::Recency);
    /// let kinds: Vec<_> = read.warnings.iter().map(|w| w.kind).collect();
    /// assert_eq!(kinds, [JsonWarningKind::UnknownProperty, JsonWarningKind::MissingScorerType]);
    /// assert_eq!(read.warnings[0].to_string(), "futureOption: unknown property; ignored");
    ///
    /// let strict = JsonReadOptions { strict: true, ..Default::default() };
    /// let err = Policy::from_json_with(json, &strict).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid policy: futureOption: unknown property");
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    pub fn from_json_with(json: &str, options: &JsonReadOptions<'_>) -> Result<JsonRead<Self>> {
        json_read::policy(json, options)
    }

    /// Writes the compact JSON form, in the .NET property order. Fails with
    /// [`Error::InvalidPolicy`] when the policy is invalid or holds a non-finite number.
    pub fn to_json(&self) -> Result<String> {
        json_write::policy(self, false)
    }

    /// Writes the JSON form pretty-printed with two-space indentation (.NET
    /// `WriteIndented`).
    pub fn to_json_pretty(&self) -> Result<String> {
        json_write::policy(self, true)
    }

    /// Builds the pipeline and dry-runs it: the SelectionReport of `items` under `budget`
    /// (spec 07 §4).
    pub fn dry_run(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<SelectionReport> {
        self.build_pipeline()?.dry_run(items, budget)
    }
}

/// Formats a policy error: `<path>: <message>`, `$` standing for the document root.
pub(crate) fn policy_error(path: &str, message: impl std::fmt::Display) -> Error {
    let path = if path.is_empty() { "$" } else { path };
    Error::InvalidPolicy(format!("{path}: {message}"))
}

/// The path of property `name` inside the object at `parent` (`""` is the root).
pub(crate) fn prop_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// The path of element `index` of the array at `parent`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The path of the map entry `key` inside the object at `parent`: `.key` when the key is a
/// plain identifier, `["key"]` (JSON-escaped) otherwise.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        prop_path(parent, key)
    } else {
        let quoted = serde_json::Value::String(key.to_string()).to_string();
        format!("{parent}[{quoted}]")
    }
}
