//! The [`Engine`] that drives ctxpack's Rust API.

use std::cell::RefCell;
use std::sync::Arc;

use ctxpack::diagnostics::{
    CountRequirementShortfall, ExcludedItem, ExclusionReason, GroupDecision, GroupReport,
    IncludedItem, InclusionReason, OverflowEvent, SelectionReport, TraceDetail,
};
use ctxpack::model::{GroupValue, Units};
use ctxpack::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use ctxpack::scorer::{
    CompositeScorer, DecayCurve, DecayScorer, FixedClock, FrequencyScorer, KindScorer,
    MetadataKeyScorer, MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer,
    ScaledScorer, Scorer, TagScorer,
};
use ctxpack::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, ScarcityBehavior, Slicer,
};
use ctxpack::{
    ContextBudget, ContextItem, ContextKind, ContextSource, OverflowStrategy, Pipeline, RunOptions,
    ScoredItem,
};

use crate::engine::{
    Engine, EngineError, EngineResult, ExcludedRecord, GroupRecord, IncludedRecord, OverflowRecord,
    PipelineResult, ReasonRecord, ReportRecord, SliceResult,
};
use crate::spec::{
    BudgetSpec, Component, CountEntrySpec, CurveSpec, FieldValue, GroupValueSpec, ItemSpec,
    OverflowSpec, PipelineSpec, PlacerSpec, Scarcity, ScoredItemSpec, ScorerSpec, ShortfallSpec,
    SlicerSpec,
};

/// Runs vectors through the public Rust API of ctxpack.
#[derive(Debug, Default, Clone, Copy)]
pub struct RustEngine;

type Built<T> = ctxpack::Result<T>;

fn construction(e: ctxpack::Error) -> EngineError {
    EngineError::Construction(e.to_string())
}

fn input(e: ctxpack::Error) -> EngineError {
    EngineError::Input(e.to_string())
}

fn run(e: ctxpack::Error) -> EngineError {
    EngineError::Run(e.to_string())
}

fn kind(name: &str) -> Built<ContextKind> {
    ContextKind::new(name)
}

/// Builds a scorer from its description.
fn build_scorer(spec: &ScorerSpec) -> Built<Arc<dyn Scorer>> {
    Ok(match spec {
        ScorerSpec::Recency => Arc::new(RecencyScorer::new()),
        ScorerSpec::Priority => Arc::new(PriorityScorer::new()),
        ScorerSpec::Frequency => Arc::new(FrequencyScorer::new()),
        ScorerSpec::Reflexive => Arc::new(ReflexiveScorer::new()),
        ScorerSpec::Kind(None) => Arc::new(KindScorer::new()),
        ScorerSpec::Kind(Some(weights)) => {
            let weights = weights
                .iter()
                .map(|(k, w)| Ok((kind(k)?, *w)))
                .collect::<Built<Vec<_>>>()?;
            Arc::new(KindScorer::with_weights(weights)?)
        }
        ScorerSpec::Tag(weights) => Arc::new(TagScorer::new(weights.clone())?),
        ScorerSpec::Composite(children) => {
            let children = children
                .iter()
                .map(|(child, w)| Ok((build_scorer(child)?, *w)))
                .collect::<Built<Vec<_>>>()?;
            Arc::new(CompositeScorer::new(children)?)
        }
        ScorerSpec::Scaled(inner) => Arc::new(ScaledScorer::new(build_scorer(inner)?)),
        ScorerSpec::Decay {
            reference_time,
            curve,
            null_timestamp_score,
        } => Arc::new(DecayScorer::new(
            Arc::new(FixedClock(*reference_time)),
            decay_curve(curve),
            *null_timestamp_score,
        )?),
        ScorerSpec::MetadataTrust { default_score } => {
            Arc::new(MetadataTrustScorer::new(*default_score)?)
        }
        ScorerSpec::MetadataKey { key, value, boost } => {
            Arc::new(MetadataKeyScorer::new(key.clone(), value.clone(), *boost)?)
        }
    })
}

fn decay_curve(curve: &CurveSpec) -> DecayCurve {
    match curve {
        CurveSpec::Exponential { half_life_ns } => DecayCurve::Exponential {
            half_life_ns: *half_life_ns,
        },
        CurveSpec::Window { max_age_ns } => DecayCurve::Window {
            max_age_ns: *max_age_ns,
        },
        CurveSpec::Step { windows } => DecayCurve::Step {
            windows: windows.clone(),
        },
    }
}

