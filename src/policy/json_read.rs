//! Reading the policy JSON (spec 07 §3 and the ctxpack extensions).
//!
//! The document is parsed into a `serde_json::Value` and walked by hand so that every
//! error names the JSON path of the bad field. Property names match case-sensitively and
//! unknown properties are rejected; enum strings match ASCII case-insensitively and the
//! .NET enums also accept their integer ordinals. `null` counts as absent for optional
//! properties and is a type error for required or non-nullable ones.

use serde_json::{Map, Value};

use crate::error::Result;
use crate::model::ContextKind;
use crate::model::OverflowStrategy;
use crate::policy::json_names::*;
use crate::policy::{
    index_path, key_path, policy_error, prop_path, CountQuota, KnapsackSpec, PercentQuota,
    PlacerType, Policy, ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::{DecayCurve, DecayScorer, MetadataTrustScorer};
use crate::slicer::ScarcityBehavior;

type Object = Map<String, Value>;

pub(super) fn policy(json: &str) -> Result<Policy> {
    if json.trim().is_empty() {
        return Err(policy_error("", "JSON input cannot be empty"));
    }
    let value: Value =
        serde_json::from_str(json).map_err(|e| policy_error("", format!("malformed JSON: {e}")))?;
    if value.is_null() {
        return Err(policy_error(
            "",
            "policy cannot be null (received JSON literal 'null')",
        ));
    }
    let obj = object(&value, "", POLICY_PROPS)?;
    let scorers = match obj.get("scorers") {
        None => return Err(policy_error("scorers", "is required")),
        Some(Value::Null) => return Err(policy_error("scorers", "must not be null")),
        Some(v) => array(v, "scorers")?
            .iter()
            .enumerate()
            .map(|(i, e)| scorer_entry(e, &index_path("scorers", i)))
            .collect::<Result<Vec<_>>>()?,
    };
    let slicer = slicer(obj, "")?;
    let placer = required_enum(obj, "", "placerType", &PLACER_TYPES)?
        .map_or(PlacerType::default(), |i| PLACER_VALUES[i]);
    let deduplication = match obj.get("deduplicationEnabled") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| type_error(v, "deduplicationEnabled", "a boolean"))?,
    };
    let overflow_strategy = required_enum(obj, "", "overflowStrategy", &OVERFLOW_STRATEGIES)?
        .map_or(OverflowStrategy::default(), |i| OVERFLOW_VALUES[i]);
    let policy = Policy {
        scorers,
        slicer,
        placer,
        deduplication,
        overflow_strategy,
        name: optional(obj, "name")
            .map(|v| string(v, "name"))
            .transpose()?,
        description: optional(obj, "description")
            .map(|v| string(v, "description"))
            .transpose()?,
    };
    policy.validate()?;
    Ok(policy)
}

