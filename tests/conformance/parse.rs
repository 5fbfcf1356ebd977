//! Turns a vector file (08-conformance-format) into a [`Vector`] description.
//!
//! Component builders follow 08 §6; unknown keys are ignored everywhere; integers are
//! accepted wherever a float is expected.

use toml::{Table, Value};

use crate::spec::{
    BudgetSpec, Case, Component, CountEntrySpec, CurveSpec, DiagnosticsExpectation,
    ExcludedExpectation, FieldValue, GroupExpectation, GroupValueSpec, IncludedExpectation,
    ItemSpec, OverflowExpectation, OverflowSpec, PipelineCase, PipelineExpectation, PipelineSpec,
    PlacerSpec, PlacingCase, QuotaSpec, Scarcity, ScoredItemSpec, ScorerSpec, ScoringCase,
    ShortfallSpec, SliceExpectation, SlicerSpec, SlicingCase, VariantSpec, Vector,
};
use crate::toml_read::{empty_table, seconds_to_nanos, SpecError, SpecResult, Tbl};

/// Default score tolerance (08 §8).
pub const DEFAULT_EPSILON: f64 = 1e-9;
/// Default knapsack bucket size (08 §6.2).
const DEFAULT_BUCKET_SIZE: i64 = 100;
/// Default DecayScorer null-timestamp score and MetadataTrustScorer default score (decision D16 in
/// docs/decisions.md).
const DEFAULT_NEUTRAL_SCORE: f64 = 0.5;