/// Builds a slicer from its description.
fn build_slicer(spec: &SlicerSpec) -> Built<Arc<dyn Slicer>> {
    Ok(match spec {
        SlicerSpec::Greedy => Arc::new(GreedySlice::new()),
        SlicerSpec::Knapsack { bucket_size } => Arc::new(KnapsackSlice::new(*bucket_size)?),
        SlicerSpec::Quota { quotas, inner } => {
            let entries = quotas
                .iter()
                .map(|q| QuotaEntry::new(kind(&q.kind)?, q.require, q.cap))
                .collect::<Built<Vec<_>>>()?;
            Arc::new(QuotaSlice::new(entries, build_slicer(inner)?)?)
        }
        SlicerSpec::CountQuota {
            entries,
            inner,
            scarcity,
        } => Arc::new(CountQuotaSlice::new(
            count_entries(entries)?,
            build_slicer(inner)?,
            scarcity_behavior(*scarcity),
        )?),
        SlicerSpec::CountConstrainedKnapsack {
            entries,
            bucket_size,
            scarcity,
        } => Arc::new(CountConstrainedKnapsackSlice::new(
            count_entries(entries)?,
            KnapsackSlice::new(*bucket_size)?,
            scarcity_behavior(*scarcity),
        )?),
    })
}

fn count_entries(entries: &[CountEntrySpec]) -> Built<Vec<CountQuotaEntry>> {
    let count = |n: u64| {
        usize::try_from(n)
            .map_err(|_| ctxpack::Error::InvalidArgument(format!("count {n} does not fit")))
    };
    entries
        .iter()
        .map(|e| CountQuotaEntry::new(kind(&e.kind)?, count(e.require_count)?, count(e.cap_count)?))
        .collect()
}

fn scarcity_behavior(scarcity: Scarcity) -> ScarcityBehavior {
    match scarcity {
        Scarcity::Degrade => ScarcityBehavior::Degrade,
        Scarcity::Throw => ScarcityBehavior::Throw,
    }
}

fn build_placer(spec: PlacerSpec) -> Arc<dyn Placer> {
    match spec {
        PlacerSpec::Chronological => Arc::new(ChronologicalPlacer::new()),
        PlacerSpec::UShaped => Arc::new(UShapedPlacer::new()),
    }
}

fn build_pipeline(spec: &PipelineSpec) -> Built<Pipeline> {
    let overflow = match spec.overflow {
        OverflowSpec::Throw => OverflowStrategy::Throw,
        OverflowSpec::Truncate => OverflowStrategy::Truncate,
        OverflowSpec::Proceed => OverflowStrategy::Proceed,
    };
    Pipeline::builder()
        .scorer(build_scorer(&spec.scorer)?)
        .slicer(build_slicer(&spec.slicer)?)
        .placer(build_placer(spec.placer))
        .deduplication(spec.deduplication)
        .overflow_strategy(overflow)
        .group_value(group_value(spec.group_value))
        .pinned_first(spec.pinned_first)
        .use_variants(spec.use_variants)
        .build()
}

/// Builds one item; fields the vector leaves out keep their data-model defaults.
fn build_item(spec: &ItemSpec) -> Built<ContextItem> {
    let mut b = ContextItem::builder(spec.content.clone(), spec.tokens)
        .tags(spec.tags.iter().cloned())
        .pinned(spec.pinned)
        .metadata(spec.metadata.iter().cloned().collect());
    if let Some(k) = &spec.kind {
        b = b.kind(kind(k)?);
    }
    if let Some(s) = &spec.source {
        b = b.source(ContextSource::new(s.clone())?);
    }
    if let Some(ts) = spec.timestamp {
        b = b.timestamp(ts);
    }
    if let Some(p) = spec.priority {
        b = b.priority(p);
    }
    if let Some(h) = spec.future_relevance_hint {
        b = b.future_relevance_hint(h);
    }
    if let Some(t) = spec.original_tokens {
        b = b.original_tokens(t);
    }
    if let Some(g) = &spec.group {
        b = b.group(g.clone());
    }
    for v in &spec.variants {
        b = b.variant(v.content.clone(), v.tokens, v.quality);
    }
    b.build()
}

fn group_value(spec: GroupValueSpec) -> GroupValue {
    match spec {
        GroupValueSpec::Sum => GroupValue::Sum,
        GroupValueSpec::Max => GroupValue::Max,
        GroupValueSpec::Mean => GroupValue::Mean,
    }
}

/// The units of `items` when some item has a group key or variants.
fn units(items: &[ScoredItem<'_>], spec: GroupValueSpec) -> EngineResult<Option<Units>> {
    if !items
        .iter()
        .any(|s| s.item.group().is_some() || s.item.has_variants())
    {
        return Ok(None);
    }
    Units::new(items, group_value(spec))
        .map(Some)
        .map_err(input)
}

fn build_items<'a>(
    specs: impl IntoIterator<Item = &'a ItemSpec>,
) -> EngineResult<Vec<ContextItem>> {
    specs
        .into_iter()
        .map(|s| build_item(s).map_err(input))
        .collect()
}

