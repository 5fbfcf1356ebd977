//! The six-stage pipeline (spec chapter 02): Classify, Score, Deduplicate, Sort, Slice,
//! Place. A built [`Pipeline`] is immutable and `Send + Sync`; the budget is given per run.

use std::fmt;
use std::sync::Arc;

use crate::diagnostics::{InclusionReason, OverflowEvent, SelectionReport, TraceDetail};
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem, GroupValue, OverflowStrategy};
use crate::placer::Placer;
use crate::scorer::Scorer;
use crate::slicer::Slicer;

mod classify;
mod columnar;
mod deduplicate;
mod forms;
mod groups;
mod hold;
mod place;
mod run;
mod score;
mod slice;
mod sort;

pub(crate) use columnar::{
    ColumnPlan, ColumnarScratch, Columns, KindName, PerItemField, StageBuffers, TagSum,
    HAS_PRIORITY, HAS_TIMESTAMP, PINNED, SCORERS_MAX,
};

/// A configured pipeline: scorer, slicer, placer, deduplication flag, overflow strategy.
///
/// Greedy slicing by score per token, with each item's relevance hint as its score:
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::diagnostics::ExclusionReason;
/// use ctxpack::placer::ChronologicalPlacer;
/// use ctxpack::scorer::ReflexiveScorer;
/// use ctxpack::slicer::GreedySlice;
/// use ctxpack::{ContextBudget, ContextItem, Pipeline};
///
/// let item = |content: &str, tokens, hint| {
///     ContextItem::builder(content, tokens)
///         .future_relevance_hint(hint)
///         .build()
/// };
/// let items = [item("a", 50, 0.9)?, item("b", 60, 0.2)?, item("c", 40, 0.5)?];
/// let pipeline = Pipeline::builder()
///     .scorer(Arc::new(ReflexiveScorer::new()))
///     .slicer(Arc::new(GreedySlice::new()))
///     .placer(Arc::new(ChronologicalPlacer::new()))
///     .build()?;
/// let budget = ContextBudget::new(100, 100)?; // max_tokens, target_tokens
///
/// // "a" (0.9 for 50 tokens) and "c" (0.5 for 40) fit; "b" would need 60 more.
/// let selection = pipeline.run(&items, &budget)?;
/// assert_eq!(selection.indices, [0, 2]); // positions in `items`, in placed order
/// assert_eq!(selection.scores, [0.9, 0.5]);
///
/// // The same run, explained.
/// let report = pipeline.dry_run(&items, &budget)?;
/// assert_eq!(report.excluded.len(), 1);
/// assert_eq!(report.excluded[0].index, 1);
/// assert!(matches!(
///     report.excluded[0].reason,
///     ExclusionReason::BudgetExceeded { item_tokens: 60, available_tokens: 10 }
/// ));
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Clone)]
pub struct Pipeline {
    scorer: Arc<dyn Scorer>,
    slicer: Arc<dyn Slicer>,
    placer: Arc<dyn Placer>,
    deduplication: bool,
    overflow_strategy: OverflowStrategy,
    group_value: GroupValue,
    pinned_first: bool,
    use_variants: bool,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("scorer", &self.scorer)
            .field("slicer", &self.slicer)
            .field("placer", &self.placer)
            .field("deduplication", &self.deduplication)
            .field("overflow_strategy", &self.overflow_strategy)
            .field("group_value", &self.group_value)
            .field("pinned_first", &self.pinned_first)
            .field("use_variants", &self.use_variants)
            .finish()
    }
}

/// Options of one run.
#[derive(Default, Clone, Copy)]
pub struct RunOptions<'a> {
    /// How much to record; `TraceDetail::None` records and allocates nothing for diagnostics.
    pub trace: TraceDetail,
    /// Called synchronously with the overflow event of a Proceed run that went over target.
    pub on_overflow: Option<&'a (dyn Fn(&OverflowEvent) + 'a)>,
}

/// The outcome of a run: the placed window as input positions, with parallel scores,
/// inclusion reasons and forms.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Input positions of the placed items, in placed order.
    pub indices: Vec<usize>,
    /// Score of each placed item (1.0 for pinned items).
    pub scores: Vec<f64>,
    /// Inclusion reason of each placed item.
    pub reasons: Vec<InclusionReason>,
    /// The form of each placed item: the index into its forms (0 = the item itself, `f`
    /// = its variant `f`; `docs/variants.md`). Parallel to `indices` when some candidate
    /// of the run has variants (and the pipeline uses them), empty otherwise — every item
    /// is then placed in full. [`Selection::form`] reads either way.
    pub forms: Vec<usize>,
    /// The overflow event of a Proceed run that went over target.
    pub overflow: Option<OverflowEvent>,
    /// The report, when the run was traced.
    pub report: Option<SelectionReport>,
}

impl Selection {
    /// The form of the `rank`-th placed item (0 when `forms` is empty).
    pub fn form(&self, rank: usize) -> usize {
        self.forms.get(rank).copied().unwrap_or(0)
    }