/// A vector file that could not be described: its name when known, and why.
#[derive(Debug, Clone)]
pub struct ParseFailure {
    /// `[test].name`, when it could be read.
    pub name: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Parses the text of one vector file.
pub fn parse_vector(text: &str) -> Result<Vector, ParseFailure> {
    let doc: Table = text.parse().map_err(|e: toml::de::Error| ParseFailure {
        name: None,
        message: format!("TOML: {e}"),
    })?;
    let root = Tbl::root(&doc);
    let name = root
        .table("test")
        .ok()
        .flatten()
        .and_then(|t| t.str("name").ok().flatten().map(str::to_string));
    let fail = |e: SpecError| ParseFailure {
        name: name.clone(),
        message: e.message().to_string(),
    };
    let test = root
        .table("test")
        .and_then(|t| root.require("test", t))
        .map_err(fail)?;
    let vector_name = test.req_str("name").map_err(fail)?.to_string();
    let case = parse_case(&root, &test).map_err(fail)?;
    Ok(Vector {
        name: vector_name,
        case,
    })
}

/// Reads the stage and builds the matching case.
fn parse_case(root: &Tbl, test: &Tbl) -> SpecResult<Case> {
    let stage = test.req_str("stage")?;
    let config = root
        .table("config")?
        .unwrap_or_else(|| Tbl::at(empty_table(), "config"));
    let component = component_under_test(stage, test, &config)?;
    if test.bool("expect_construction_error")?.unwrap_or(false) {
        return Ok(Case::ConstructionError(construction(component)?));
    }
    let component = component.map_err(|e| match e {
        SpecError::Invalid(m) => SpecError::Malformed(format!("invalid configuration: {m}")),
        other => other,
    })?;
    let expect_error = test.bool("expect_run_error")?.unwrap_or(false);
    let epsilon = root
        .table("tolerance")?
        .map(|t| t.f64("score_epsilon"))
        .transpose()?
        .flatten();
    let epsilon = epsilon.unwrap_or(DEFAULT_EPSILON);
    Ok(match component {
        Component::Scorer(scorer) => Case::Scoring(ScoringCase {
            scorer,
            items: items(root, "items")?,
            expected: scoring_expectations(root)?,
            epsilon,
        }),
        Component::Slicer(slicer) => Case::Slicing(SlicingCase {
            slicer,
            group_value: group_value(&config)?,
            items: scored_items(root, "scored_items")?,
            budget: slicing_budget(root)?,
            expected: slicing_expectation(root, expect_error)?,
        }),
        Component::Placer(placer) => Case::Placing(PlacingCase {
            placer,
            group_value: group_value(&config)?,
            items: scored_items(root, "items")?,
            expected: expected_table(root)?.req_strings("ordered_contents")?,
        }),
        Component::Pipeline(pipeline) => Case::Pipeline(PipelineCase {
            pipeline,
            items: items(root, "items")?,
            budget: pipeline_budget(root)?,
            expected: pipeline_expectation(root, expect_error)?,
            epsilon,
        }),
    })
}

/// Splits a component result into "described" / "invalid value" / malformed file.
fn construction(component: SpecResult<Component>) -> SpecResult<Result<Component, String>> {
    match component {
        Ok(c) => Ok(Ok(c)),
        Err(SpecError::Invalid(m)) => Ok(Err(m)),
        Err(malformed) => Err(malformed),
    }
}

/// Describes the component a stage tests. The outer error is a malformed `[test]` table;
/// the inner one concerns the component's own configuration.
fn component_under_test(
    stage: &str,
    test: &Tbl,
    config: &Tbl,
) -> SpecResult<SpecResult<Component>> {
    Ok(match stage {
        "scoring" => {
            let name = test.req_str("scorer")?;
            scorer_spec(name, config, Nesting::Top).map(Component::Scorer)
        }
        "slicing" => {
            let name = test.req_str("slicer")?;
            slicer_spec(name, config).map(Component::Slicer)
        }
        "placing" => {
            let name = match test.str("placer")? {
                Some(name) => name,
                None => config
                    .str("placer")?
                    .ok_or_else(|| test.missing("placer"))?,
            };
            placer_spec(name).map(Component::Placer)
        }
        "pipeline" => pipeline_spec(config).map(Component::Pipeline),
        other => return Err(SpecError::Malformed(format!("unknown stage `{other}`"))),
    })
}

// ---------------------------------------------------------------------------------------
// Items and budgets
// ---------------------------------------------------------------------------------------

/// An array of `[[items]]`-shaped tables; absent means empty (08 §4.3).
fn items(root: &Tbl, key: &str) -> SpecResult<Vec<ItemSpec>> {
    root.tables(key)?
        .unwrap_or_default()
        .iter()
        .map(item)
        .collect()
}

/// An array of items that each carry a required `score`.
fn scored_items(root: &Tbl, key: &str) -> SpecResult<Vec<ScoredItemSpec>> {
    let tables = root.tables(key)?.unwrap_or_default();
    tables
        .iter()
        .map(|t| {
            Ok(ScoredItemSpec {
                item: item(t)?,
                score: t.req_f64("score")?,
            })
        })
        .collect()
}

/// One item (08 §4.1), plus the extension fields `source` and `original_tokens`.
fn item(t: &Tbl) -> SpecResult<ItemSpec> {
    Ok(ItemSpec {
        content: t.req_str("content")?.to_string(),
        tokens: t.req_i64("tokens")?,
        kind: t.str("kind")?.map(str::to_string),
        source: t.str("source")?.map(str::to_string),
        timestamp: t.datetime("timestamp")?,
        priority: t.i64("priority")?,
        tags: t.strings("tags")?.unwrap_or_default(),
        future_relevance_hint: t.f64("futureRelevanceHint")?,
        pinned: t.bool("pinned")?.unwrap_or(false),
        metadata: metadata(t)?,
        original_tokens: t.i64("original_tokens")?,
        group: t.str("group")?.map(str::to_string),
        variants: t
            .tables("variants")?
            .unwrap_or_default()
            .iter()
            .map(|v| {
                Ok(VariantSpec {
                    content: v.req_str("content")?.to_string(),
                    tokens: v.req_i64("tokens")?,
                    quality: v.req_f64("quality")?,
                })
            })
            .collect::<SpecResult<_>>()?,
    })
}

/// The `metadata` inline table; non-string values are dropped (as the crate harness does).
fn metadata(t: &Tbl) -> SpecResult<Vec<(String, String)>> {
    let Some(table) = t.table("metadata")? else {
        return Ok(Vec::new());
    };
    Ok(table
        .entries()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect())
}

/// The slicing budget: `target_tokens`, and `max_tokens` defaulting to the target.
fn slicing_budget(root: &Tbl) -> SpecResult<BudgetSpec> {
    let b = root
        .table("budget")
        .and_then(|t| root.require("budget", t))?;
    let target = b.req_i64("target_tokens")?;
    let max = b.i64("max_tokens")?.unwrap_or(target);
    Ok(BudgetSpec::plain(max, target))
}

/// The pipeline budget, with the extension keys `reserved_slots` and
/// `estimation_safety_margin_percent`.
fn pipeline_budget(root: &Tbl) -> SpecResult<BudgetSpec> {
    let b = root
        .table("budget")
        .and_then(|t| root.require("budget", t))?;
    let reserved_slots = match b.table("reserved_slots")? {
        None => Vec::new(),
        Some(slots) => slots
            .entries()
            .map(|(kind, _)| Ok((kind.clone(), slots.req_i64(kind)?)))
            .collect::<SpecResult<_>>()?,
    };
    Ok(BudgetSpec {
        max_tokens: b.req_i64("max_tokens")?,
        target_tokens: b.req_i64("target_tokens")?,
        output_reserve: b.i64("output_reserve")?.unwrap_or(0),
        reserved_slots,
        estimation_safety_margin_percent: b.f64("estimation_safety_margin_percent")?.unwrap_or(0.0),
    })
}

// ---------------------------------------------------------------------------------------
// Scorers
// ---------------------------------------------------------------------------------------

/// Where a scorer configuration sits: a composite at the top of `[config]` lists its
/// children under `scorers`; a composite entry lists them under `children`.
#[derive(Debug, Clone, Copy)]
enum Nesting {
    Top,
    Entry,
}

/// Describes scorer `name` configured by table `cfg` (08 §6.1).
fn scorer_spec(name: &str, cfg: &Tbl, nesting: Nesting) -> SpecResult<ScorerSpec> {
    Ok(match name {
        "recency" => ScorerSpec::Recency,
        "priority" => ScorerSpec::Priority,
        "frequency" => ScorerSpec::Frequency,
        "reflexive" => ScorerSpec::Reflexive,
        "kind" => ScorerSpec::Kind(kind_weights(cfg)?),
        "tag" => ScorerSpec::Tag(weight_list(cfg, "tag_weights", "tag")?),
        "composite" => {
            let key = match nesting {
                Nesting::Top => "scorers",
                Nesting::Entry => "children",
            };
            let entries = cfg.tables(key)?;
            ScorerSpec::Composite(weighted_scorers(&cfg.require(key, entries)?)?)
        }
        "scaled" => ScorerSpec::Scaled(Box::new(named_component(
            cfg,
            "inner_scorer",
            None,
            |n, t| scorer_spec(n, t, Nesting::Entry),
        )?)),
        "decay" => decay_spec(cfg)?,
        "metadata_trust" => ScorerSpec::MetadataTrust {
            default_score: cfg.f64("default_score")?.unwrap_or(DEFAULT_NEUTRAL_SCORE),
        },
        "metadata_key" => ScorerSpec::MetadataKey {
            key: cfg.req_str("key")?.to_string(),
            value: cfg.req_str("value")?.to_string(),
            boost: cfg.req_f64("boost")?,
        },
        other => return Err(SpecError::Malformed(format!("unknown scorer `{other}`"))),
    })
}

/// KindScorer weights: `None` (defaults) when `use_default_weights = true` or there is no
/// `weights` key; otherwise the `[[weights]]` list.
fn kind_weights(cfg: &Tbl) -> SpecResult<Option<Vec<(String, f64)>>> {
    if cfg.bool("use_default_weights")? == Some(true) || !cfg.has("weights") {
        return Ok(None);
    }
    weight_list(cfg, "weights", "kind").map(Some)
}

/// A required array of `{ <name_key> = string, weight = float }` tables.
fn weight_list(cfg: &Tbl, key: &str, name_key: &str) -> SpecResult<Vec<(String, f64)>> {
    let entries = cfg.tables(key)?;
    cfg.require(key, entries)?
        .iter()
        .map(|t| Ok((t.req_str(name_key)?.to_string(), t.req_f64("weight")?)))
        .collect()
}

/// Composite entries: each `{ type, weight }` table is also the child's own configuration.
fn weighted_scorers(entries: &[Tbl]) -> SpecResult<Vec<(ScorerSpec, f64)>> {
    entries
        .iter()
        .map(|e| {
            Ok((
                scorer_spec(e.req_str("type")?, e, Nesting::Entry)?,
                e.req_f64("weight")?,
            ))
        })
        .collect()
}

/// An inner component named by `key`: a string (built without configuration) or, as an
/// extension, a table with `type` that is also the inner component's configuration.
fn named_component<T>(
    cfg: &Tbl,
    key: &str,
    default: Option<&str>,
    build: impl Fn(&str, &Tbl) -> SpecResult<T>,
) -> SpecResult<T> {
    match cfg.value(key) {
        None => {
            let name = cfg.require(key, default)?;
            build(name, &Tbl::at(empty_table(), cfg.key_path(key)))
        }
        Some(Value::String(name)) => build(name, &Tbl::at(empty_table(), cfg.key_path(key))),
        Some(Value::Table(_)) => {
            let inner = cfg.table(key)?.expect("checked to be a table");
            build(inner.req_str("type")?, &inner)
        }
        Some(_) => Err(SpecError::Malformed(format!(
            "`{}` must be a name or a table",
            cfg.key_path(key)
        ))),
    }
}

/// DecayScorer: fixed clock at `reference_time`, curve, `null_timestamp_score`.
fn decay_spec(cfg: &Tbl) -> SpecResult<ScorerSpec> {
    let reference_time = cfg.datetime("reference_time")?;
    let curve = cfg.table("curve")?;
    let curve = cfg.require("curve", curve)?;
    Ok(ScorerSpec::Decay {
        reference_time: cfg.require("reference_time", reference_time)?,
        curve: curve_spec(&curve)?,
        null_timestamp_score: cfg
            .f64("null_timestamp_score")?
            .unwrap_or(DEFAULT_NEUTRAL_SCORE),
    })
}

/// A decay curve; durations in seconds become nanoseconds.
fn curve_spec(curve: &Tbl) -> SpecResult<CurveSpec> {
    let secs = |t: &Tbl, key: &str| seconds_to_nanos(t.req_f64(key)?, &t.key_path(key));
    Ok(match curve.req_str("type")? {
        "exponential" => CurveSpec::Exponential {
            half_life_ns: secs(curve, "half_life_secs")?,
        },
        "window" => CurveSpec::Window {
            max_age_ns: secs(curve, "max_age_secs")?,
        },
        "step" => {
            let windows = curve.tables("windows")?;
            let windows = curve
                .require("windows", windows)?
                .iter()
                .map(|w| Ok((secs(w, "max_age_secs")?, w.req_f64("score")?)))
                .collect::<SpecResult<_>>()?;
            CurveSpec::Step { windows }
        }
        other => {
            return Err(SpecError::Malformed(format!(
                "unknown decay curve `{other}`"
            )))
        }
    })
}

// ---------------------------------------------------------------------------------------
// Slicers, placers, pipelines
// ---------------------------------------------------------------------------------------

/// Describes slicer `name` configured by table `cfg` (08 §6.2).
fn slicer_spec(name: &str, cfg: &Tbl) -> SpecResult<SlicerSpec> {
    let inner = |default: Option<&str>| {
        named_component(cfg, "inner_slicer", default, slicer_spec).map(Box::new)
    };
    let bucket_size = || Ok::<_, SpecError>(cfg.i64("bucket_size")?.unwrap_or(DEFAULT_BUCKET_SIZE));
    Ok(match name {
        "greedy" => SlicerSpec::Greedy,
        "knapsack" => SlicerSpec::Knapsack {
            bucket_size: bucket_size()?,
        },
        "quota" => SlicerSpec::Quota {
            quotas: quotas(cfg)?,
            inner: inner(None)?,
        },
        "count_quota" => SlicerSpec::CountQuota {
            entries: count_entries(cfg)?,
            inner: inner(Some("greedy"))?,
            scarcity: scarcity(cfg)?,
        },
        "count_constrained_knapsack" => SlicerSpec::CountConstrainedKnapsack {
            entries: count_entries(cfg)?,
            bucket_size: bucket_size()?,
            scarcity: scarcity(cfg)?,
        },
        other => return Err(SpecError::Malformed(format!("unknown slicer `{other}`"))),
    })
}

/// `[[quotas]]` with `kind`, `require` and `cap` (percent).
fn quotas(cfg: &Tbl) -> SpecResult<Vec<QuotaSpec>> {
    let entries = cfg.tables("quotas")?;
    cfg.require("quotas", entries)?
        .iter()
        .map(|q| {
            Ok(QuotaSpec {
                kind: q.req_str("kind")?.to_string(),
                require: q.req_f64("require")?,
                cap: q.req_f64("cap")?,
            })
        })
        .collect()
}

/// `[[entries]]` with `kind`, `require_count` and `cap_count` (non-negative integers).
fn count_entries(cfg: &Tbl) -> SpecResult<Vec<CountEntrySpec>> {
    let count = |t: &Tbl, key: &str| {
        let v = t.req_i64(key)?;
        u64::try_from(v)
            .map_err(|_| SpecError::Invalid(format!("`{}` = {v} must be >= 0", t.key_path(key))))
    };
    let entries = cfg.tables("entries")?;
    cfg.require("entries", entries)?
        .iter()
        .map(|e| {
            Ok(CountEntrySpec {
                kind: e.req_str("kind")?.to_string(),
                require_count: count(e, "require_count")?,
                cap_count: count(e, "cap_count")?,
            })
        })
        .collect()
}

/// `scarcity_behavior`: `degrade` (default) or `throw`.
fn scarcity(cfg: &Tbl) -> SpecResult<Scarcity> {
    match cfg.str("scarcity_behavior")? {
        None | Some("degrade") => Ok(Scarcity::Degrade),
        Some("throw") => Ok(Scarcity::Throw),
        Some(other) => Err(SpecError::Malformed(format!(
            "unknown scarcity_behavior `{other}`"
        ))),
    }
}

/// `chronological` or `u-shaped` (08 §6.3).
fn placer_spec(name: &str) -> SpecResult<PlacerSpec> {
    match name {
        "chronological" => Ok(PlacerSpec::Chronological),
        "u-shaped" => Ok(PlacerSpec::UShaped),
        other => Err(SpecError::Malformed(format!("unknown placer `{other}`"))),
    }
}

/// The pipeline `[config]` (08 §6.4): one scorer entry is used alone, two or more form a
/// composite; each entry's own table is its configuration (extension rule).
fn pipeline_spec(cfg: &Tbl) -> SpecResult<PipelineSpec> {
    let entries = cfg.tables("scorers")?;
    let entries = cfg.require("scorers", entries)?;
    let scorer = match entries.as_slice() {
        [] => return Err(SpecError::Malformed("`config.scorers` is empty".into())),
        [only] => scorer_spec(only.req_str("type")?, only, Nesting::Entry)?,
        several => ScorerSpec::Composite(weighted_scorers(several)?),
    };
    let overflow = match cfg.str("overflow_strategy")? {
        None | Some("throw") => OverflowSpec::Throw,
        Some("truncate") => OverflowSpec::Truncate,
        Some("proceed") => OverflowSpec::Proceed,
        Some(other) => {
            return Err(SpecError::Malformed(format!(
                "unknown overflow_strategy `{other}`"
            )))
        }
    };
    Ok(PipelineSpec {
        scorer,
        slicer: slicer_spec(cfg.req_str("slicer")?, cfg)?,
        placer: placer_spec(cfg.req_str("placer")?)?,
        deduplication: cfg.bool("deduplication")?.unwrap_or(true),
        overflow,
        group_value: group_value(cfg)?,
        pinned_first: cfg.bool("pinned_first")?.unwrap_or(false),
        use_variants: cfg.bool("use_variants")?.unwrap_or(true),
    })
}

/// `group_value` (extension): `sum` (default), `max` or `mean`.
fn group_value(cfg: &Tbl) -> SpecResult<GroupValueSpec> {
    match cfg.str("group_value")? {
        None | Some("sum") => Ok(GroupValueSpec::Sum),
        Some("max") => Ok(GroupValueSpec::Max),
        Some("mean") => Ok(GroupValueSpec::Mean),
        Some(other) => Err(SpecError::Malformed(format!(
            "unknown group_value `{other}`"
        ))),
    }
}

// ---------------------------------------------------------------------------------------
// Expectations
// ---------------------------------------------------------------------------------------

/// The required `[expected]` table (slicing, placing).
fn expected_table<'a>(root: &Tbl<'a>) -> SpecResult<Tbl<'a>> {
    root.table("expected")
        .and_then(|t| root.require("expected", t))
}

