//! Policy → pipeline (spec 07 §1.5, policy steps M1–M6 in docs/decisions.md).
//!
//! Component constructors validate their own configuration, so a pipeline built from a policy fails
//! with exactly the errors of building it by hand.

use std::sync::Arc;

use crate::error::Result;
use crate::model::ContextKind;
use crate::pipeline::Pipeline;
use crate::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use crate::policy::{
    CountQuota, KnapsackSpec, PercentQuota, PlacerType, Policy, ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::{
    CompositeScorer, DecayScorer, FrequencyScorer, KindScorer, MetadataKeyScorer,
    MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer, ScaledScorer, Scorer,
    SystemClock, TagScorer,
};
use crate::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaEntry, QuotaSlice, Slicer, DEFAULT_BUCKET_SIZE,
};

pub(super) fn pipeline(policy: &Policy) -> Result<Pipeline> {
    policy.validate()?;
    Pipeline::builder()
        .scorer(composite(&policy.scorers)?)
        .slicer(slicer(&policy.slicer)?)
        .placer(placer(policy.placer))
        .deduplication(policy.deduplication)
        .overflow_strategy(policy.overflow_strategy)
        .group_value(policy.group_value)
        .pinned_first(policy.pinned_first)
        .use_variants(policy.use_variants)
        .build()
}

/// Policy step M1 in docs/decisions.md: every entry becomes a weighted term of a composite, even a
/// single one.
fn composite(entries: &[ScorerEntry]) -> Result<Arc<dyn Scorer>> {
    let children = entries
        .iter()
        .map(|e| Ok((scorer(&e.scorer)?, e.weight)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(CompositeScorer::new(children)?))
}

/// Policy step M2 in docs/decisions.md, plus the extension scorers.
fn scorer(spec: &ScorerSpec) -> Result<Arc<dyn Scorer>> {
    Ok(match spec {
        ScorerSpec::Recency => Arc::new(RecencyScorer::new()),
        ScorerSpec::Priority => Arc::new(PriorityScorer::new()),
        ScorerSpec::Kind { weights: None } => Arc::new(KindScorer::new()),
        ScorerSpec::Kind { weights: Some(w) } => Arc::new(KindScorer::with_weights(w.clone())?),
        ScorerSpec::Tag { weights } => Arc::new(TagScorer::new(weights.clone())?),
        ScorerSpec::Frequency => Arc::new(FrequencyScorer::new()),
        ScorerSpec::Reflexive => Arc::new(ReflexiveScorer::new()),
        ScorerSpec::Scaled { inner } => Arc::new(ScaledScorer::new(scorer(&inner.scorer)?)),
        ScorerSpec::Composite { children } => composite(children)?,
        ScorerSpec::Decay {
            curve,
            null_timestamp_score,
        } => Arc::new(DecayScorer::new(
            Arc::new(SystemClock),
            curve.clone(),
            *null_timestamp_score,
        )?),
        ScorerSpec::MetadataTrust { default_score } => {
            Arc::new(MetadataTrustScorer::new(*default_score)?)
        }
        ScorerSpec::MetadataKey { key, value, boost } => {
            Arc::new(MetadataKeyScorer::new(key.clone(), value.clone(), *boost)?)
        }
        ScorerSpec::Registered(registered) => registered.scorer().clone(),
    })
}

/// Policy steps M3 and M6 in docs/decisions.md, plus the count-quota extensions.
fn slicer(spec: &SlicerSpec) -> Result<Arc<dyn Slicer>> {
    Ok(match spec {
        SlicerSpec::Greedy | SlicerSpec::Stream { .. } => Arc::new(GreedySlice::new()),
        SlicerSpec::Knapsack(k) => Arc::new(knapsack(k)?),
        SlicerSpec::Quota { entries, inner } => {
            Arc::new(QuotaSlice::new(percent_entries(entries)?, slicer(inner)?)?)
        }
        SlicerSpec::CountQuota {
            entries,
            inner,
            scarcity,
        } => Arc::new(CountQuotaSlice::new(
            count_entries(entries)?,
            slicer(inner)?,
            *scarcity,
        )?),
        SlicerSpec::CountConstrainedKnapsack {
            entries,
            knapsack: k,
            scarcity,
        } => Arc::new(CountConstrainedKnapsackSlice::new(
            count_entries(entries)?,
            knapsack(k)?,
            *scarcity,
        )?),
    })
}

fn knapsack(spec: &KnapsackSpec) -> Result<KnapsackSlice> {
    let bucket = spec.bucket_size.unwrap_or(DEFAULT_BUCKET_SIZE);
    match spec.table_limit_bytes {
        None => KnapsackSlice::new(bucket),
        Some(limit) => KnapsackSlice::with_table_limit(bucket, limit),
    }
}

/// The .NET quota-set builder (spec 07 §1.3): entries of the same kind (ASCII
/// case-insensitive) merge, each bound a later entry sets overwriting the earlier one; an
/// absent minimum means 0 and an absent maximum 100. Kinds keep their first spelling and
/// first-appearance order.
fn percent_entries(entries: &[PercentQuota]) -> Result<Vec<QuotaEntry>> {
    let mut merged: Vec<(ContextKind, Option<f64>, Option<f64>)> = Vec::new();
    for entry in entries {
        match merged.iter_mut().find(|(kind, _, _)| *kind == entry.kind) {
            Some((_, min, max)) => {
                *min = entry.min_percent.or(*min);
                *max = entry.max_percent.or(*max);
            }
            None => merged.push((entry.kind.clone(), entry.min_percent, entry.max_percent)),
        }
    }
    merged
        .into_iter()
        .map(|(kind, min, max)| QuotaEntry::new(kind, min.unwrap_or(0.0), max.unwrap_or(100.0)))
        .collect()
}

fn count_entries(entries: &[CountQuota]) -> Result<Vec<CountQuotaEntry>> {
    entries
        .iter()
        .map(|e| CountQuotaEntry::new(e.kind.clone(), e.require_count, e.cap_count))
        .collect()
}

/// Policy step M4 in docs/decisions.md.
fn placer(placer: PlacerType) -> Arc<dyn Placer> {
    match placer {
        PlacerType::Chronological => Arc::new(ChronologicalPlacer::new()),
        PlacerType::UShaped => Arc::new(UShapedPlacer::new()),
    }
}