fn build_budget(spec: &BudgetSpec) -> EngineResult<ContextBudget> {
    let slots = spec
        .reserved_slots
        .iter()
        .map(|(k, n)| Ok((kind(k)?, *n)))
        .collect::<Built<Vec<_>>>()
        .map_err(input)?;
    ContextBudget::with_all(
        spec.max_tokens,
        spec.target_tokens,
        spec.output_reserve,
        slots,
        spec.estimation_safety_margin_percent,
    )
    .map_err(input)
}

fn scored<'a>(items: &'a [ContextItem], specs: &[ScoredItemSpec]) -> Vec<ScoredItem<'a>> {
    items
        .iter()
        .zip(specs)
        .map(|(item, s)| ScoredItem {
            item,
            score: s.score,
        })
        .collect()
}

fn shortfall(s: &CountRequirementShortfall) -> ShortfallSpec {
    ShortfallSpec {
        kind: s.kind.clone(),
        required_count: s.required_count,
        satisfied_count: s.satisfied_count,
    }
}

impl Engine for RustEngine {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn construct(&self, component: &Component) -> EngineResult<()> {
        match component {
            Component::Scorer(s) => build_scorer(s).map(drop),
            Component::Slicer(s) => build_slicer(s).map(drop),
            Component::Placer(p) => {
                build_placer(*p);
                Ok(())
            }
            Component::Pipeline(p) => build_pipeline(p).map(drop),
        }
        .map_err(construction)
    }

    fn score(&self, scorer: &ScorerSpec, items: &[ItemSpec]) -> EngineResult<Vec<f64>> {
        let scorer = build_scorer(scorer).map_err(construction)?;
        let items = build_items(items)?;
        let refs: Vec<&ContextItem> = items.iter().collect();
        let mut out = vec![0.0; refs.len()];
        scorer.score_all(&refs, &mut out).map_err(run)?;
        Ok(out)
    }

    fn slice(
        &self,
        slicer: &SlicerSpec,
        items: &[ScoredItemSpec],
        budget: &BudgetSpec,
        group_value: GroupValueSpec,
    ) -> EngineResult<SliceResult> {
        let slicer = build_slicer(slicer).map_err(construction)?;
        let built = build_items(items.iter().map(|s| &s.item))?;
        let budget = build_budget(budget)?;
        let scored = scored(&built, items);
        let outcome = match units(&scored, group_value)? {
            None => slicer.slice(&scored, &budget),
            Some(units) => slicer.slice_grouped(&scored, &units, &budget),
        }
        .map_err(run)?;
        Ok(SliceResult {
            selected: outcome.selected,
            shortfalls: outcome.shortfalls.iter().map(shortfall).collect(),
            cap_excluded: outcome.cap_excluded,
            forms: outcome.forms,
        })
    }

    fn place(
        &self,
        placer: &PlacerSpec,
        items: &[ScoredItemSpec],
        group_value: GroupValueSpec,
    ) -> EngineResult<Vec<usize>> {
        let placer = build_placer(*placer);
        let built = build_items(items.iter().map(|s| &s.item))?;
        let scored = scored(&built, items);
        match units(&scored, group_value)? {
            None => placer.place(&scored),
            Some(units) => placer.place_grouped(&scored, &units),
        }
        .map_err(run)
    }

    fn pipeline(
        &self,
        pipeline: &PipelineSpec,
        items: &[ItemSpec],
        budget: &BudgetSpec,
        traced: bool,
    ) -> EngineResult<PipelineResult> {
        let pipeline = build_pipeline(pipeline).map_err(construction)?;
        let items = build_items(items)?;
        let budget = build_budget(budget)?;
        let notified: RefCell<Vec<OverflowEvent>> = RefCell::new(Vec::new());
        let on_overflow = |event: &OverflowEvent| notified.borrow_mut().push(event.clone());
        let options = RunOptions {
            trace: if traced {
                TraceDetail::Item
            } else {
                TraceDetail::None
            },
            on_overflow: Some(&on_overflow),
        };
        let selection = pipeline.run_with(&items, &budget, &options).map_err(run)?;
        check_overflow_consistency(
            &selection.overflow,
            &notified.borrow(),
            selection.report.as_ref(),
        )?;
        Ok(PipelineResult {
            placed: selection.indices,
            forms: selection.forms,
            report: selection.report.as_ref().map(report_record),
            overflow: selection.overflow.as_ref().map(|e| OverflowRecord {
                tokens_over_budget: e.tokens_over_budget,
                items: e.overflowing_items.clone(),
            }),
        })
    }
}

