//! Reading the policy JSON (spec 07 §3 and the ctxpack extensions).
//!
//! The document is parsed into a `serde_json::Value` and walked by hand so that every
//! error names the JSON path of the bad field. Property names match case-sensitively;
//! unknown properties are ignored with a warning (an error when reading strictly). Enum
//! strings match ASCII case-insensitively and the .NET enums also accept their integer
//! ordinals. `null` counts as absent for optional properties and is a type error for
//! required or non-nullable ones. A scorer `type` may also name a scorer the host
//! registered.

use serde_json::Value;

use crate::error::Result;
use crate::model::ContextKind;
use crate::model::GroupValue;
use crate::policy::json_names::*;
use crate::policy::json_value::*;
use crate::policy::{
    key_path, policy_error, prop_path, CountQuota, JsonRead, JsonReadOptions, JsonWarningKind,
    KnapsackSpec, PercentQuota, Policy, RegisteredScorer, ScorerEntry, ScorerSpec, SlicerSpec,
};
use crate::scorer::{DecayCurve, DecayScorer, MetadataTrustScorer};
use crate::slicer::ScarcityBehavior;

pub(super) fn policy(json: &str, options: &JsonReadOptions<'_>) -> Result<JsonRead<Policy>> {
    let r = Reader::new(options);
    let value = document(json, "policy")?;
    let obj = r.object(&value, "", POLICY_PROPS)?;
    let scorers = match obj.get("scorers") {
        None => return Err(policy_error("scorers", "is required")),
        Some(Value::Null) => return Err(policy_error("scorers", "must not be null")),
        Some(v) => list(v, "scorers", |v, p| scorer_entry(&r, v, p))?,
    };
    // Read in .NET property order; the first error found is the one reported.
    let slicer = slicer(&r, obj, "", POLICY_PROPS)?;
    let placer = required_enum(obj, "", "placerType")?.unwrap_or_default();
    let deduplication = match obj.get("deduplicationEnabled") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| type_error(v, "deduplicationEnabled", "a boolean"))?,
    };
    let overflow_strategy = required_enum(obj, "", "overflowStrategy")?.unwrap_or_default();
    // Extensions of the group feature (docs/groups.md); `null` counts as absent.
    let group_value = match optional(obj, "groupValue") {
        None => GroupValue::Sum,
        Some(v) => GroupValue::from_name(&string(v, "groupValue")?).map_err(|_| {
            policy_error(
                "groupValue",
                format!("unknown group value {v}; known values: sum, max, mean"),
            )
        })?,
    };
    let pinned_first = match optional(obj, "pinnedFirst") {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| type_error(v, "pinnedFirst", "a boolean"))?,
    };
    // Extension of the variant feature (docs/variants.md); `null` counts as absent.
    let use_variants = match optional(obj, "useVariants") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| type_error(v, "useVariants", "a boolean"))?,
    };
    let text = |prop: &str| optional(obj, prop).map(|v| string(v, prop)).transpose();
    let policy = Policy {
        scorers,
        slicer,
        placer,
        deduplication,
        overflow_strategy,
        group_value,
        pinned_first,
        use_variants,
        name: text("name")?,
        description: text("description")?,
    };
    policy.validate()?;
    Ok(JsonRead {
        value: policy,
        warnings: r.into_warnings(),
    })
}

/// The `type` of a scorer entry: a built-in type or a registered name.
enum EntryType {
    BuiltIn(ScorerType),
    Registered(RegisteredScorer),
}