fn scorer_entry(value: &Value, path: &str) -> Result<ScorerEntry> {
    let obj = object(value, path, ENTRY_PROPS)?;
    let ty = required_enum(obj, path, "type", &SCORER_TYPES)?
        .ok_or_else(|| policy_error(&prop_path(path, "type"), "is required"))?;
    let weight_path = prop_path(path, "weight");
    let weight = match obj.get("weight") {
        None => return Err(policy_error(&weight_path, "is required")),
        Some(v) => number(v, &weight_path)?,
    };
    for &(prop, owner) in OWNED_ENTRY_PROPS {
        if ty != owner && optional(obj, prop).is_some() {
            return Err(policy_error(
                &prop_path(path, prop),
                format!("is only valid when type is {}", SCORER_TYPES.names[owner]),
            ));
        }
    }
    // Like .NET, kindWeights and tagWeights are accepted (and ignored) on other types.
    let kind_weights = optional(obj, "kindWeights")
        .map(|v| kind_weights(v, &prop_path(path, "kindWeights")))
        .transpose()?;
    let tag_weights = optional(obj, "tagWeights")
        .map(|v| weight_map(v, &prop_path(path, "tagWeights")))
        .transpose()?;
    let needs = |prop: &str| {
        optional(obj, prop).ok_or_else(|| {
            policy_error(
                &prop_path(path, prop),
                format!("must be specified when type is {}", SCORER_TYPES.names[ty]),
            )
        })
    };
    let scorer = match ty {
        RECENCY => ScorerSpec::Recency,
        PRIORITY => ScorerSpec::Priority,
        KIND => ScorerSpec::Kind {
            weights: kind_weights,
        },
        TAG => {
            needs("tagWeights")?;
            ScorerSpec::Tag {
                weights: tag_weights.unwrap_or_default(),
            }
        }
        FREQUENCY => ScorerSpec::Frequency,
        REFLEXIVE => ScorerSpec::Reflexive,
        SCALED => ScorerSpec::Scaled {
            inner: Box::new(scorer_entry(
                needs("innerScorer")?,
                &prop_path(path, "innerScorer"),
            )?),
        },
        COMPOSITE => {
            let children_path = prop_path(path, "children");
            let children = array(needs("children")?, &children_path)?
                .iter()
                .enumerate()
                .map(|(j, c)| scorer_entry(c, &index_path(&children_path, j)))
                .collect::<Result<Vec<_>>>()?;
            ScorerSpec::Composite { children }
        }
        DECAY => ScorerSpec::Decay {
            curve: curve(needs("curve")?, &prop_path(path, "curve"))?,
            null_timestamp_score: optional_number(obj, path, "nullTimestampScore")?
                .unwrap_or(DecayScorer::DEFAULT_NULL_TIMESTAMP_SCORE),
        },
        METADATA_TRUST => ScorerSpec::MetadataTrust {
            default_score: optional_number(obj, path, "defaultScore")?
                .unwrap_or(MetadataTrustScorer::DEFAULT_SCORE),
        },
        _ => ScorerSpec::MetadataKey {
            key: string(needs("key")?, &prop_path(path, "key"))?,
            value: string(needs("value")?, &prop_path(path, "value"))?,
            boost: number(needs("boost")?, &prop_path(path, "boost"))?,
        },
    };
    Ok(ScorerEntry { weight, scorer })
}

fn kind_weights(value: &Value, path: &str) -> Result<Vec<(ContextKind, f64)>> {
    weight_map(value, path)?
        .into_iter()
        .map(|(k, w)| {
            let kind = ContextKind::new(k)
                .map_err(|_| policy_error(path, "kind names must not be blank"))?;
            Ok((kind, w))
        })
        .collect()
}

/// An object of numbers, in document order (TagScorer sums its total in this order).
fn weight_map(value: &Value, path: &str) -> Result<Vec<(String, f64)>> {
    let obj = value
        .as_object()
        .ok_or_else(|| type_error(value, path, "an object"))?;
    obj.iter()
        .map(|(k, v)| Ok((k.clone(), number(v, &key_path(path, k))?)))
        .collect()
}