    /// The text of the `rank`-th placed item as it goes into the window — the content of
    /// its placed form — looked up in `items`, the run's input. Panics when `rank` is out
    /// of range or `items` is not the run's input.
    pub fn content<'a>(&self, items: &'a [ContextItem], rank: usize) -> &'a str {
        items[self.indices[rank]].form_content(self.form(rank))
    }

    /// The tokens of the `rank`-th placed item's placed form, looked up in `items`.
    pub fn tokens(&self, items: &[ContextItem], rank: usize) -> i64 {
        items[self.indices[rank]].form_tokens(self.form(rank))
    }

    /// The selection a traced run's report describes: its included items in placed order,
    /// with their scores, reasons and forms, and its overflow event.
    pub(crate) fn from_report(report: SelectionReport) -> Selection {
        let forms = if report.included.iter().any(|x| x.reason.form() != 0) {
            report.included.iter().map(|x| x.reason.form()).collect()
        } else {
            Vec::new()
        };
        Selection {
            indices: report.included.iter().map(|x| x.index).collect(),
            scores: report.included.iter().map(|x| x.score).collect(),
            reasons: report.included.iter().map(|x| x.reason).collect(),
            forms,
            overflow: report.overflow.clone(),
            report: Some(report),
        }
    }
}

impl Pipeline {
    /// Starts building a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    /// Runs untraced.
    pub fn run(&self, items: &[ContextItem], budget: &ContextBudget) -> Result<Selection> {
        self.run_with(items, budget, &RunOptions::default())
    }

    /// Runs with options (tracing, overflow callback).
    pub fn run_with(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        options: &RunOptions<'_>,
    ) -> Result<Selection> {
        run::run(self, items, budget, options)
    }

    /// Runs with options, stopping with [`crate::Error::Cancelled`] once `cancel` is
    /// cancelled (from any thread): before the run starts, between stages, or inside a
    /// long loop (see [`crate::cancel`]). A token that is never cancelled changes nothing:
    /// the result is the one [`Pipeline::run_with`] returns.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use ctxpack::placer::ChronologicalPlacer;
    /// use ctxpack::scorer::PriorityScorer;
    /// use ctxpack::slicer::GreedySlice;
    /// use ctxpack::{CancelToken, ContextBudget, ContextItem, ErrorCode, Pipeline, RunOptions};
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(Arc::new(PriorityScorer::new()))
    ///     .slicer(Arc::new(GreedySlice::new()))
    ///     .placer(Arc::new(ChronologicalPlacer::new()))
    ///     .build()?;
    /// let items = vec![ContextItem::new("hello", 5)?];
    /// let budget = ContextBudget::new(100, 100)?;
    /// let token = CancelToken::new();
    /// let options = RunOptions::default();
    /// assert!(pipeline.run_cancellable(&items, &budget, &options, &token).is_ok());
    /// token.cancel();
    /// let e = pipeline.run_cancellable(&items, &budget, &options, &token).unwrap_err();
    /// assert_eq!(e.code(), ErrorCode::Cancelled);
    /// # Ok::<(), ctxpack::Error>(())
    /// ```
    pub fn run_cancellable(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        options: &RunOptions<'_>,
        cancel: &crate::CancelToken,
    ) -> Result<Selection> {
        let _scope = crate::cancel::Scope::enter(cancel);
        run::run(self, items, budget, options)
    }

    /// Runs with a prefix state across turns (`docs/prefix-cache.md`): Measure selects as
    /// [`Pipeline::run_with`] does and reports how much of the previous window survives;
    /// Hold keeps the previous prefix and selects the rest after it (re-anchoring when
    /// that gives up more than the allowed share of value). Returns the selection, the
    /// reuse report and the state for the next turn. Errors: those of a run, and
    /// [`Error::InvalidState`] for a previous state of another conversation.
    pub fn run_prefix(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        options: &RunOptions<'_>,
        prefix: &crate::prefix::PrefixOptions<'_>,
    ) -> Result<crate::prefix::PrefixRun> {
        hold::run_prefix(self, items, budget, options, prefix)
    }

