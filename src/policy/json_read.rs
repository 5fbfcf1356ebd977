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
use crate::policy::json_names::*;
use crate::policy::{
    index_path, key_path, policy_error, prop_path, CountQuota, KnapsackSpec, PercentQuota, Policy,
    ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::{DecayCurve, DecayScorer, MetadataTrustScorer};
use crate::slicer::ScarcityBehavior;

type Object = Map<String, Value>;

pub(super) fn policy(json: &str) -> Result<Policy> {
    let value = document(json)?;
    let obj = object(&value, "", POLICY_PROPS)?;
    let scorers = match obj.get("scorers") {
        None => return Err(policy_error("scorers", "is required")),
        Some(Value::Null) => return Err(policy_error("scorers", "must not be null")),
        Some(v) => list(v, "scorers", scorer_entry)?,
    };
    // Read in .NET property order; the first error found is the one reported.
    let slicer = slicer(obj, "")?;
    let placer = required_enum(obj, "", "placerType")?.unwrap_or_default();
    let deduplication = match obj.get("deduplicationEnabled") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| type_error(v, "deduplicationEnabled", "a boolean"))?,
    };
    let text = |prop: &str| optional(obj, prop).map(|v| string(v, prop)).transpose();
    let policy = Policy {
        scorers,
        slicer,
        placer,
        deduplication,
        overflow_strategy: required_enum(obj, "", "overflowStrategy")?.unwrap_or_default(),
        name: text("name")?,
        description: text("description")?,
    };
    policy.validate()?;
    Ok(policy)
}

/// The parsed document: not empty, well-formed, not `null`.
fn document(json: &str) -> Result<Value> {
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
    Ok(value)
}

fn scorer_entry(value: &Value, path: &str) -> Result<ScorerEntry> {
    let obj = object(value, path, ENTRY_PROPS)?;
    let ty = required_enum::<ScorerType>(obj, path, "type")?
        .ok_or_else(|| policy_error(&prop_path(path, "type"), "is required"))?;
    let weight_path = prop_path(path, "weight");
    let weight = match obj.get("weight") {
        None => return Err(policy_error(&weight_path, "is required")),
        Some(v) => number(v, &weight_path)?,
    };
    for owner in ScorerType::ALL {
        for &prop in owner.own_props() {
            if ty != *owner && optional(obj, prop).is_some() {
                return Err(policy_error(
                    &prop_path(path, prop),
                    format!("is only valid when type is {}", owner.name()),
                ));
            }
        }
    }
    Ok(ScorerEntry {
        weight,
        scorer: scorer_spec(ty, obj, path)?,
    })
}

/// The scorer of an entry of type `ty` whose properties are in `obj` (at `path`); the
/// properties of other types were rejected already.
fn scorer_spec(ty: ScorerType, obj: &Object, path: &str) -> Result<ScorerSpec> {
    // Like .NET, kindWeights and tagWeights are read (and ignored) on other types too.
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
                format!("must be specified when type is {}", ty.name()),
            )
        })
    };
    let nested = |prop: &str| -> Result<Box<ScorerEntry>> {
        Ok(Box::new(scorer_entry(
            needs(prop)?,
            &prop_path(path, prop),
        )?))
    };
    Ok(match ty {
        ScorerType::Recency => ScorerSpec::Recency,
        ScorerType::Priority => ScorerSpec::Priority,
        ScorerType::Kind => ScorerSpec::Kind {
            weights: kind_weights,
        },
        ScorerType::Tag => {
            needs("tagWeights")?;
            ScorerSpec::Tag {
                weights: tag_weights.unwrap_or_default(),
            }
        }
        ScorerType::Frequency => ScorerSpec::Frequency,
        ScorerType::Reflexive => ScorerSpec::Reflexive,
        ScorerType::Scaled => ScorerSpec::Scaled {
            inner: nested("innerScorer")?,
        },
        ScorerType::Composite => ScorerSpec::Composite {
            children: list(
                needs("children")?,
                &prop_path(path, "children"),
                scorer_entry,
            )?,
        },
        ScorerType::Decay => ScorerSpec::Decay {
            curve: curve(needs("curve")?, &prop_path(path, "curve"))?,
            null_timestamp_score: optional_number(obj, path, "nullTimestampScore")?
                .unwrap_or(DecayScorer::DEFAULT_NULL_TIMESTAMP_SCORE),
        },
        ScorerType::MetadataTrust => ScorerSpec::MetadataTrust {
            default_score: optional_number(obj, path, "defaultScore")?
                .unwrap_or(MetadataTrustScorer::DEFAULT_SCORE),
        },
        ScorerType::MetadataKey => ScorerSpec::MetadataKey {
            key: string(needs("key")?, &prop_path(path, "key"))?,
            value: string(needs("value")?, &prop_path(path, "value"))?,
            boost: number(needs("boost")?, &prop_path(path, "boost"))?,
        },
    })
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
    let ty = required_enum::<CurveType>(obj, path, "type")?
        .ok_or_else(|| policy_error(&prop_path(path, "type"), "is required"))?;
    for &prop in TYPED_CURVE_PROPS {
        let present = optional(obj, prop).is_some();
        if present != (prop == ty.prop()) {
            let p = prop_path(path, prop);
            let name = ty.name();
            return Err(if present {
                policy_error(&p, format!("is not valid for a {name} curve"))
            } else {
                policy_error(&p, format!("must be specified for a {name} curve"))
            });
        }
    }
    let field = &obj[ty.prop()];
    let field_path = prop_path(path, ty.prop());
    Ok(match ty {
        CurveType::Exponential => DecayCurve::Exponential {
            half_life_ns: integer(field, &field_path)?,
        },
        CurveType::Window => DecayCurve::Window {
            max_age_ns: integer(field, &field_path)?,
        },
        CurveType::Step => DecayCurve::Step {
            windows: list(field, &field_path, step_window)?,
        },
    })
}