/// `[[expected]]` of a scoring vector: (content, score_approx) pairs.
fn scoring_expectations(root: &Tbl) -> SpecResult<Vec<(String, f64)>> {
    let entries = root.tables("expected")?.unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            Ok((
                e.req_str("content")?.to_string(),
                e.req_f64("score_approx")?,
            ))
        })
        .collect()
}

/// `[expected]` of a slicing vector.
fn slicing_expectation(root: &Tbl, expect_error: bool) -> SpecResult<SliceExpectation> {
    if expect_error {
        return Ok(SliceExpectation::Error);
    }
    let e = expected_table(root)?;
    let forms = match e.table("selected_forms")? {
        None => Vec::new(),
        Some(t) => t
            .entries()
            .map(|(k, _)| Ok((k.clone(), form_number(&t, k)?)))
            .collect::<SpecResult<_>>()?,
    };
    Ok(SliceExpectation::Selected {
        contents: e.req_strings("selected_contents")?,
        shortfall_count: e.i64("shortfall_count")?,
        cap_excluded_count: e.i64("cap_excluded_count")?,
        forms,
    })
}

/// `[[expected_output]]`, `[expected.diagnostics]` and `[expected.overflow]`.
fn pipeline_expectation(root: &Tbl, expect_error: bool) -> SpecResult<PipelineExpectation> {
    if expect_error {
        return Ok(PipelineExpectation::Error);
    }
    let outputs = root.tables("expected_output")?.unwrap_or_default();
    let contents = outputs
        .iter()
        .map(|e| Ok(e.req_str("content")?.to_string()))
        .collect::<SpecResult<_>>()?;
    let forms = outputs
        .iter()
        .map(|e| match e.has("form") {
            true => form_number(e, "form"),
            false => Ok(0),
        })
        .collect::<SpecResult<_>>()?;
    let expected = root.table("expected")?;
    let sub = |key: &str| {
        expected
            .as_ref()
            .map(|e| e.table(key))
            .transpose()
            .map(Option::flatten)
    };
    Ok(PipelineExpectation::Output {
        contents,
        forms,
        diagnostics: sub("diagnostics")?
            .map(|d| diagnostics(&d).map(Box::new))
            .transpose()?,
        overflow: sub("overflow")?.map(|o| overflow(&o)).transpose()?,
    })
}

