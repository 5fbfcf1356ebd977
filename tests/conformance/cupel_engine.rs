//! An [`Engine`] on the reference crate `cupel` 1.2.0, selected with
//! `CTXPACK_CONFORMANCE_ENGINE=cupel`.
//!
//! A diagnostic tool for vector authors: it shows where a vector encodes a ctxpack decision that
//! differs from the crate (decision D1 in docs/decisions.md effective budget, decision D2 merge
//! order, decision D3 truncation order, Decision D10 count-quota Phase 1 and shortfalls, decision
//! D11 memory guard). Known limits: the crate returns copies of items, so positions are recovered
//! by content (first unused equal content); its slicers do not expose shortfalls or cap exclusions
//! (reported as none); it has no Proceed overflow event; durations are truncated to milliseconds.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use cupel::{
    ChronologicalPlacer, CompositeScorer, ContextBudget, ContextItem, ContextKind, ContextSource,
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, CupelError, DecayCurve,
    DecayScorer, DiagnosticTraceCollector, ExclusionReason, FrequencyScorer, GreedySlice,
    KindScorer, KnapsackSlice, MetadataKeyScorer, MetadataTrustScorer, OverflowStrategy, Pipeline,
    Placer, PriorityScorer, QuotaEntry, QuotaSlice, RecencyScorer, ReflexiveScorer, ScaledScorer,
    ScarcityBehavior, ScoredItem, Scorer, SelectionReport, Slicer, TagScorer, TimeProvider,
    TraceDetailLevel, UShapedPlacer,
};

use crate::engine::{
    Engine, EngineError, EngineResult, ExcludedRecord, IncludedRecord, PipelineResult,
    ReasonRecord, ReportRecord, SliceResult,
};
use crate::spec::{
    BudgetSpec, Component, CountEntrySpec, CurveSpec, FieldValue, GroupValueSpec, ItemSpec,
    OverflowSpec, PipelineSpec, PlacerSpec, Scarcity, ScoredItemSpec, ScorerSpec, SlicerSpec,
};

/// Runs vectors through the reference crate.
#[derive(Debug, Default, Clone, Copy)]
pub struct CupelEngine;

/// Why group vectors are skipped: item groups are a ctxpack extension.
const GROUPS_UNSUPPORTED: &str = "the reference crate has no item groups";

type Built<T> = Result<T, CupelError>;

fn construction(e: CupelError) -> EngineError {
    EngineError::Construction(e.to_string())
}

fn input(e: CupelError) -> EngineError {
    EngineError::Input(e.to_string())
}

fn run(e: CupelError) -> EngineError {
    EngineError::Run(e.to_string())
}

fn kind(name: &str) -> Built<ContextKind> {
    ContextKind::new(name)
}

/// A fixed clock.
struct Fixed(DateTime<Utc>);