fn curve(value: &Value, path: &str) -> Result<DecayCurve> {
    let obj = object(value, path, CURVE_PROPS)?;
    let ty = required_enum(obj, path, "type", &CURVE_TYPES)?
        .ok_or_else(|| policy_error(&prop_path(path, "type"), "is required"))?;
    let allowed: &[&str] = match ty {
        EXPONENTIAL => &["halfLifeNanos"],
        WINDOW => &["maxAgeNanos"],
        _ => &["windows"],
    };
    for prop in ["halfLifeNanos", "maxAgeNanos", "windows"] {
        let present = optional(obj, prop).is_some();
        if present != allowed.contains(&prop) {
            let p = prop_path(path, prop);
            let name = CURVE_TYPES.names[ty];
            return Err(if present {
                policy_error(&p, format!("is not valid for a {name} curve"))
            } else {
                policy_error(&p, format!("must be specified for a {name} curve"))
            });
        }
    }
    let nanos = |prop: &str| integer(&obj[prop], &prop_path(path, prop));
    Ok(match ty {
        EXPONENTIAL => DecayCurve::Exponential {
            half_life_ns: nanos("halfLifeNanos")?,
        },
        WINDOW => DecayCurve::Window {
            max_age_ns: nanos("maxAgeNanos")?,
        },
        STEP => {
            let windows_path = prop_path(path, "windows");
            let windows = array(&obj["windows"], &windows_path)?
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let wp = index_path(&windows_path, i);
                    let wo = object(w, &wp, WINDOW_PROPS)?;
                    let field = |prop: &str| {
                        optional(wo, prop)
                            .ok_or_else(|| policy_error(&prop_path(&wp, prop), "is required"))
                    };
                    Ok((
                        integer(field("maxAgeNanos")?, &prop_path(&wp, "maxAgeNanos"))?,
                        number(field("score")?, &prop_path(&wp, "score"))?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            DecayCurve::Step { windows }
        }
        _ => unreachable!("curve type index out of range"),
    })
}

/// The slicer whose properties live in `obj` (at `path`): its type, sizes, count quotas and inner
/// slicer, wrapped in a percentage quota when `quotas` is non-empty (policy step M6 in
/// docs/decisions.md). Where `stream` may appear is a nesting rule checked by validation.
fn slicer(obj: &Object, path: &str) -> Result<SlicerSpec> {
    let ty = required_enum(obj, path, "slicerType", &SLICER_TYPES)?.unwrap_or(GREEDY);
    let knapsacks = &[KNAPSACK, COUNT_CONSTRAINED_KNAPSACK][..];
    let counted = &[COUNT_QUOTA, COUNT_CONSTRAINED_KNAPSACK][..];
    let rules: [(&str, &[usize], &str); 6] = [
        (
            "knapsackBucketSize",
            knapsacks,
            "knapsack or countConstrainedKnapsack",
        ),
        (
            "knapsackTableLimitBytes",
            knapsacks,
            "knapsack or countConstrainedKnapsack",
        ),
        ("streamBatchSize", &[STREAM], "stream"),
        (
            "countQuotas",
            counted,
            "countQuota or countConstrainedKnapsack",
        ),
        (
            "scarcity",
            counted,
            "countQuota or countConstrainedKnapsack",
        ),
        ("innerSlicer", &[COUNT_QUOTA], "countQuota"),
    ];
    for (prop, types, names) in rules {
        if optional(obj, prop).is_some() && !types.contains(&ty) {
            return Err(policy_error(
                &prop_path(path, prop),
                format!("can only be specified when slicerType is {names}"),
            ));
        }
    }
    let knapsack = || -> Result<KnapsackSpec> {
        Ok(KnapsackSpec {
            bucket_size: optional_integer(obj, path, "knapsackBucketSize")?,
            table_limit_bytes: optional(obj, "knapsackTableLimitBytes")
                .map(|v| unsigned(v, &prop_path(path, "knapsackTableLimitBytes")))
                .transpose()?,
        })
    };
    let scarcity = || -> Result<ScarcityBehavior> {
        Ok(required_enum(obj, path, "scarcity", &SCARCITY)?
            .map_or(ScarcityBehavior::default(), |i| SCARCITY_VALUES[i]))
    };
    let base = match ty {
        GREEDY => SlicerSpec::Greedy,
        KNAPSACK => SlicerSpec::Knapsack(knapsack()?),
        STREAM => SlicerSpec::Stream {
            batch_size: optional_integer(obj, path, "streamBatchSize")?,
        },
        COUNT_QUOTA => {
            let inner = match optional(obj, "innerSlicer") {
                None => SlicerSpec::Greedy,
                Some(v) => {
                    let inner_path = prop_path(path, "innerSlicer");
                    slicer(object(v, &inner_path, SLICER_PROPS)?, &inner_path)?
                }
            };
            SlicerSpec::CountQuota {
                entries: count_quotas(obj, path, ty)?,
                inner: Box::new(inner),
                scarcity: scarcity()?,
            }
        }
        _ => SlicerSpec::CountConstrainedKnapsack {
            entries: count_quotas(obj, path, ty)?,
            knapsack: knapsack()?,
            scarcity: scarcity()?,
        },
    };
    let quotas_path = prop_path(path, "quotas");
    let quotas = match optional(obj, "quotas") {
        None => Vec::new(),
        Some(v) => array(v, &quotas_path)?
            .iter()
            .enumerate()
            .map(|(i, q)| percent_quota(q, &index_path(&quotas_path, i)))
            .collect::<Result<Vec<_>>>()?,
    };
    Ok(if quotas.is_empty() {
        base
    } else {
        SlicerSpec::Quota {
            entries: quotas,
            inner: Box::new(base),
        }
    })
}

fn percent_quota(value: &Value, path: &str) -> Result<PercentQuota> {
    let obj = object(value, path, QUOTA_PROPS)?;
    Ok(PercentQuota {
        kind: kind(obj, path)?,
        min_percent: optional_number(obj, path, "minPercent")?,
        max_percent: optional_number(obj, path, "maxPercent")?,
    })
}

fn count_quotas(obj: &Object, path: &str, ty: usize) -> Result<Vec<CountQuota>> {
    let list_path = prop_path(path, "countQuotas");
    let list = optional(obj, "countQuotas").ok_or_else(|| {
        policy_error(
            &list_path,
            format!(
                "must be specified when slicerType is {}",
                SLICER_TYPES.names[ty]
            ),
        )
    })?;
    array(list, &list_path)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = index_path(&list_path, i);
            let o = object(v, &p, COUNT_QUOTA_PROPS)?;
            let count = |prop: &str| {
                let pp = prop_path(&p, prop);
                let v = optional(o, prop).ok_or_else(|| policy_error(&pp, "is required"))?;
                usize::try_from(unsigned(v, &pp)?)
                    .map_err(|_| policy_error(&pp, "is too large for this platform"))
            };
            Ok(CountQuota {
                kind: kind(o, &p)?,
                require_count: count("requireCount")?,
                cap_count: count("capCount")?,
            })
        })
        .collect()
}