/// `[expected.diagnostics]`: summary, included, excluded, and the extension `shortfalls`.
fn diagnostics(d: &Tbl) -> SpecResult<DiagnosticsExpectation> {
    let summary = d.table("summary")?;
    let summary_int = |key: &str| {
        summary
            .as_ref()
            .map(|s| s.i64(key))
            .transpose()
            .map(Option::flatten)
    };
    Ok(DiagnosticsExpectation {
        total_candidates: summary_int("total_candidates")?,
        total_tokens_considered: summary_int("total_tokens_considered")?,
        included: list(d, "included", included)?,
        excluded: list(d, "excluded", excluded)?,
        shortfalls: list(d, "shortfalls", shortfall)?,
        groups: list(d, "groups", group_expectation)?,
        pruned_forms: list(d, "pruned_forms", |e| {
            Ok((
                e.req_str("content")?.to_string(),
                form_number(e, "form")?,
                form_number(e, "dominated_by")?,
            ))
        })?,
    })
}

/// A form number (an integer >= 0) under `key`.
fn form_number(t: &Tbl, key: &str) -> SpecResult<usize> {
    let v = t.req_i64(key)?;
    usize::try_from(v)
        .map_err(|_| SpecError::Malformed(format!("`{}` must be >= 0", t.key_path(key))))
}

