//! Diagnostics (spec chapter 06): trace levels, events, inclusion and exclusion reasons, the
//! SelectionReport and its JSON wire form.
//!
//! Report entries name items by their position in the caller's input (decision D15 in
//! docs/decisions.md); the JSON writer looks the items up in the same input.

mod collector;
mod json;
mod reasons;
mod report;

pub(crate) use collector::{Collector, NullCollector, Recorder};
pub use json::{
    item_to_json, placed_item_to_json, report_to_json, report_to_json_with_positions,
    try_report_to_json,
};
pub use reasons::{DowngradeCause, ExclusionReason, InclusionReason};
pub use report::{ExcludedItem, GroupDecision, GroupReport, IncludedItem, SelectionReport};

use crate::model::ContextBudget;

/// How much a traced run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum TraceDetail {
    /// No diagnostics: nothing is recorded or allocated for them.
    #[default]
    None,
    /// Stage events, inclusions, exclusions and totals.
    Stage,
    /// As `Stage`, plus one item event per inclusion and exclusion (decision D8 in
    /// docs/decisions.md).
    Item,
}

/// The five traced pipeline stages (Sort has no event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PipelineStage {
    /// Stage 1: split pinned, scoreable and negative-token items.
    Classify,
    /// Stage 2: score the scoreable items.
    Score,
    /// Stage 3: remove duplicate contents.
    Deduplicate,
    /// Stage 5: select what fits.
    Slice,
    /// Stage 6: merge, handle overflow, order.
    Place,
}

impl PipelineStage {
    /// The wire name (`"Classify"`, …).
    pub fn name(self) -> &'static str {
        match self {
            PipelineStage::Classify => "Classify",
            PipelineStage::Score => "Score",
            PipelineStage::Deduplicate => "Deduplicate",
            PipelineStage::Slice => "Slice",
            PipelineStage::Place => "Place",
        }
    }
}

/// One trace event. Stage events carry the stage's wall-clock time and the number of items
/// leaving it; item events (Item detail) carry `duration_ms = 0.0` and `item_count = 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// The stage that produced the event.
    pub stage: PipelineStage,
    /// Wall-clock milliseconds (0.0 for item events).
    pub duration_ms: f64,
    /// Items leaving the stage (1 for item events).
    pub item_count: usize,
    /// Free text; absent on stage events.
    pub message: Option<String>,
    /// For item events, the input position of the item concerned.
    pub item_index: Option<usize>,
}

/// A count requirement that Phase 1 of a count-quota slicer could not meet (Degrade).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountRequirementShortfall {
    /// The entry's kind, as configured.
    pub kind: String,
    /// The entry's `require_count`.
    pub required_count: u64,
    /// How many candidates of that kind were found (less than required).
    pub satisfied_count: u64,
}

/// Produced only under [`crate::model::OverflowStrategy::Proceed`] when the merged selection
/// exceeds `target_tokens` (decision D7 in docs/decisions.md).
#[derive(Debug, Clone, PartialEq)]
pub struct OverflowEvent {
    /// Merged tokens minus `target_tokens` (> 0).
    pub tokens_over_budget: i64,
    /// Every merged item, pinned then sliced, in merged order (input positions).
    pub overflowing_items: Vec<usize>,
    /// The run's budget as given by the caller.
    pub budget: ContextBudget,
}