impl TimeProvider for Fixed {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

fn instant(unix_nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(unix_nanos)
}

fn build_scorer(spec: &ScorerSpec) -> Built<Box<dyn Scorer>> {
    Ok(match spec {
        ScorerSpec::Recency => Box::new(RecencyScorer),
        ScorerSpec::Priority => Box::new(PriorityScorer),
        ScorerSpec::Frequency => Box::new(FrequencyScorer),
        ScorerSpec::Reflexive => Box::new(ReflexiveScorer),
        ScorerSpec::Kind(None) => Box::new(KindScorer::with_default_weights()),
        ScorerSpec::Kind(Some(weights)) => {
            let map = weights
                .iter()
                .map(|(k, w)| Ok((kind(k)?, *w)))
                .collect::<Built<_>>()?;
            Box::new(KindScorer::new(map)?)
        }
        ScorerSpec::Tag(weights) => Box::new(TagScorer::new(weights.iter().cloned().collect())?),
        ScorerSpec::Composite(children) => {
            let children = children
                .iter()
                .map(|(c, w)| Ok((build_scorer(c)?, *w)))
                .collect::<Built<Vec<_>>>()?;
            Box::new(CompositeScorer::new(children)?)
        }
        ScorerSpec::Scaled(inner) => Box::new(ScaledScorer::new(build_scorer(inner)?)),
        ScorerSpec::Decay {
            reference_time,
            curve,
            null_timestamp_score,
        } => Box::new(DecayScorer::new(
            Box::new(Fixed(instant(*reference_time))),
            decay_curve(curve)?,
            *null_timestamp_score,
        )?),
        ScorerSpec::MetadataTrust { default_score } => {
            Box::new(MetadataTrustScorer::new(*default_score)?)
        }
        ScorerSpec::MetadataKey { key, value, boost } => {
            Box::new(MetadataKeyScorer::new(key.clone(), value.clone(), *boost)?)
        }
    })
}

fn decay_curve(curve: &CurveSpec) -> Built<DecayCurve> {
    match curve {
        CurveSpec::Exponential { half_life_ns } => {
            DecayCurve::exponential(Duration::nanoseconds(*half_life_ns))
        }
        CurveSpec::Window { max_age_ns } => DecayCurve::window(Duration::nanoseconds(*max_age_ns)),
        CurveSpec::Step { windows } => DecayCurve::step(
            windows
                .iter()
                .map(|(ns, s)| (Duration::nanoseconds(*ns), *s))
                .collect(),
        ),
    }
}

fn build_slicer(spec: &SlicerSpec) -> Built<Box<dyn Slicer>> {
    Ok(match spec {
        SlicerSpec::Greedy => Box::new(GreedySlice),
        SlicerSpec::Knapsack { bucket_size } => Box::new(KnapsackSlice::new(*bucket_size)?),
        SlicerSpec::Quota { quotas, inner } => {
            let entries = quotas
                .iter()
                .map(|q| QuotaEntry::new(kind(&q.kind)?, q.require, q.cap))
                .collect::<Built<Vec<_>>>()?;
            Box::new(QuotaSlice::new(entries, build_slicer(inner)?)?)
        }
        SlicerSpec::CountQuota {
            entries,
            inner,
            scarcity,
        } => Box::new(CountQuotaSlice::new(
            count_entries(entries)?,
            build_slicer(inner)?,
            scarcity_behavior(*scarcity),
        )?),
        SlicerSpec::CountConstrainedKnapsack {
            entries,
            bucket_size,
            scarcity,
        } => Box::new(CountConstrainedKnapsackSlice::new(
            count_entries(entries)?,
            KnapsackSlice::new(*bucket_size)?,
            scarcity_behavior(*scarcity),
        )?),
    })
}

fn count_entries(entries: &[CountEntrySpec]) -> Built<Vec<CountQuotaEntry>> {
    entries
        .iter()
        .map(|e| {
            CountQuotaEntry::new(
                kind(&e.kind)?,
                e.require_count as usize,
                e.cap_count as usize,
            )
        })
        .collect()
}

fn scarcity_behavior(scarcity: Scarcity) -> ScarcityBehavior {
    match scarcity {
        Scarcity::Degrade => ScarcityBehavior::Degrade,
        Scarcity::Throw => ScarcityBehavior::Throw,
    }
}

fn build_placer(spec: PlacerSpec) -> Box<dyn Placer> {
    match spec {
        PlacerSpec::Chronological => Box::new(ChronologicalPlacer),
        PlacerSpec::UShaped => Box::new(UShapedPlacer),
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
        .build()
}

fn build_item(spec: &ItemSpec) -> Built<ContextItem> {
    let mut b = cupel::ContextItemBuilder::new(spec.content.clone(), spec.tokens)
        .tags(spec.tags.clone())
        .pinned(spec.pinned)
        .metadata(spec.metadata.iter().cloned().collect());
    if let Some(k) = &spec.kind {
        b = b.kind(kind(k)?);
    }
    if let Some(s) = &spec.source {
        b = b.source(ContextSource::new(s)?);
    }
    if let Some(ts) = spec.timestamp {
        b = b.timestamp(instant(ts));
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
    b.build()
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
    let slots: HashMap<ContextKind, i64> = spec
        .reserved_slots
        .iter()
        .map(|(k, n)| Ok((kind(k)?, *n)))
        .collect::<Built<_>>()
        .map_err(input)?;
    ContextBudget::new(
        spec.max_tokens,
        spec.target_tokens,
        spec.output_reserve,
        slots,
        spec.estimation_safety_margin_percent,
    )
    .map_err(input)
}

/// Recovers input positions of returned copies: each copy takes the first unused position
/// with the same content.
struct Positions<'a> {
    contents: Vec<&'a str>,
    used: Vec<bool>,
}

impl<'a> Positions<'a> {
    fn new(contents: Vec<&'a str>) -> Self {
        let used = vec![false; contents.len()];
        Positions { contents, used }
    }

    fn of(&mut self, item: &ContextItem) -> usize {
        let found =
            (0..self.contents.len()).find(|&i| !self.used[i] && self.contents[i] == item.content());
        match found {
            Some(i) => {
                self.used[i] = true;
                i
            }
            None => usize::MAX,
        }
    }
}

impl Engine for CupelEngine {
    fn groups_unsupported(&self) -> Option<&'static str> {
        Some(GROUPS_UNSUPPORTED)
    }

    fn variants_unsupported(&self) -> Option<&'static str> {
        Some("the reference crate has no variants")
    }