fn scorer_entry(r: &Reader, value: &Value, path: &str) -> Result<ScorerEntry> {
    let obj = r.object(value, path, ENTRY_PROPS)?;
    let ty = entry_type(r, obj, path)?;
    let weight_path = prop_path(path, "weight");
    let weight = match obj.get("weight") {
        None => return Err(policy_error(&weight_path, "is required")),
        Some(v) => number(v, &weight_path)?,
    };
    for owner in ScorerType::ALL {
        for &prop in owner.own_props() {
            let own = matches!(ty, EntryType::BuiltIn(t) if t == *owner);
            if !own && optional(obj, prop).is_some() {
                return Err(policy_error(
                    &prop_path(path, prop),
                    format!("is only valid when type is {}", owner.name()),
                ));
            }
        }
    }
    // Like .NET, kindWeights and tagWeights are read (and ignored) on other types too.
    let maps = WeightMaps {
        kinds: optional(obj, "kindWeights")
            .map(|v| r.kind_map(v, &prop_path(path, "kindWeights"), number))
            .transpose()?,
        tags: optional(obj, "tagWeights")
            .map(|v| weight_map(v, &prop_path(path, "tagWeights")))
            .transpose()?,
    };
    let scorer = match ty {
        EntryType::BuiltIn(ty) => scorer_spec(r, ty, obj, path, maps)?,
        EntryType::Registered(registered) => ScorerSpec::Registered(registered),
    };
    Ok(ScorerEntry { weight, scorer })
}

/// The entry's `type`. Absent, it is `recency` as in .NET (with a warning; an error when
/// strict); a name that is neither built-in nor registered is an error listing both.
fn entry_type(r: &Reader, obj: &Object, path: &str) -> Result<EntryType> {
    let type_path = prop_path(path, "type");
    let name = match obj.get("type") {
        None => {
            r.tolerate(
                JsonWarningKind::MissingScorerType,
                &type_path,
                "is required",
                "absent; read as recency, as .NET reads it",
            )?;
            return Ok(EntryType::BuiltIn(ScorerType::Recency));
        }
        Some(Value::String(name)) if ScorerType::from_name(name).is_none() => name,
        Some(value) => return Ok(EntryType::BuiltIn(enum_value(value, &type_path)?)),
    };
    let registry = r.options.registry;
    if let Some(found) = registry.and_then(|reg| reg.get(name)) {
        return Ok(EntryType::Registered(found.clone()));
    }
    let mut message = format!(
        "unknown {} \"{name}\"; known values: {}",
        ScorerType::WHAT,
        ScorerType::known_names()
    );
    if let Some(reg) = registry.filter(|reg| !reg.is_empty()) {
        message.push_str("; registered: ");
        message.push_str(&reg.names().collect::<Vec<_>>().join(", "));
    }
    Err(policy_error(&type_path, message))
}

/// The `kindWeights` and `tagWeights` of an entry, read whatever its type.
struct WeightMaps {
    kinds: Option<Vec<(ContextKind, f64)>>,
    tags: Option<Vec<(String, f64)>>,
}

/// The scorer of an entry of type `ty` whose properties are in `obj` (at `path`); the
/// properties of other types were rejected already.
fn scorer_spec(
    r: &Reader,
    ty: ScorerType,
    obj: &Object,
    path: &str,
    maps: WeightMaps,
) -> Result<ScorerSpec> {
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
            r,
            needs(prop)?,
            &prop_path(path, prop),
        )?))
    };
    Ok(match ty {
        ScorerType::Recency => ScorerSpec::Recency,
        ScorerType::Priority => ScorerSpec::Priority,
        ScorerType::Kind => ScorerSpec::Kind {
            weights: maps.kinds,
        },
        ScorerType::Tag => {
            needs("tagWeights")?;
            ScorerSpec::Tag {
                weights: maps.tags.unwrap_or_default(),
            }
        }
        ScorerType::Frequency => ScorerSpec::Frequency,
        ScorerType::Reflexive => ScorerSpec::Reflexive,
        ScorerType::Scaled => ScorerSpec::Scaled {
            inner: nested("innerScorer")?,
        },
        ScorerType::Composite => ScorerSpec::Composite {
            children: list(needs("children")?, &prop_path(path, "children"), |v, p| {
                scorer_entry(r, v, p)
            })?,
        },
        ScorerType::Decay => ScorerSpec::Decay {
            curve: curve(r, needs("curve")?, &prop_path(path, "curve"))?,
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

/// An object of numbers, in document order (TagScorer sums its total in this order).
fn weight_map(value: &Value, path: &str) -> Result<Vec<(String, f64)>> {
    let obj = value
        .as_object()
        .ok_or_else(|| type_error(value, path, "an object"))?;
    obj.iter()
        .map(|(k, v)| Ok((k.clone(), number(v, &key_path(path, k))?)))
        .collect()
}

fn curve(r: &Reader, value: &Value, path: &str) -> Result<DecayCurve> {
    let obj = r.object(value, path, CURVE_PROPS)?;
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
            windows: list(field, &field_path, |v, p| step_window(r, v, p))?,
        },
    })
}

