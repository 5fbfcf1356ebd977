//! Pipeline → policy: recognise built-in components through `as_any()` downcasts.

use std::sync::Arc;

use crate::error::Result;
use crate::pipeline::Pipeline;
use crate::placer::{ChronologicalPlacer, Placer, UShapedPlacer};
use crate::policy::{
    index_path, policy_error, prop_path, CountQuota, KnapsackSpec, PercentQuota, PlacerType,
    Policy, ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::{
    CompositeScorer, DecayScorer, FrequencyScorer, KindScorer, MetadataKeyScorer,
    MetadataTrustScorer, PriorityScorer, RecencyScorer, ReflexiveScorer, ScaledScorer, Scorer,
    TagScorer,
};
use crate::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaSlice, Slicer, DEFAULT_TABLE_LIMIT_BYTES,
};

const CUSTOM: &str = "custom components cannot be expressed as a policy";

pub(super) fn policy(pipeline: &Pipeline) -> Result<Policy> {
    let top = pipeline.scorer();
    let scorers = match top.as_any().downcast_ref::<CompositeScorer>() {
        Some(composite) => entries(composite, "scorers")?,
        None => vec![ScorerEntry::new(1.0, scorer(top, "scorer")?)],
    };
    let policy = Policy {
        scorers,
        slicer: slicer(pipeline.slicer(), "slicer")?,
        placer: placer(pipeline.placer())?,
        deduplication: pipeline.deduplication(),
        overflow_strategy: pipeline.overflow_strategy(),
        group_value: pipeline.group_value(),
        pinned_first: pipeline.pinned_first(),
        use_variants: pipeline.use_variants(),
        name: None,
        description: None,
    };
    // Some built-in shapes have no policy form (e.g. a quota directly inside a quota).
    policy.validate()?;
    Ok(policy)
}

fn entries(composite: &CompositeScorer, path: &str) -> Result<Vec<ScorerEntry>> {
    composite
        .children()
        .iter()
        .enumerate()
        .map(|(i, (child, weight))| {
            Ok(ScorerEntry::new(
                *weight,
                scorer(child, &index_path(path, i))?,
            ))
        })
        .collect()
}

fn scorer(s: &Arc<dyn Scorer>, path: &str) -> Result<ScorerSpec> {
    let any = s.as_any();
    if any.is::<RecencyScorer>() {
        return Ok(ScorerSpec::Recency);
    }
    if any.is::<PriorityScorer>() {
        return Ok(ScorerSpec::Priority);
    }
    if any.is::<FrequencyScorer>() {
        return Ok(ScorerSpec::Frequency);
    }
    if any.is::<ReflexiveScorer>() {
        return Ok(ScorerSpec::Reflexive);
    }
    if let Some(k) = any.downcast_ref::<KindScorer>() {
        let defaults = KindScorer::new();
        let weights = (k.weights() != defaults.weights()).then(|| k.weights().to_vec());
        return Ok(ScorerSpec::Kind { weights });
    }
    if let Some(t) = any.downcast_ref::<TagScorer>() {
        return Ok(ScorerSpec::Tag {
            weights: t.weights().to_vec(),
        });
    }
    if let Some(sc) = any.downcast_ref::<ScaledScorer>() {
        let inner = scorer(sc.inner(), &prop_path(path, "innerScorer"))?;
        return Ok(ScorerSpec::Scaled {
            inner: Box::new(ScorerEntry::new(1.0, inner)),
        });
    }
    if let Some(c) = any.downcast_ref::<CompositeScorer>() {
        return Ok(ScorerSpec::Composite {
            children: entries(c, &prop_path(path, "children"))?,
        });
    }
    if let Some(d) = any.downcast_ref::<DecayScorer>() {
        if !d.clock().is_system_clock() {
            return Err(policy_error(
                path,
                "a DecayScorer on a clock other than the system clock cannot be expressed as a policy",
            ));
        }
        return Ok(ScorerSpec::Decay {
            curve: d.curve().clone(),
            null_timestamp_score: d.null_timestamp_score(),
        });
    }
    if let Some(m) = any.downcast_ref::<MetadataTrustScorer>() {
        return Ok(ScorerSpec::MetadataTrust {
            default_score: m.default_score(),
        });
    }
    if let Some(m) = any.downcast_ref::<MetadataKeyScorer>() {
        return Ok(ScorerSpec::MetadataKey {
            key: m.key().to_string(),
            value: m.value().to_string(),
            boost: m.boost(),
        });
    }
    Err(policy_error(path, CUSTOM))
}

fn slicer(s: &Arc<dyn Slicer>, path: &str) -> Result<SlicerSpec> {
    let any = s.as_any();
    if any.is::<GreedySlice>() {
        return Ok(SlicerSpec::Greedy);
    }
    if let Some(k) = any.downcast_ref::<KnapsackSlice>() {
        return Ok(SlicerSpec::Knapsack(knapsack(k)));
    }
    if let Some(q) = any.downcast_ref::<QuotaSlice>() {
        let entries = q
            .entries()
            .iter()
            .map(|e| PercentQuota {
                kind: e.kind().clone(),
                min_percent: Some(e.require()),
                max_percent: Some(e.cap()),
            })
            .collect();
        return Ok(SlicerSpec::Quota {
            entries,
            inner: Box::new(slicer(q.inner(), path)?),
        });
    }
    if let Some(c) = any.downcast_ref::<CountQuotaSlice>() {
        return Ok(SlicerSpec::CountQuota {
            entries: counts(c.entries()),
            inner: Box::new(slicer(c.inner(), &prop_path(path, "innerSlicer"))?),
            scarcity: c.scarcity(),
        });
    }
    if let Some(c) = any.downcast_ref::<CountConstrainedKnapsackSlice>() {
        return Ok(SlicerSpec::CountConstrainedKnapsack {
            entries: counts(c.entries()),
            knapsack: knapsack(c.knapsack()),
            scarcity: c.scarcity(),
        });
    }
    Err(policy_error(path, CUSTOM))
}

fn knapsack(k: &KnapsackSlice) -> KnapsackSpec {
    let limit = k.table_limit_bytes();
    KnapsackSpec {
        bucket_size: Some(k.bucket_size()),
        table_limit_bytes: (limit != DEFAULT_TABLE_LIMIT_BYTES).then_some(limit),
    }
}

fn counts(entries: &[CountQuotaEntry]) -> Vec<CountQuota> {
    entries
        .iter()
        .map(|e| CountQuota {
            kind: e.kind().clone(),
            require_count: e.require_count(),
            cap_count: e.cap_count(),
        })
        .collect()
}

fn placer(p: &Arc<dyn Placer>) -> Result<PlacerType> {
    let any = p.as_any();
    if any.is::<ChronologicalPlacer>() {
        Ok(PlacerType::Chronological)
    } else if any.is::<UShapedPlacer>() {
        Ok(PlacerType::UShaped)
    } else {
        Err(policy_error("placer", CUSTOM))
    }
}