    fn name(&self) -> &'static str {
        "cupel (reference crate)"
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
        Ok(items.iter().map(|i| scorer.score(i, &items)).collect())
    }

    fn slice(
        &self,
        slicer: &SlicerSpec,
        items: &[ScoredItemSpec],
        budget: &BudgetSpec,
        _group_value: GroupValueSpec,
    ) -> EngineResult<SliceResult> {
        let slicer = build_slicer(slicer).map_err(construction)?;
        let built = build_items(items.iter().map(|s| &s.item))?;
        let scored: Vec<ScoredItem> = built
            .into_iter()
            .zip(items)
            .map(|(item, s)| ScoredItem {
                item,
                score: s.score,
            })
            .collect();
        let out = slicer.slice(&scored, &build_budget(budget)?).map_err(run)?;
        let mut positions = Positions::new(items.iter().map(|s| s.item.content.as_str()).collect());
        Ok(SliceResult {
            selected: out.iter().map(|i| positions.of(i)).collect(),
            ..SliceResult::default()
        })
    }

    fn place(
        &self,
        placer: &PlacerSpec,
        items: &[ScoredItemSpec],
        _group_value: GroupValueSpec,
    ) -> EngineResult<Vec<usize>> {
        let built = build_items(items.iter().map(|s| &s.item))?;
        let scored: Vec<ScoredItem> = built
            .into_iter()
            .zip(items)
            .map(|(item, s)| ScoredItem {
                item,
                score: s.score,
            })
            .collect();
        let out = build_placer(*placer).place(&scored);
        let mut positions = Positions::new(items.iter().map(|s| s.item.content.as_str()).collect());
        Ok(out.iter().map(|i| positions.of(i)).collect())
    }

    fn pipeline(
        &self,
        spec: &PipelineSpec,
        items: &[ItemSpec],
        budget: &BudgetSpec,
        traced: bool,
    ) -> EngineResult<PipelineResult> {
        let pipeline = build_pipeline(spec).map_err(construction)?;
        let built = build_items(items)?;
        let budget = build_budget(budget)?;
        let contents = || Positions::new(items.iter().map(|i| i.content.as_str()).collect());
        if !traced {
            let out = pipeline.run(&built, &budget).map_err(run)?;
            let mut positions = contents();
            return Ok(PipelineResult {
                placed: out.iter().map(|i| positions.of(i)).collect(),
                ..Default::default()
            });
        }
        let mut collector = DiagnosticTraceCollector::new(TraceDetailLevel::Item);
        let out = pipeline
            .run_traced(&built, &budget, &mut collector)
            .map_err(run)?;
        let mut positions = contents();
        let placed = out.iter().map(|i| positions.of(i)).collect();
        Ok(PipelineResult {
            placed,
            report: Some(report_record(&collector.into_report(), items)),
            ..PipelineResult::default()
        })
    }
}

fn report_record(report: &SelectionReport, items: &[ItemSpec]) -> ReportRecord {
    let mut included_positions = Positions::new(items.iter().map(|i| i.content.as_str()).collect());
    let mut excluded_positions = Positions::new(items.iter().map(|i| i.content.as_str()).collect());
    ReportRecord {
        total_candidates: report.total_candidates as i64,
        total_tokens_considered: report.total_tokens_considered.into(),
        included: report
            .included
            .iter()
            .map(|i| IncludedRecord {
                index: included_positions.of(&i.item),
                score: i.score,
                reason: format!("{:?}", i.reason),
                fields: Vec::new(),
            })
            .collect(),
        excluded: report
            .excluded
            .iter()
            .map(|e| ExcludedRecord {
                index: excluded_positions.of(&e.item),
                score: e.score,
                reason: reason_record(&e.reason),
            })
            .collect(),
        shortfalls: Vec::new(),
        groups: Vec::new(),
        pruned_forms: Vec::new(),
    }
}

fn reason_record(reason: &ExclusionReason) -> ReasonRecord {
    use FieldValue::{Float, Int, Str};
    let (name, fields): (&str, Vec<(&str, FieldValue)>) = match reason {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => (
            "BudgetExceeded",
            vec![
                ("item_tokens", Int(*item_tokens)),
                ("available_tokens", Int(*available_tokens)),
            ],
        ),
        ExclusionReason::ScoredTooLow { score, threshold } => (
            "ScoredTooLow",
            vec![("score", Float(*score)), ("threshold", Float(*threshold))],
        ),
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => (
            "Deduplicated",
            vec![("deduplicated_against", Str(deduplicated_against.clone()))],
        ),
        ExclusionReason::NegativeTokens { tokens } => {
            ("NegativeTokens", vec![("tokens", Int(*tokens))])
        }
        ExclusionReason::PinnedOverride { displaced_by } => (
            "PinnedOverride",
            vec![("displaced_by", Str(displaced_by.clone()))],
        ),
        ExclusionReason::CountCapExceeded { kind, cap, count } => (
            "CountCapExceeded",
            vec![
                ("kind", Str(kind.clone())),
                ("cap", Int(*cap as i64)),
                ("count", Int(*count as i64)),
            ],
        ),
        other => {
            return ReasonRecord {
                name: format!("{other:?}"),
                fields: Vec::new(),
            }
        }
    };
    ReasonRecord {
        name: name.into(),
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}