/// One `[[expected.diagnostics.groups]]` entry (extension).
fn group_expectation(e: &Tbl) -> SpecResult<GroupExpectation> {
    let decision = e.req_str("decision")?;
    if !matches!(decision, "Included" | "Excluded") {
        return Err(SpecError::Malformed(format!(
            "`{}` must be Included or Excluded",
            e.key_path("decision")
        )));
    }
    Ok(GroupExpectation {
        key: e.req_str("key")?.to_string(),
        members: e.req_strings("members")?,
        tokens: e.i64("tokens")?,
        decision: decision.to_string(),
        stage: e.str("stage")?.map(str::to_string),
        member: e.str("member")?.map(str::to_string),
        pinned_by: e.str("pinned_by")?.map(str::to_string),
        partial_selection: e.bool("partial_selection")?,
    })
}

/// An optional array of tables mapped entry by entry; an empty inline array counts.
fn list<T>(t: &Tbl, key: &str, each: fn(&Tbl) -> SpecResult<T>) -> SpecResult<Option<Vec<T>>> {
    t.tables(key)?
        .map(|entries| entries.iter().map(each).collect())
        .transpose()
}

fn included(e: &Tbl) -> SpecResult<IncludedExpectation> {
    Ok(IncludedExpectation {
        content: e.req_str("content")?.to_string(),
        score: e.f64("score_approx")?,
        reason: e.str("inclusion_reason")?.map(str::to_string),
        fields: reason_fields(e, &INCLUDED_FIXED_KEYS),
    })
}

