//! Structural validation of a [`Policy`] (spec 07 §1.1–§1.3), reporting JSON paths.
//!
//! Order: every scorer entry (weights, nested entries), then "at least one scorer", then
//! the slicer (quota entries, sizes, nesting rules). The first failure is reported.

use crate::error::Result;
use crate::policy::{
    index_path, policy_error, prop_path, KnapsackSpec, PercentQuota, Policy, ScorerEntry,
    ScorerSpec, SlicerSpec,
};

pub(super) fn policy(policy: &Policy) -> Result<()> {
    for (i, entry) in policy.scorers.iter().enumerate() {
        scorer_entry(entry, &index_path("scorers", i))?;
    }
    if policy.scorers.is_empty() {
        return Err(policy_error("scorers", "must contain at least one entry"));
    }
    slicer(&policy.slicer, "", true)
}

/// Checks one entry at `path` and its nested entries.
pub(super) fn scorer_entry(entry: &ScorerEntry, path: &str) -> Result<()> {
    let w = entry.weight;
    if !(w.is_finite() && w > 0.0) {
        return Err(policy_error(
            &prop_path(path, "weight"),
            format!("must be positive and finite (got {w})"),
        ));
    }
    match &entry.scorer {
        ScorerSpec::Scaled { inner } => scorer_entry(inner, &prop_path(path, "innerScorer")),
        ScorerSpec::Composite { children } => {
            let children_path = prop_path(path, "children");
            if children.is_empty() {
                return Err(policy_error(
                    &children_path,
                    "must contain at least one entry",
                ));
            }
            for (j, child) in children.iter().enumerate() {
                scorer_entry(child, &index_path(&children_path, j))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks the slicer whose properties live in the JSON object at `path`. A percentage
/// quota shares its object with the slicer it wraps; a count quota's inner slicer lives in
/// `innerSlicer`. `top` is true for the policy's own object.
fn slicer(spec: &SlicerSpec, path: &str, top: bool) -> Result<()> {
    match spec {
        SlicerSpec::Greedy => Ok(()),
        SlicerSpec::Knapsack(k) => knapsack(k, path),
        SlicerSpec::Stream { batch_size } => {
            if !top {
                return Err(policy_error(
                    &prop_path(path, "slicerType"),
                    "stream is only allowed as the policy's own slicer",
                ));
            }
            positive(*batch_size, &prop_path(path, "streamBatchSize"))
        }
        SlicerSpec::Quota { entries, inner } => {
            let quotas_path = prop_path(path, "quotas");
            if entries.is_empty() {
                return Err(policy_error(
                    &quotas_path,
                    "must contain at least one entry",
                ));
            }
            for (i, entry) in entries.iter().enumerate() {
                percent_quota(entry, &index_path(&quotas_path, i))?;
            }
            match inner.as_ref() {
                SlicerSpec::Stream { .. } => Err(policy_error(
                    &quotas_path,
                    "cannot be combined with slicerType stream",
                )),
                SlicerSpec::Quota { .. } => Err(policy_error(
                    &quotas_path,
                    "a percentage quota cannot directly wrap another percentage quota",
                )),
                other => slicer(other, path, top),
            }
        }
        SlicerSpec::CountQuota { inner, .. } => {
            slicer(inner, &prop_path(path, "innerSlicer"), false)
        }
        SlicerSpec::CountConstrainedKnapsack { knapsack: k, .. } => knapsack(k, path),
    }
}

fn knapsack(spec: &KnapsackSpec, path: &str) -> Result<()> {
    positive(spec.bucket_size, &prop_path(path, "knapsackBucketSize"))?;
    if spec.table_limit_bytes == Some(0) {
        return Err(policy_error(
            &prop_path(path, "knapsackTableLimitBytes"),
            "must be > 0 (got 0)",
        ));
    }
    Ok(())
}

fn positive(value: Option<i64>, path: &str) -> Result<()> {
    match value {
        Some(v) if v <= 0 => Err(policy_error(path, format!("must be > 0 (got {v})"))),
        _ => Ok(()),
    }
}

/// The .NET `QuotaEntry` constructor checks, in its order.
fn percent_quota(entry: &PercentQuota, path: &str) -> Result<()> {
    if entry.min_percent.is_none() && entry.max_percent.is_none() {
        return Err(policy_error(
            path,
            "at least one of minPercent or maxPercent must be specified",
        ));
    }
    for (name, bound) in [
        ("minPercent", entry.min_percent),
        ("maxPercent", entry.max_percent),
    ] {
        if let Some(v) = bound {
            if !(0.0..=100.0).contains(&v) {
                return Err(policy_error(
                    &prop_path(path, name),
                    format!("must be in [0, 100] (got {v})"),
                ));
            }
        }
    }
    if let (Some(min), Some(max)) = (entry.min_percent, entry.max_percent) {
        if min > max {
            return Err(policy_error(
                path,
                format!("minPercent ({min}) cannot exceed maxPercent ({max})"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContextKind;
    use crate::policy::{CountQuota, PlacerType};
    use crate::slicer::ScarcityBehavior;

    fn entry(weight: f64, scorer: ScorerSpec) -> ScorerEntry {
        ScorerEntry::new(weight, scorer)
    }

    fn msg(p: &Policy) -> String {
        match p.validate().unwrap_err() {
            crate::Error::InvalidPolicy(m) => m,
            other => panic!("unexpected error {other:?}"),
        }
    }

    fn quota(kind: &str, min: Option<f64>, max: Option<f64>) -> PercentQuota {
        PercentQuota {
            kind: ContextKind::new(kind).unwrap(),
            min_percent: min,
            max_percent: max,
        }
    }

    #[test]
    fn valid_policy_passes() {
        let mut p = Policy::new(vec![entry(1.0, ScorerSpec::Recency)]);
        p.placer = PlacerType::UShaped;
        assert_eq!(p.validate(), Ok(()));
    }

    #[test]
    fn weights_must_be_positive_and_finite() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let p = Policy::new(vec![
                entry(1.0, ScorerSpec::Recency),
                entry(1.0, ScorerSpec::Priority),
                entry(bad, ScorerSpec::Kind { weights: None }),
            ]);
            assert_eq!(
                msg(&p),
                format!("scorers[2].weight: must be positive and finite (got {bad})")
            );
        }
    }

    #[test]
    fn nested_entries_are_checked_with_their_path() {
        let p = Policy::new(vec![entry(
            1.0,
            ScorerSpec::Scaled {
                inner: Box::new(entry(0.0, ScorerSpec::Priority)),
            },
        )]);
        assert_eq!(
            msg(&p),
            "scorers[0].innerScorer.weight: must be positive and finite (got 0)"
        );
        let p = Policy::new(vec![entry(
            1.0,
            ScorerSpec::Composite {
                children: vec![
                    entry(1.0, ScorerSpec::Recency),
                    entry(-2.0, ScorerSpec::Recency),
                ],
            },
        )]);
        assert_eq!(
            msg(&p),
            "scorers[0].children[1].weight: must be positive and finite (got -2)"
        );
        let p = Policy::new(vec![entry(1.0, ScorerSpec::Composite { children: vec![] })]);
        assert_eq!(
            msg(&p),
            "scorers[0].children: must contain at least one entry"
        );
    }

    #[test]
    fn scorers_must_not_be_empty() {
        assert_eq!(
            msg(&Policy::new(vec![])),
            "scorers: must contain at least one entry"
        );
    }

    #[test]
    fn sizes_must_be_positive() {
        let mut p = Policy::new(vec![entry(1.0, ScorerSpec::Recency)]);
        p.slicer = SlicerSpec::Knapsack(KnapsackSpec {
            bucket_size: Some(0),
            table_limit_bytes: None,
        });
        assert_eq!(msg(&p), "knapsackBucketSize: must be > 0 (got 0)");
        p.slicer = SlicerSpec::Knapsack(KnapsackSpec {
            bucket_size: None,
            table_limit_bytes: Some(0),
        });
        assert_eq!(msg(&p), "knapsackTableLimitBytes: must be > 0 (got 0)");
        p.slicer = SlicerSpec::Stream {
            batch_size: Some(-3),
        };
        assert_eq!(msg(&p), "streamBatchSize: must be > 0 (got -3)");
        p.slicer = SlicerSpec::CountConstrainedKnapsack {
            entries: vec![],
            knapsack: KnapsackSpec {
                bucket_size: Some(-1),
                table_limit_bytes: None,
            },
            scarcity: ScarcityBehavior::Degrade,
        };
        assert_eq!(msg(&p), "knapsackBucketSize: must be > 0 (got -1)");
    }

    #[test]
    fn quota_entries_follow_the_dotnet_rules() {
        let mut p = Policy::new(vec![entry(1.0, ScorerSpec::Recency)]);
        let wrap = |entries| SlicerSpec::Quota {
            entries,
            inner: Box::new(SlicerSpec::Greedy),
        };
        p.slicer = wrap(vec![
            quota("Document", Some(10.0), None),
            quota("Memory", None, None),
        ]);
        assert_eq!(
            msg(&p),
            "quotas[1]: at least one of minPercent or maxPercent must be specified"
        );
        p.slicer = wrap(vec![quota("Document", Some(150.0), None)]);
        assert_eq!(
            msg(&p),
            "quotas[0].minPercent: must be in [0, 100] (got 150)"
        );
        p.slicer = wrap(vec![quota("Document", None, Some(-1.0))]);
        assert_eq!(
            msg(&p),
            "quotas[0].maxPercent: must be in [0, 100] (got -1)"
        );
        p.slicer = wrap(vec![quota("Document", Some(f64::NAN), None)]);
        assert_eq!(
            msg(&p),
            "quotas[0].minPercent: must be in [0, 100] (got NaN)"
        );
        p.slicer = wrap(vec![quota("Document", Some(60.0), Some(20.0))]);
        assert_eq!(
            msg(&p),
            "quotas[0]: minPercent (60) cannot exceed maxPercent (20)"
        );
        p.slicer = wrap(vec![]);
        assert_eq!(msg(&p), "quotas: must contain at least one entry");
        p.slicer = wrap(vec![quota("Document", Some(0.0), Some(100.0))]);
        assert_eq!(p.validate(), Ok(()));
    }

    #[test]
    fn nesting_rules() {
        let mut p = Policy::new(vec![entry(1.0, ScorerSpec::Recency)]);
        let q = vec![quota("Document", Some(10.0), None)];
        p.slicer = SlicerSpec::Quota {
            entries: q.clone(),
            inner: Box::new(SlicerSpec::Stream { batch_size: None }),
        };
        assert_eq!(msg(&p), "quotas: cannot be combined with slicerType stream");
        p.slicer = SlicerSpec::Quota {
            entries: q.clone(),
            inner: Box::new(SlicerSpec::Quota {
                entries: q.clone(),
                inner: Box::new(SlicerSpec::Greedy),
            }),
        };
        assert_eq!(
            msg(&p),
            "quotas: a percentage quota cannot directly wrap another percentage quota"
        );
        let counts = vec![CountQuota {
            kind: ContextKind::new("Memory").unwrap(),
            require_count: 1,
            cap_count: 2,
        }];
        p.slicer = SlicerSpec::CountQuota {
            entries: counts.clone(),
            inner: Box::new(SlicerSpec::Stream { batch_size: None }),
            scarcity: ScarcityBehavior::Degrade,
        };
        assert_eq!(
            msg(&p),
            "innerSlicer.slicerType: stream is only allowed as the policy's own slicer"
        );
        p.slicer = SlicerSpec::CountQuota {
            entries: counts,
            inner: Box::new(SlicerSpec::Quota {
                entries: vec![quota("Doc", Some(5.0), Some(1.0))],
                inner: Box::new(SlicerSpec::Greedy),
            }),
            scarcity: ScarcityBehavior::Degrade,
        };
        assert_eq!(
            msg(&p),
            "innerSlicer.quotas[0]: minPercent (5) cannot exceed maxPercent (1)"
        );
    }
}