/// One `{ "maxAgeNanos", "score" }` window of a step curve.
fn step_window(r: &Reader, value: &Value, path: &str) -> Result<(i64, f64)> {
    let obj = r.object(value, path, WINDOW_PROPS)?;
    let field = |prop: &str| {
        optional(obj, prop).ok_or_else(|| policy_error(&prop_path(path, prop), "is required"))
    };
    Ok((
        integer(field("maxAgeNanos")?, &prop_path(path, "maxAgeNanos"))?,
        number(field("score")?, &prop_path(path, "score"))?,
    ))
}

/// The slicer whose properties live in `obj` (at `path`): its type, sizes, count quotas
/// and inner slicer, wrapped in a percentage quota when `quotas` is non-empty (policy step M6
/// in docs/decisions.md). Where
/// `stream` may appear is a nesting rule checked by validation. `known` lists the
/// properties of this object (a nested one has no `streamBatchSize`); the others were
/// ignored or rejected already.
fn slicer(r: &Reader, obj: &Object, path: &str, known: &[&str]) -> Result<SlicerSpec> {
    let ty = required_enum::<SlicerType>(obj, path, "slicerType")?.unwrap_or(SlicerType::Greedy);
    for &prop in TYPED_SLICER_PROPS.iter().filter(|p| known.contains(p)) {
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
    let base = base_slicer(r, ty, obj, path, known)?;
    let quotas = match optional(obj, "quotas") {
        None => Vec::new(),
        Some(v) => list(v, &prop_path(path, "quotas"), |v, p| percent_quota(r, v, p))?,
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
fn base_slicer(
    r: &Reader,
    ty: SlicerType,
    obj: &Object,
    path: &str,
    known: &[&str],
) -> Result<SlicerSpec> {
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
            batch_size: if known.contains(&"streamBatchSize") {
                optional_integer(obj, path, "streamBatchSize")?
            } else {
                None
            },
        },
        SlicerType::CountQuota => {
            let inner = match optional(obj, "innerSlicer") {
                None => SlicerSpec::Greedy,
                Some(v) => {
                    let inner_path = prop_path(path, "innerSlicer");
                    slicer(
                        r,
                        r.object(v, &inner_path, SLICER_PROPS)?,
                        &inner_path,
                        SLICER_PROPS,
                    )?
                }
            };
            SlicerSpec::CountQuota {
                entries: count_quotas(r, obj, path, ty)?,
                inner: Box::new(inner),
                scarcity: scarcity()?,
            }
        }
        SlicerType::CountConstrainedKnapsack => SlicerSpec::CountConstrainedKnapsack {
            entries: count_quotas(r, obj, path, ty)?,
            knapsack: knapsack()?,
            scarcity: scarcity()?,
        },
    })
}

fn percent_quota(r: &Reader, value: &Value, path: &str) -> Result<PercentQuota> {
    let obj = r.object(value, path, QUOTA_PROPS)?;
    Ok(PercentQuota {
        kind: kind(obj, path)?,
        min_percent: optional_number(obj, path, "minPercent")?,
        max_percent: optional_number(obj, path, "maxPercent")?,
    })
}

fn count_quotas(r: &Reader, obj: &Object, path: &str, ty: SlicerType) -> Result<Vec<CountQuota>> {
    let list_path = prop_path(path, "countQuotas");
    let value = optional(obj, "countQuotas").ok_or_else(|| {
        policy_error(
            &list_path,
            format!("must be specified when slicerType is {}", ty.name()),
        )
    })?;
    list(value, &list_path, |v, p| count_quota(r, v, p))
}

fn count_quota(r: &Reader, value: &Value, path: &str) -> Result<CountQuota> {
    let obj = r.object(value, path, COUNT_QUOTA_PROPS)?;
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