/// Keys of an included entry that are not reason fields.
const INCLUDED_FIXED_KEYS: [&str; 3] = ["content", "score_approx", "inclusion_reason"];

/// Keys of an excluded entry that are not variant fields.
const EXCLUDED_FIXED_KEYS: [&str; 3] = ["content", "score_approx", "exclusion_reason"];

/// The keys of `e` other than `fixed`, as reason fields (integers, floats, strings).
fn reason_fields(e: &Tbl, fixed: &[&str]) -> Vec<(String, FieldValue)> {
    e.entries()
        .filter(|(k, _)| !fixed.contains(&k.as_str()))
        .filter_map(|(k, v)| {
            let value = match v {
                Value::Integer(i) => FieldValue::Int(*i),
                Value::Float(f) => FieldValue::Float(*f),
                Value::String(s) => FieldValue::Str(s.clone()),
                _ => return None,
            };
            Some((k.clone(), value))
        })
        .collect()
}

fn excluded(e: &Tbl) -> SpecResult<ExcludedExpectation> {
    let fields = reason_fields(e, &EXCLUDED_FIXED_KEYS);
    Ok(ExcludedExpectation {
        content: e.req_str("content")?.to_string(),
        score: e.req_f64("score_approx")?,
        reason: e.req_str("exclusion_reason")?.to_string(),
        fields,
    })
}

fn shortfall(e: &Tbl) -> SpecResult<ShortfallSpec> {
    let count = |key: &str| {
        let v = e.req_i64(key)?;
        u64::try_from(v)
            .map_err(|_| SpecError::Malformed(format!("`{}` must be >= 0", e.key_path(key))))
    };
    Ok(ShortfallSpec {
        kind: e.req_str("kind")?.to_string(),
        required_count: count("required_count")?,
        satisfied_count: count("satisfied_count")?,
    })
}

/// `[expected.overflow]` (extension).
fn overflow(o: &Tbl) -> SpecResult<OverflowExpectation> {
    Ok(OverflowExpectation {
        tokens_over_budget: o.req_i64("tokens_over_budget")?,
        contents: o.strings("overflowing_contents")?,
    })
}