fn kind(obj: &Object, path: &str) -> Result<ContextKind> {
    let p = prop_path(path, "kind");
    let v = optional(obj, "kind").ok_or_else(|| policy_error(&p, "must not be null"))?;
    ContextKind::new(string(v, &p)?).map_err(|_| policy_error(&p, "must not be blank"))
}

// ---- value helpers -------------------------------------------------------------------

/// The object at `path`, after rejecting properties not in `known`.
fn object<'a>(value: &'a Value, path: &str, known: &[&str]) -> Result<&'a Object> {
    let obj = value
        .as_object()
        .ok_or_else(|| type_error(value, path, "an object"))?;
    if let Some(unknown) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(policy_error(&key_path(path, unknown), "unknown property"));
    }
    Ok(obj)
}

fn array<'a>(value: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    value
        .as_array()
        .ok_or_else(|| type_error(value, path, "an array"))
}

/// A property that may be absent or `null`.
fn optional<'a>(obj: &'a Object, prop: &str) -> Option<&'a Value> {
    obj.get(prop).filter(|v| !v.is_null())
}

fn string(value: &Value, path: &str) -> Result<String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| type_error(value, path, "a string"))
}

fn number(value: &Value, path: &str) -> Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| type_error(value, path, "a number"))
}

fn integer(value: &Value, path: &str) -> Result<i64> {
    match value.as_i64() {
        Some(i) => Ok(i),
        None if value.is_number() => Err(policy_error(
            path,
            format!("must be an integer (got {value})"),
        )),
        None => Err(type_error(value, path, "an integer")),
    }
}

fn unsigned(value: &Value, path: &str) -> Result<u64> {
    match value.as_u64() {
        Some(u) => Ok(u),
        None if value.is_number() => Err(policy_error(
            path,
            format!("must be a non-negative integer (got {value})"),
        )),
        None => Err(type_error(value, path, "a non-negative integer")),
    }
}

fn optional_number(obj: &Object, path: &str, prop: &str) -> Result<Option<f64>> {
    optional(obj, prop)
        .map(|v| number(v, &prop_path(path, prop)))
        .transpose()
}

fn optional_integer(obj: &Object, path: &str, prop: &str) -> Result<Option<i64>> {
    optional(obj, prop)
        .map(|v| integer(v, &prop_path(path, prop)))
        .transpose()
}

/// A non-nullable enum property: `None` when absent; `null` is a type error.
fn required_enum(obj: &Object, path: &str, prop: &str, e: &JsonEnum) -> Result<Option<usize>> {
    let p = prop_path(path, prop);
    let Some(value) = obj.get(prop) else {
        return Ok(None);
    };
    let found = match value {
        Value::String(s) => e.names.iter().position(|n| n.eq_ignore_ascii_case(s)),
        Value::Number(n) if e.ordinals > 0 => {
            match n
                .as_u64()
                .and_then(|o| usize::try_from(o).ok())
                .filter(|&o| o < e.ordinals)
            {
                Some(o) => Some(o),
                None => return Err(policy_error(&p, format!("unknown {} value {n}", e.what))),
            }
        }
        other => return Err(type_error(other, &p, "a string")),
    };
    found.map(Some).ok_or_else(|| {
        policy_error(
            &p,
            format!(
                "unknown {} {value}; known values: {}",
                e.what,
                e.names.join(", ")
            ),
        )
    })
}

fn type_error(value: &Value, path: &str, expected: &str) -> crate::Error {
    let found = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    policy_error(path, format!("expected {expected}, found {found}"))
}