/// One `{ "maxAgeNanos", "score" }` window of a step curve.
fn step_window(value: &Value, path: &str) -> Result<(i64, f64)> {
    let obj = object(value, path, WINDOW_PROPS)?;
    let field = |prop: &str| {
        optional(obj, prop).ok_or_else(|| policy_error(&prop_path(path, prop), "is required"))
    };
    Ok((
        integer(field("maxAgeNanos")?, &prop_path(path, "maxAgeNanos"))?,
        number(field("score")?, &prop_path(path, "score"))?,
    ))
}

/// The slicer whose properties live in `obj` (at `path`): its type, sizes, count quotas
/// and inner slicer, wrapped in a percentage quota when `quotas` is non-empty (M6). Where
/// `stream` may appear is a nesting rule checked by validation.
fn slicer(obj: &Object, path: &str) -> Result<SlicerSpec> {
    let ty = required_enum::<SlicerType>(obj, path, "slicerType")?.unwrap_or(SlicerType::Greedy);
    for &prop in TYPED_SLICER_PROPS {
        if optional(obj, prop).is_some() && !ty.props().contains(&prop) {
            return Err(policy_error(
                &prop_path(path, prop),
                format!(
                    "can only be specified when slicerType is {}",
                    SlicerType::owners_of(prop)
                ),
            ));
        }
    }
    let base = base_slicer(ty, obj, path)?;
    let quotas = match optional(obj, "quotas") {
        None => Vec::new(),
        Some(v) => list(v, &prop_path(path, "quotas"), percent_quota)?,
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

/// The slicer of type `ty` without its percentage quotas.
fn base_slicer(ty: SlicerType, obj: &Object, path: &str) -> Result<SlicerSpec> {
    let knapsack = || -> Result<KnapsackSpec> {
        Ok(KnapsackSpec {
            bucket_size: optional_integer(obj, path, "knapsackBucketSize")?,
            table_limit_bytes: optional(obj, "knapsackTableLimitBytes")
                .map(|v| unsigned(v, &prop_path(path, "knapsackTableLimitBytes")))
                .transpose()?,
        })
    };
    let scarcity = || -> Result<ScarcityBehavior> {
        Ok(required_enum(obj, path, "scarcity")?.unwrap_or_default())
    };
    Ok(match ty {
        SlicerType::Greedy => SlicerSpec::Greedy,
        SlicerType::Knapsack => SlicerSpec::Knapsack(knapsack()?),
        SlicerType::Stream => SlicerSpec::Stream {
            batch_size: optional_integer(obj, path, "streamBatchSize")?,
        },
        SlicerType::CountQuota => {
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
        SlicerType::CountConstrainedKnapsack => SlicerSpec::CountConstrainedKnapsack {
            entries: count_quotas(obj, path, ty)?,
            knapsack: knapsack()?,
            scarcity: scarcity()?,
        },
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

fn count_quotas(obj: &Object, path: &str, ty: SlicerType) -> Result<Vec<CountQuota>> {
    let list_path = prop_path(path, "countQuotas");
    let value = optional(obj, "countQuotas").ok_or_else(|| {
        policy_error(
            &list_path,
            format!("must be specified when slicerType is {}", ty.name()),
        )
    })?;
    list(value, &list_path, count_quota)
}

fn count_quota(value: &Value, path: &str) -> Result<CountQuota> {
    let obj = object(value, path, COUNT_QUOTA_PROPS)?;
    let count = |prop: &str| {
        let p = prop_path(path, prop);
        let v = optional(obj, prop).ok_or_else(|| policy_error(&p, "is required"))?;
        usize::try_from(unsigned(v, &p)?)
            .map_err(|_| policy_error(&p, "is too large for this platform"))
    };
    Ok(CountQuota {
        kind: kind(obj, path)?,
        require_count: count("requireCount")?,
        cap_count: count("capCount")?,
    })
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

/// The array at `path`, each element read by `read` with its own path.
fn list<T>(value: &Value, path: &str, read: impl Fn(&Value, &str) -> Result<T>) -> Result<Vec<T>> {
    array(value, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| read(v, &index_path(path, i)))
        .collect()
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

/// A non-nullable enum property: `None` when absent; `null` is a type error. Integers are
/// accepted as .NET ordinals for the enums that have them.
fn required_enum<E: JsonEnum>(obj: &Object, path: &str, prop: &str) -> Result<Option<E>> {
    let p = prop_path(path, prop);
    let Some(value) = obj.get(prop) else {
        return Ok(None);
    };
    match value {
        Value::String(s) => E::from_name(s).map(Some).ok_or_else(|| {
            policy_error(
                &p,
                format!(
                    "unknown {} {value}; known values: {}",
                    E::WHAT,
                    E::known_names()
                ),
            )
        }),
        Value::Number(n) if E::has_ordinals() => n
            .as_u64()
            .and_then(E::from_ordinal)
            .map(Some)
            .ok_or_else(|| policy_error(&p, format!("unknown {} value {n}", E::WHAT))),
        other => Err(type_error(other, &p, "a string")),
    }
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
