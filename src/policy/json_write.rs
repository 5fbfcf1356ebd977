//! Writing the policy JSON in the .NET property order (spec 07 §3.1).
//!
//! `serde_json::Value` keeps object keys sorted, so the document is built as a small
//! ordered tree and printed here; serde_json only escapes strings. Absent optional values
//! are omitted; the five non-nullable top-level fields are always written. Numbers are
//! printed in their shortest round-trip form without exponent (`2`, `1.5`), as .NET does
//! for integral and ordinary values.

use crate::error::Result;
use crate::model::GroupValue;
use crate::policy::json_names::*;
use crate::policy::{
    index_path, key_path, policy_error, prop_path, CountQuota, KnapsackSpec, PercentQuota, Policy,
    ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::DecayCurve;
use crate::slicer::ScarcityBehavior;

/// An ordered JSON tree.
enum Json {
    /// A literal written as is: number, boolean.
    Raw(String),
    /// A string, escaped on output.
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

pub(super) fn policy(policy: &Policy, pretty: bool) -> Result<String> {
    policy.validate()?;
    let mut members = vec![(
        "scorers".to_string(),
        Json::Arr(
            policy
                .scorers
                .iter()
                .enumerate()
                .map(|(i, e)| entry(e, &index_path("scorers", i)))
                .collect::<Result<_>>()?,
        ),
    )];
    let slicer = SlicerFields::of(&policy.slicer, "")?;
    members.push(("slicerType".into(), Json::Str(slicer.ty.into())));
    let placer = name_of(&PLACER_TYPES, &PLACER_VALUES, &policy.placer);
    members.push(("placerType".into(), Json::Str(placer.into())));
    members.push((
        "deduplicationEnabled".into(),
        Json::Raw(policy.deduplication.to_string()),
    ));
    let overflow = name_of(
        &OVERFLOW_STRATEGIES,
        &OVERFLOW_VALUES,
        &policy.overflow_strategy,
    );
    members.push(("overflowStrategy".into(), Json::Str(overflow.into())));
    members.extend(slicer.rest);
    if policy.group_value != GroupValue::Sum {
        let value = Json::Str(policy.group_value.name().into());
        members.push(("groupValue".into(), value));
    }
    if policy.pinned_first {
        members.push(("pinnedFirst".into(), Json::Raw("true".into())));
    }
    if let Some(name) = &policy.name {
        members.push(("name".into(), Json::Str(name.clone())));
    }
    if let Some(description) = &policy.description {
        members.push(("description".into(), Json::Str(description.clone())));
    }
    let mut out = String::new();
    print(&Json::Obj(members), pretty, 0, &mut out);
    Ok(out)
}

fn entry(entry: &ScorerEntry, path: &str) -> Result<Json> {
    let (ty, extra): (usize, Vec<(&str, Json)>) = match &entry.scorer {
        ScorerSpec::Recency => (RECENCY, vec![]),
        ScorerSpec::Priority => (PRIORITY, vec![]),
        ScorerSpec::Kind { weights: None } => (KIND, vec![]),
        ScorerSpec::Kind { weights: Some(w) } => {
            let pairs = w.iter().map(|(k, v)| (k.as_str(), *v));
            (
                KIND,
                vec![(
                    "kindWeights",
                    weight_map(pairs, &prop_path(path, "kindWeights"))?,
                )],
            )
        }
        ScorerSpec::Tag { weights } => {
            let pairs = weights.iter().map(|(k, v)| (k.as_str(), *v));
            (
                TAG,
                vec![(
                    "tagWeights",
                    weight_map(pairs, &prop_path(path, "tagWeights"))?,
                )],
            )
        }
        ScorerSpec::Frequency => (FREQUENCY, vec![]),
        ScorerSpec::Reflexive => (REFLEXIVE, vec![]),
        ScorerSpec::Scaled { inner } => (
            SCALED,
            vec![(
                "innerScorer",
                self::entry(inner, &prop_path(path, "innerScorer"))?,
            )],
        ),
        ScorerSpec::Composite { children } => {
            let children_path = prop_path(path, "children");
            let list = children
                .iter()
                .enumerate()
                .map(|(j, c)| self::entry(c, &index_path(&children_path, j)))
                .collect::<Result<_>>()?;
            (COMPOSITE, vec![("children", Json::Arr(list))])
        }
        ScorerSpec::Decay {
            curve,
            null_timestamp_score,
        } => (
            DECAY,
            vec![
                ("curve", self::curve(curve, &prop_path(path, "curve"))?),
                (
                    "nullTimestampScore",
                    number(
                        *null_timestamp_score,
                        &prop_path(path, "nullTimestampScore"),
                    )?,
                ),
            ],
        ),
        ScorerSpec::MetadataTrust { default_score } => (
            METADATA_TRUST,
            vec![(
                "defaultScore",
                number(*default_score, &prop_path(path, "defaultScore"))?,
            )],
        ),
        ScorerSpec::MetadataKey { key, value, boost } => (
            METADATA_KEY,
            vec![
                ("key", Json::Str(key.clone())),
                ("value", Json::Str(value.clone())),
                ("boost", number(*boost, &prop_path(path, "boost"))?),
            ],
        ),
    };
    let mut members = vec![
        ("type".to_string(), Json::Str(SCORER_TYPES.names[ty].into())),
        (
            "weight".to_string(),
            number(entry.weight, &prop_path(path, "weight"))?,
        ),
    ];
    members.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
    Ok(Json::Obj(members))
}

fn curve(curve: &DecayCurve, path: &str) -> Result<Json> {
    let ty = |i: usize| ("type".to_string(), Json::Str(CURVE_TYPES.names[i].into()));
    Ok(Json::Obj(match curve {
        DecayCurve::Exponential { half_life_ns } => {
            vec![
                ty(EXPONENTIAL),
                ("halfLifeNanos".into(), Json::Raw(half_life_ns.to_string())),
            ]
        }
        DecayCurve::Window { max_age_ns } => {
            vec![
                ty(WINDOW),
                ("maxAgeNanos".into(), Json::Raw(max_age_ns.to_string())),
            ]
        }
        DecayCurve::Step { windows } => {
            let windows_path = prop_path(path, "windows");
            let list = windows
                .iter()
                .enumerate()
                .map(|(i, (age, score))| {
                    let score = number(*score, &prop_path(&index_path(&windows_path, i), "score"))?;
                    Ok(Json::Obj(vec![
                        ("maxAgeNanos".into(), Json::Raw(age.to_string())),
                        ("score".into(), score),
                    ]))
                })
                .collect::<Result<_>>()?;
            vec![ty(STEP), ("windows".into(), Json::Arr(list))]
        }
    }))
}

/// The slicer properties of one JSON object, gathered and then emitted in order.
struct SlicerFields {
    ty: &'static str,
    /// Every other property, in writing order.
    rest: Vec<(String, Json)>,
}

impl SlicerFields {
    /// Validation guarantees the shapes this relies on: a percentage quota never directly
    /// wraps another one, and `stream` appears only at the top level.
    fn of(spec: &SlicerSpec, path: &str) -> Result<SlicerFields> {
        let mut bucket = None;
        let mut limit = None;
        let mut batch = None;
        let mut quotas = None;
        let mut counts = None;
        let mut scarcity = None;
        let mut inner = None;
        let mut base = spec;
        if let SlicerSpec::Quota {
            entries,
            inner: wrapped,
        } = spec
        {
            quotas = Some(Json::Arr(
                entries
                    .iter()
                    .enumerate()
                    .map(|(i, q)| percent_quota(q, &index_path(&prop_path(path, "quotas"), i)))
                    .collect::<Result<_>>()?,
            ));
            base = wrapped;
        }
        let mut knapsack = |k: &KnapsackSpec| {
            bucket = k.bucket_size.map(|b| Json::Raw(b.to_string()));
            limit = k.table_limit_bytes.map(|l| Json::Raw(l.to_string()));
        };
        let ty = match base {
            SlicerSpec::Greedy | SlicerSpec::Quota { .. } => SLICER_TYPES.names[GREEDY],
            SlicerSpec::Knapsack(k) => {
                knapsack(k);
                SLICER_TYPES.names[KNAPSACK]
            }
            SlicerSpec::Stream { batch_size } => {
                batch = batch_size.map(|b| Json::Raw(b.to_string()));
                SLICER_TYPES.names[STREAM]
            }
            SlicerSpec::CountQuota {
                entries,
                inner: wrapped,
                scarcity: s,
            } => {
                counts = Some(count_quotas(entries));
                scarcity = Some(scarcity_name(*s));
                if !matches!(wrapped.as_ref(), SlicerSpec::Greedy) {
                    let inner_path = prop_path(path, "innerSlicer");
                    let fields = SlicerFields::of(wrapped, &inner_path)?;
                    let mut members = vec![("slicerType".to_string(), Json::Str(fields.ty.into()))];
                    members.extend(fields.rest);
                    inner = Some(Json::Obj(members));
                }
                SLICER_TYPES.names[COUNT_QUOTA]
            }
            SlicerSpec::CountConstrainedKnapsack {
                entries,
                knapsack: k,
                scarcity: s,
            } => {
                knapsack(k);
                counts = Some(count_quotas(entries));
                scarcity = Some(scarcity_name(*s));
                SLICER_TYPES.names[COUNT_CONSTRAINED_KNAPSACK]
            }
        };
        let rest = [
            ("knapsackBucketSize", bucket),
            ("knapsackTableLimitBytes", limit),
            ("streamBatchSize", batch),
            ("quotas", quotas),
            ("countQuotas", counts),
            ("scarcity", scarcity),
            ("innerSlicer", inner),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
        Ok(SlicerFields { ty, rest })
    }
}

fn scarcity_name(s: ScarcityBehavior) -> Json {
    Json::Str(name_of(&SCARCITY, &SCARCITY_VALUES, &s).into())
}

fn percent_quota(q: &PercentQuota, path: &str) -> Result<Json> {
    let mut members = vec![("kind".to_string(), Json::Str(q.kind.as_str().into()))];
    for (name, bound) in [("minPercent", q.min_percent), ("maxPercent", q.max_percent)] {
        if let Some(v) = bound {
            members.push((name.into(), number(v, &prop_path(path, name))?));
        }
    }
    Ok(Json::Obj(members))
}

fn count_quotas(entries: &[CountQuota]) -> Json {
    Json::Arr(
        entries
            .iter()
            .map(|e| {
                Json::Obj(vec![
                    ("kind".into(), Json::Str(e.kind.as_str().into())),
                    (
                        "requireCount".into(),
                        Json::Raw(e.require_count.to_string()),
                    ),
                    ("capCount".into(), Json::Raw(e.cap_count.to_string())),
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

/// A finite f64 in its shortest round-trip form; JSON has no NaN or infinity.
fn number(v: f64, path: &str) -> Result<Json> {
    if v.is_finite() {
        Ok(Json::Raw(format!("{v}")))
    } else {
        Err(policy_error(
            path,
            format!("cannot write a non-finite number ({v}) to JSON"),
        ))
    }
}

fn print(json: &Json, pretty: bool, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if pretty {
            out.push('\n');
            out.push_str(&"  ".repeat(depth));
        }
    };
    match json {
        Json::Raw(s) => out.push_str(s),
        Json::Str(s) => out.push_str(&serde_json::Value::String(s.clone()).to_string()),
        Json::Arr(items) if items.is_empty() => out.push_str("[]"),
        Json::Obj(members) if members.is_empty() => out.push_str("{}"),
        Json::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                print(item, pretty, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Json::Obj(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push_str(if pretty { ": " } else { ":" });
                print(value, pretty, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}
