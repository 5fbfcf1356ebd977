//! The execution interface the comparison logic talks to.
//!
//! An [`Engine`] receives the plain descriptions of [`crate::spec`] and answers with plain
//! results that name items by their position in the vector's item list. The Rust-API
//! engine lives in [`crate::rust_engine`]; a C-ABI engine implements the same trait.

use std::fmt;

use crate::spec::{
    BudgetSpec, Component, FieldValue, GroupValueSpec, ItemSpec, PipelineSpec, PlacerSpec,
    ScoredItemSpec, ScorerSpec, ShortfallSpec, SlicerSpec,
};

/// Why an engine call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    /// A component could not be built from its description.
    Construction(String),
    /// An item or budget of the vector was rejected.
    Input(String),
    /// The component was built but the call failed.
    Run(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Construction(m) => write!(f, "construction failed: {m}"),
            EngineError::Input(m) => write!(f, "invalid input: {m}"),
            EngineError::Run(m) => write!(f, "run failed: {m}"),
        }
    }
}

/// Result of an engine call.
pub type EngineResult<T> = Result<T, EngineError>;

/// What a slicer returned.
#[derive(Debug, Clone, Default)]
pub struct SliceResult {
    /// Selected positions (into the slicer input), in slicer order.
    pub selected: Vec<usize>,
    /// Shortfalls reported by the slice call.
    pub shortfalls: Vec<ShortfallSpec>,
    /// Positions removed by count caps.
    pub cap_excluded: Vec<usize>,
    /// The form of each selected position (extension): empty, or parallel to `selected`.
    pub forms: Vec<usize>,
}

/// An exclusion reason in wire form: variant name plus its fields (snake_case names).
#[derive(Debug, Clone, PartialEq)]
pub struct ReasonRecord {
    /// Variant name.
    pub name: String,
    /// Fields of the variant.
    pub fields: Vec<(String, FieldValue)>,
}

impl ReasonRecord {
    /// The value of field `name`, if the variant has it.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// An included entry of the report.
#[derive(Debug, Clone)]
pub struct IncludedRecord {
    /// Input position.
    pub index: usize,
    /// Recorded score.
    pub score: f64,
    /// Inclusion reason name.
    pub reason: String,
    /// Fields of the reason (extension: the `Downgraded` reason's).
    pub fields: Vec<(String, FieldValue)>,
}

/// An excluded entry of the report.
#[derive(Debug, Clone)]
pub struct ExcludedRecord {
    /// Input position.
    pub index: usize,
    /// Recorded score.
    pub score: f64,
    /// Exclusion reason.
    pub reason: ReasonRecord,
}

/// The parts of a SelectionReport the vectors can check.
#[derive(Debug, Clone, Default)]
pub struct ReportRecord {
    /// `total_candidates`.
    pub total_candidates: i64,
    /// `total_tokens_considered`.
    pub total_tokens_considered: i128,
    /// Included items in placed order.
    pub included: Vec<IncludedRecord>,
    /// Excluded items in report order.
    pub excluded: Vec<ExcludedRecord>,
    /// Count-requirement shortfalls.
    pub shortfalls: Vec<ShortfallSpec>,
    /// The group listing (extension).
    pub groups: Vec<GroupRecord>,
    /// The pruned forms (extension): (input position, form, dominated by).
    pub pruned_forms: Vec<(usize, usize, usize)>,
}

/// One entry of the report's group listing.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRecord {
    /// The group key.
    pub key: String,
    /// Input positions of the members, in input order.
    pub members: Vec<usize>,
    /// Sum of the members' tokens.
    pub tokens: i64,
    /// `Included` or `Excluded`.
    pub decision: String,
    /// The excluding stage's name.
    pub stage: Option<String>,
    /// Input position of the member whose exclusion took the group out.
    pub member_index: Option<usize>,
    /// Input position of the member that pinned the group.
    pub pinned_by: Option<usize>,
    /// Whether a slicer returned the group in part.
    pub partial_selection: bool,
}

/// An overflow event.
#[derive(Debug, Clone, PartialEq)]
pub struct OverflowRecord {
    /// Merged tokens minus the target.
    pub tokens_over_budget: i64,
    /// Input positions of the merged items, in merged order.
    pub items: Vec<usize>,
}

/// What a pipeline run returned.
#[derive(Debug, Clone, Default)]
pub struct PipelineResult {
    /// Input positions in placed order.
    pub placed: Vec<usize>,
    /// The form of each placed item (extension): empty, or parallel to `placed`.
    pub forms: Vec<usize>,
    /// The report, for traced runs.
    pub report: Option<ReportRecord>,
    /// The overflow event, if one was produced.
    pub overflow: Option<OverflowRecord>,
}

/// Runs vector descriptions against one implementation.
pub trait Engine {
    /// Name shown in reports.
    fn name(&self) -> &'static str;
    /// Why this engine cannot run vectors that use the item-group extension, or `None`
    /// when it can; such vectors are then reported as skipped.
    fn groups_unsupported(&self) -> Option<&'static str> {
        None
    }
    /// Why this engine cannot run vectors that use the variant extension, or `None` when
    /// it can; such vectors are then reported as skipped.
    fn variants_unsupported(&self) -> Option<&'static str> {
        None
    }
    /// Builds the component (all three for a pipeline) and discards it.
    fn construct(&self, component: &Component) -> EngineResult<()>;
    /// Scores every item against the whole list; one score per item, in order.
    fn score(&self, scorer: &ScorerSpec, items: &[ItemSpec]) -> EngineResult<Vec<f64>>;
    /// Slices the scored items (passed in file order) with the budget as given; items with
    /// group keys form units whose values follow `group_value`.
    fn slice(
        &self,
        slicer: &SlicerSpec,
        items: &[ScoredItemSpec],
        budget: &BudgetSpec,
        group_value: GroupValueSpec,
    ) -> EngineResult<SliceResult>;
    /// Places the scored items; returns input positions in placed order.
    fn place(
        &self,
        placer: &PlacerSpec,
        items: &[ScoredItemSpec],
        group_value: GroupValueSpec,
    ) -> EngineResult<Vec<usize>>;
    /// Runs the pipeline, with a full report when `traced`.
    fn pipeline(
        &self,
        pipeline: &PipelineSpec,
        items: &[ItemSpec],
        budget: &BudgetSpec,
        traced: bool,
    ) -> EngineResult<PipelineResult>;
}
