//! Writing the policy JSON in the .NET property order (spec 07 §3.1).
//!
//! The document is built as an ordered tree (`json_text`), so members come out exactly in
//! the order this module pushes them: the .NET order, extensions after their relatives.
//! Absent optional values are omitted; the five non-nullable top-level fields are always
//! written. Numbers and strings are printed as .NET prints them.

use crate::error::Result;
use crate::model::GroupValue;
use crate::policy::json_names::*;
use crate::policy::json_text::{number, Json, Members};
use crate::policy::{
    index_path, key_path, prop_path, CountQuota, KnapsackSpec, PercentQuota, Policy, ScorerEntry,
    ScorerSpec, SlicerSpec,
};
use crate::scorer::DecayCurve;

pub(super) fn policy(policy: &Policy, pretty: bool) -> Result<String> {
    policy.validate()?;
    let scorers = list(&policy.scorers, "scorers", entry)?;
    let (slicer_type, slicer_props) = slicer_fields(&policy.slicer, "")?;
    let mut members: Members = vec![
        ("scorers", scorers),
        ("slicerType", Json::name(slicer_type)),
        ("placerType", Json::name(policy.placer)),
        (
            "deduplicationEnabled",
            Json::Raw(policy.deduplication.to_string()),
        ),
        ("overflowStrategy", Json::name(policy.overflow_strategy)),
    ];
    members.extend(slicer_props);
    // Extensions of the group feature (docs/groups.md), written only when not the default.
    if policy.group_value != GroupValue::Sum {
        members.push(("groupValue", Json::Str(policy.group_value.name().into())));
    }
    if policy.pinned_first {
        members.push(("pinnedFirst", Json::Raw("true".into())));
    }
    // Extension of the variant feature (docs/variants.md), written only when off.
    if !policy.use_variants {
        members.push(("useVariants", Json::Raw("false".into())));
    }
    let text = [("name", &policy.name), ("description", &policy.description)];
    members.extend(
        text.into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, Json::Str(v.clone())))),
    );
    Ok(Json::obj(members).to_text(pretty))
}

/// The elements of `items` written by `write`, each with its own path.
fn list<T>(items: &[T], path: &str, write: impl Fn(&T, &str) -> Result<Json>) -> Result<Json> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| write(item, &index_path(path, i)))
        .collect::<Result<_>>()
        .map(Json::Arr)
}

fn entry(entry: &ScorerEntry, path: &str) -> Result<Json> {
    let mut members: Members = vec![
        ("type", Json::Str(type_name(&entry.scorer).into())),
        ("weight", number(entry.weight, &prop_path(path, "weight"))?),
    ];
    members.extend(scorer_props(&entry.scorer, path)?);
    Ok(Json::obj(members))
}

/// The `type` of an entry: a built-in type's spelling or a registered name.
fn type_name(spec: &ScorerSpec) -> &str {
    match ScorerType::of(spec) {
        Ok(ty) => ty.name(),
        Err(registered) => registered.name(),
    }
}

/// The properties of a scorer entry after `type` and `weight`.
fn scorer_props(spec: &ScorerSpec, path: &str) -> Result<Members> {
    let at = |prop: &str| prop_path(path, prop);
    Ok(match spec {
        ScorerSpec::Recency
        | ScorerSpec::Priority
        | ScorerSpec::Frequency
        | ScorerSpec::Reflexive
        | ScorerSpec::Registered(_)
        | ScorerSpec::Kind { weights: None } => vec![],
        ScorerSpec::Kind { weights: Some(w) } => {
            let pairs = w.iter().map(|(k, v)| (k.as_str(), *v));
            vec![("kindWeights", weight_map(pairs, &at("kindWeights"))?)]
        }
        ScorerSpec::Tag { weights } => {
            let pairs = weights.iter().map(|(k, v)| (k.as_str(), *v));
            vec![("tagWeights", weight_map(pairs, &at("tagWeights"))?)]
        }
        ScorerSpec::Scaled { inner } => {
            vec![("innerScorer", entry(inner, &at("innerScorer"))?)]
        }
        ScorerSpec::Composite { children } => {
            vec![("children", list(children, &at("children"), entry)?)]
        }
        ScorerSpec::Decay {
            curve: c,
            null_timestamp_score,
        } => vec![
            ("curve", curve(c, &at("curve"))?),
            (
                "nullTimestampScore",
                number(*null_timestamp_score, &at("nullTimestampScore"))?,
            ),
        ],
        ScorerSpec::MetadataTrust { default_score } => {
            vec![("defaultScore", number(*default_score, &at("defaultScore"))?)]
        }
        ScorerSpec::MetadataKey { key, value, boost } => vec![
            ("key", Json::Str(key.clone())),
            ("value", Json::Str(value.clone())),
            ("boost", number(*boost, &at("boost"))?),
        ],
    })
}