    /// Runs traced at Item detail and returns only the report.
    pub fn dry_run(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<SelectionReport> {
        let options = RunOptions {
            trace: TraceDetail::Item,
            on_overflow: None,
        };
        let selection = self.run_with(items, budget, &options)?;
        Ok(selection.report.unwrap_or_default())
    }

    /// The scorer.
    pub fn scorer(&self) -> &Arc<dyn Scorer> {
        &self.scorer
    }
    /// The slicer.
    pub fn slicer(&self) -> &Arc<dyn Slicer> {
        &self.slicer
    }
    /// The placer.
    pub fn placer(&self) -> &Arc<dyn Placer> {
        &self.placer
    }
    /// Whether duplicate contents are removed.
    pub fn deduplication(&self) -> bool {
        self.deduplication
    }
    /// The overflow strategy.
    pub fn overflow_strategy(&self) -> OverflowStrategy {
        self.overflow_strategy
    }
    /// How a group's value is computed from its members' scores (`docs/groups.md`).
    pub fn group_value(&self) -> GroupValue {
        self.group_value
    }
    /// Whether pinned items are placed first, in input order (an extension; off by
    /// default, as the specification places them like any other item).
    pub fn pinned_first(&self) -> bool {
        self.pinned_first
    }
    /// Whether the items' variants are used (the default) or every item is selected in
    /// full only (`docs/variants.md`).
    pub fn use_variants(&self) -> bool {
        self.use_variants
    }
}

/// Builder for [`Pipeline`]. Scorer, slicer and placer are required; deduplication
/// defaults to true and the overflow strategy to Throw.
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::placer::UShapedPlacer;
/// use ctxpack::scorer::PriorityScorer;
/// use ctxpack::slicer::KnapsackSlice;
/// use ctxpack::{ErrorCode, OverflowStrategy, Pipeline};
///
/// let pipeline = Pipeline::builder()
///     .scorer(Arc::new(PriorityScorer::new()))
///     .slicer(Arc::new(KnapsackSlice::new(10)?)) // bucket size 10 tokens
///     .placer(Arc::new(UShapedPlacer::new()))
///     .deduplication(false)
///     .overflow_strategy(OverflowStrategy::Truncate)
///     .build()?;
/// assert!(!pipeline.deduplication());
/// assert_eq!(pipeline.overflow_strategy(), OverflowStrategy::Truncate);
///
/// // A missing component is an error, not a panic.
/// let err = Pipeline::builder().build().unwrap_err();
/// assert_eq!(err.code(), ErrorCode::PipelineConfig);
/// assert_eq!(err.to_string(), "invalid pipeline configuration: scorer is required");
/// # Ok::<(), ctxpack::Error>(())
/// ```
#[derive(Clone)]
pub struct PipelineBuilder {
    scorer: Option<Arc<dyn Scorer>>,
    slicer: Option<Arc<dyn Slicer>>,
    placer: Option<Arc<dyn Placer>>,
    deduplication: bool,
    overflow_strategy: OverflowStrategy,
    group_value: GroupValue,
    pinned_first: bool,
    use_variants: bool,
}

impl Default for PipelineBuilder {
    fn default() -> Self {
        Self {
            scorer: None,
            slicer: None,
            placer: None,
            deduplication: true,
            overflow_strategy: OverflowStrategy::Throw,
            group_value: GroupValue::Sum,
            pinned_first: false,
            use_variants: true,
        }
    }
}

impl PipelineBuilder {
    /// Sets the scorer.
    pub fn scorer(mut self, scorer: Arc<dyn Scorer>) -> Self {
        self.scorer = Some(scorer);
        self
    }
    /// Sets the slicer.
    pub fn slicer(mut self, slicer: Arc<dyn Slicer>) -> Self {
        self.slicer = Some(slicer);
        self
    }
    /// Sets the placer.
    pub fn placer(mut self, placer: Arc<dyn Placer>) -> Self {
        self.placer = Some(placer);
        self
    }
    /// Turns deduplication on or off.
    pub fn deduplication(mut self, on: bool) -> Self {
        self.deduplication = on;
        self
    }
    /// Sets the overflow strategy.
    pub fn overflow_strategy(mut self, strategy: OverflowStrategy) -> Self {
        self.overflow_strategy = strategy;
        self
    }
    /// Sets how a group's value is computed from its members' scores (default
    /// [`GroupValue::Sum`]); it matters only when items have group keys (`docs/groups.md`).
    pub fn group_value(mut self, value: GroupValue) -> Self {
        self.group_value = value;
        self
    }
    /// Places the pinned items first, in input order, before everything the placer
    /// orders (default off: the specification's placers place pinned items like any
    /// other, so a chronological placer puts an undated system prompt last). A pinned
    /// group stays together, at its first member's input position among the pinned.
    pub fn pinned_first(mut self, on: bool) -> Self {
        self.pinned_first = on;
        self
    }
    /// Whether the items' variants are used (default true). Off, every item is selected in
    /// full or not at all, as without variants — the "drop instead of degrade" baseline
    /// (`docs/variants.md`).
    pub fn use_variants(mut self, on: bool) -> Self {
        self.use_variants = on;
        self
    }
    /// Builds; a missing component fails with `PipelineConfig` (scorer, slicer, placer order).
    pub fn build(self) -> Result<Pipeline> {
        let missing = |what: &str| Error::PipelineConfig(format!("{what} is required"));
        Ok(Pipeline {
            scorer: self.scorer.ok_or_else(|| missing("scorer"))?,
            slicer: self.slicer.ok_or_else(|| missing("slicer"))?,
            placer: self.placer.ok_or_else(|| missing("placer"))?,
            deduplication: self.deduplication,
            overflow_strategy: self.overflow_strategy,
            group_value: self.group_value,
            pinned_first: self.pinned_first,
            use_variants: self.use_variants,
        })
    }
}