/// Decision D7 in docs/decisions.md: the overflow event of a run is the one given to the callback
/// and the one in the report; any disagreement is an engine error.
fn check_overflow_consistency(
    event: &Option<OverflowEvent>,
    notified: &[OverflowEvent],
    report: Option<&SelectionReport>,
) -> EngineResult<()> {
    if notified != event.as_slice() {
        return Err(EngineError::Run(format!(
            "overflow callback received {notified:?} but the selection carries {event:?}"
        )));
    }
    if let Some(report) = report {
        if &report.overflow != event {
            return Err(EngineError::Run(format!(
                "report overflow {:?} differs from the selection's {event:?}",
                report.overflow
            )));
        }
    }
    Ok(())
}

fn report_record(report: &SelectionReport) -> ReportRecord {
    ReportRecord {
        total_candidates: report.total_candidates as i64,
        total_tokens_considered: report.total_tokens_considered,
        included: report.included.iter().map(included_record).collect(),
        excluded: report.excluded.iter().map(excluded_record).collect(),
        shortfalls: report
            .count_requirement_shortfalls
            .iter()
            .map(shortfall)
            .collect(),
        groups: report.groups.iter().map(group_record).collect(),
        pruned_forms: report
            .pruned_forms
            .iter()
            .map(|p| (p.index, p.form, p.dominated_by))
            .collect(),
    }
}

fn group_record(g: &GroupReport) -> GroupRecord {
    let (stage, member_index) = match g.decision {
        GroupDecision::Included => (None, None),
        GroupDecision::Excluded {
            stage,
            member_index,
        } => (Some(stage.name().to_string()), Some(member_index)),
    };
    GroupRecord {
        key: g.key.clone(),
        members: g.members.clone(),
        tokens: g.tokens,
        decision: g.decision.name().to_string(),
        stage,
        member_index,
        pinned_by: g.pinned_by,
        partial_selection: g.partial_selection,
    }
}

fn included_record(i: &IncludedItem) -> IncludedRecord {
    use FieldValue::{Int, Str};
    let fields = match i.reason {
        InclusionReason::Downgraded {
            form,
            full_tokens,
            chosen_tokens,
            available_tokens,
            cause,
        } => vec![
            ("form".to_string(), Int(form as i64)),
            ("full_tokens".to_string(), Int(full_tokens)),
            ("chosen_tokens".to_string(), Int(chosen_tokens)),
            ("available_tokens".to_string(), Int(available_tokens)),
            ("cause".to_string(), Str(cause.name().to_string())),
        ],
        _ => Vec::new(),
    };
    IncludedRecord {
        index: i.index,
        score: i.score,
        reason: i.reason.name().to_string(),
        fields,
    }
}

fn excluded_record(e: &ExcludedItem) -> ExcludedRecord {
    ExcludedRecord {
        index: e.index,
        score: e.score,
        reason: reason_record(&e.reason),
    }
}

/// The wire form of an exclusion reason: variant name and snake_case fields.
fn reason_record(reason: &ExclusionReason) -> ReasonRecord {
    use FieldValue::{Float, Int, Str};
    let int = |v: u64| Int(i64::try_from(v).unwrap_or(i64::MAX));
    let str = |s: &String| Str(s.clone());
    let fields: Vec<(&str, FieldValue)> = match reason {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => vec![
            ("item_tokens", Int(*item_tokens)),
            ("available_tokens", Int(*available_tokens)),
        ],
        ExclusionReason::ScoredTooLow { score, threshold } => {
            vec![("score", Float(*score)), ("threshold", Float(*threshold))]
        }
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => {
            vec![("deduplicated_against", str(deduplicated_against))]
        }
        ExclusionReason::QuotaCapExceeded { kind, cap, actual } => {
            vec![
                ("kind", str(kind)),
                ("cap", Int(*cap)),
                ("actual", Int(*actual)),
            ]
        }
        ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
            vec![("displaced_by_kind", str(displaced_by_kind))]
        }
        ExclusionReason::NegativeTokens { tokens } => vec![("tokens", Int(*tokens))],
        ExclusionReason::PinnedOverride { displaced_by } => {
            vec![("displaced_by", str(displaced_by))]
        }
        ExclusionReason::Filtered { filter_name } => vec![("filter_name", str(filter_name))],
        ExclusionReason::CountCapExceeded { kind, cap, count } => {
            vec![
                ("kind", str(kind)),
                ("cap", int(*cap)),
                ("count", int(*count)),
            ]
        }
        ExclusionReason::CountRequireCandidatesExhausted { kind } => vec![("kind", str(kind))],
        ExclusionReason::GroupExcluded {
            group,
            member_index,
            member_content,
            member_reason,
        } => vec![
            ("group", str(group)),
            ("member_index", int(*member_index as u64)),
            ("member_content", str(member_content)),
            ("member_reason", str(member_reason)),
        ],
        ExclusionReason::Unknown { .. } => Vec::new(),
    };
    ReasonRecord {
        name: reason.name().to_string(),
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}