fn curve(curve: &DecayCurve, path: &str) -> Result<Json> {
    let (ty, value) = match curve {
        DecayCurve::Exponential { half_life_ns } => {
            (CurveType::Exponential, Json::int(half_life_ns))
        }
        DecayCurve::Window { max_age_ns } => (CurveType::Window, Json::int(max_age_ns)),
        DecayCurve::Step { windows } => {
            let window = |(age, score): &(i64, f64), p: &str| -> Result<Json> {
                let score = number(*score, &prop_path(p, "score"))?;
                Ok(Json::obj([
                    ("maxAgeNanos", Json::int(age)),
                    ("score", score),
                ]))
            };
            let windows_path = prop_path(path, CurveType::Step.prop());
            (CurveType::Step, list(windows, &windows_path, window)?)
        }
    };
    Ok(Json::obj([("type", Json::name(ty)), (ty.prop(), value)]))
}

/// The `slicerType` of the slicer whose properties live in the JSON object at `path`,
/// and its other properties in writing order. Validation guarantees the shapes this
/// relies on: a percentage quota never directly wraps another one, and `stream` appears
/// only at the top level.
fn slicer_fields(spec: &SlicerSpec, path: &str) -> Result<(SlicerType, Members)> {
    let (quotas, base) = match spec {
        SlicerSpec::Quota { entries, inner } => {
            let quotas = list(entries, &prop_path(path, "quotas"), percent_quota)?;
            (Some(quotas), inner.as_ref())
        }
        other => (None, other),
    };
    let (ty, mut members) = base_slicer_fields(base, path)?;
    members.extend(quotas.map(|q| ("quotas", q)));
    members.sort_by_key(|(prop, _)| POLICY_PROPS.iter().position(|p| p == prop));
    Ok((ty, members))
}

/// The type and typed properties of a slicer without its percentage quotas.
fn base_slicer_fields(spec: &SlicerSpec, path: &str) -> Result<(SlicerType, Members)> {
    let knapsack = |k: &KnapsackSpec| -> Members {
        let bucket = k.bucket_size.map(|b| ("knapsackBucketSize", Json::int(b)));
        let limit = k
            .table_limit_bytes
            .map(|l| ("knapsackTableLimitBytes", Json::int(l)));
        bucket.into_iter().chain(limit).collect()
    };
    Ok(match spec {
        SlicerSpec::Greedy | SlicerSpec::Quota { .. } => (SlicerType::Greedy, vec![]),
        SlicerSpec::Knapsack(k) => (SlicerType::Knapsack, knapsack(k)),
        SlicerSpec::Stream { batch_size } => (
            SlicerType::Stream,
            batch_size
                .map(|b| ("streamBatchSize", Json::int(b)))
                .into_iter()
                .collect(),
        ),
        SlicerSpec::CountQuota {
            entries,
            inner,
            scarcity,
        } => {
            let mut members = vec![
                ("countQuotas", count_quotas(entries)),
                ("scarcity", Json::name(*scarcity)),
            ];
            if !matches!(inner.as_ref(), SlicerSpec::Greedy) {
                let inner_path = prop_path(path, "innerSlicer");
                let (inner_type, inner_props) = slicer_fields(inner, &inner_path)?;
                let mut inner_members = vec![("slicerType", Json::name(inner_type))];
                inner_members.extend(inner_props);
                members.push(("innerSlicer", Json::obj(inner_members)));
            }
            (SlicerType::CountQuota, members)
        }
        SlicerSpec::CountConstrainedKnapsack {
            entries,
            knapsack: k,
            scarcity,
        } => {
            let mut members = knapsack(k);
            members.push(("countQuotas", count_quotas(entries)));
            members.push(("scarcity", Json::name(*scarcity)));
            (SlicerType::CountConstrainedKnapsack, members)
        }
    })
}

fn percent_quota(q: &PercentQuota, path: &str) -> Result<Json> {
    let mut members: Members = vec![("kind", Json::Str(q.kind.as_str().into()))];
    for (name, bound) in [("minPercent", q.min_percent), ("maxPercent", q.max_percent)] {
        if let Some(v) = bound {
            members.push((name, number(v, &prop_path(path, name))?));
        }
    }
    Ok(Json::obj(members))
}

fn count_quotas(entries: &[CountQuota]) -> Json {
    Json::Arr(
        entries
            .iter()
            .map(|e| {
                Json::obj([
                    ("kind", Json::Str(e.kind.as_str().into())),
                    ("requireCount", Json::int(e.require_count)),
                    ("capCount", Json::int(e.cap_count)),
                ])
            })
            .collect(),
    )
}

fn weight_map<'a>(pairs: impl Iterator<Item = (&'a str, f64)>, path: &str) -> Result<Json> {
    pairs
        .map(|(k, v)| Ok((k.to_string(), number(v, &key_path(path, k))?)))
        .collect::<Result<_>>()
        .map(Json::Obj)
}
