//! Compares what an [`Engine`] returns with what a vector expects (08 §7–§9).
//!
//! Every function returns `Err(reason)` on the first kind of mismatch it finds; reasons
//! carry expected and actual values, the first differing position of ordered comparisons
//! and the ε of score comparisons.

use std::collections::HashSet;

use crate::engine::{
    Engine, EngineError, EngineResult, ExcludedRecord, GroupRecord, IncludedRecord, ReportRecord,
};
use crate::spec::{
    Case, Component, DiagnosticsExpectation, ExcludedExpectation, FieldValue, GroupExpectation,
    IncludedExpectation, ItemSpec, OverflowExpectation, PipelineCase, PipelineExpectation,
    PlacingCase, ScoringCase, ShortfallSpec, SliceExpectation, SlicingCase,
};

/// Outcome of one check.
pub type Check = Result<(), String>;

/// Runs the vector's case on `engine` and compares.
pub fn check(case: &Case, engine: &dyn Engine) -> Check {
    match case {
        Case::ConstructionError(component) => check_construction_error(component, engine),
        Case::Scoring(c) => check_scoring(c, engine),
        Case::Slicing(c) => check_slicing(c, engine),
        Case::Placing(c) => check_placing(c, engine),
        Case::Pipeline(c) => check_pipeline(c, engine),
    }
}

/// 08 §7.1: construction must fail. A configuration that could not even be described
/// (an unrepresentable value) already counts as a failed construction.
fn check_construction_error(component: &Result<Component, String>, engine: &dyn Engine) -> Check {
    let Ok(component) = component else {
        return Ok(());
    };
    match engine.construct(component) {
        Err(EngineError::Construction(_)) => Ok(()),
        Err(other) => Err(format!("expected a construction error, got {other}")),
        Ok(()) => Err("construction succeeded but the vector expects a construction error".into()),
    }
}

/// True when `actual` matches `expected` under the strict ε rule (08 §8).
fn score_matches(actual: f64, expected: f64, epsilon: f64) -> bool {
    (actual - expected).abs() < epsilon
}

fn score_mismatch(what: &str, expected: f64, actual: f64, epsilon: f64) -> String {
    format!(
        "{what}: expected score {expected:?}, got {actual:?} (|diff| = {:e}, ε = {epsilon:e})",
        (actual - expected).abs()
    )
}

/// 08 §7.1: every item scored against the whole list; every item covered exactly once.
fn check_scoring(c: &ScoringCase, engine: &dyn Engine) -> Check {
    if c.expected.len() != c.items.len() {
        return Err(format!(
            "strict coverage: {} [[expected]] entries for {} items",
            c.expected.len(),
            c.items.len()
        ));
    }
    let scores = engine
        .score(&c.scorer, &c.items)
        .map_err(|e| e.to_string())?;
    if scores.len() != c.items.len() {
        return Err(format!(
            "engine returned {} scores for {} items",
            scores.len(),
            c.items.len()
        ));
    }
    let mut covered = HashSet::new();
    let mut mismatches = Vec::new();
    for (content, expected) in &c.expected {
        let index = c
            .items
            .iter()
            .position(|i| &i.content == content)
            .ok_or_else(|| format!("[[expected]] names unknown content {content:?}"))?;
        if !covered.insert(index) {
            return Err(format!(
                "item {content:?} has more than one [[expected]] entry"
            ));
        }
        if !score_matches(scores[index], *expected, c.epsilon) {
            mismatches.push(score_mismatch(
                &format!("{content:?}"),
                *expected,
                scores[index],
                c.epsilon,
            ));
        }
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(mismatches.join("; "))
    }
}

/// Contents of `positions` in `items`, checking that each position is valid and unique.
fn contents_at<'a>(
    what: &str,
    positions: &[usize],
    contents: &'a [&'a str],
) -> Result<Vec<&'a str>, String> {
    let mut seen = HashSet::new();
    positions
        .iter()
        .map(|&p| {
            if !seen.insert(p) {
                return Err(format!("{what}: position {p} returned twice"));
            }
            contents.get(p).copied().ok_or_else(|| {
                format!(
                    "{what}: position {p} is out of range ({} items)",
                    contents.len()
                )
            })
        })
        .collect()
}

/// Exact sequence comparison with the first differing position.
fn compare_sequence<S: AsRef<str>>(what: &str, expected: &[String], actual: &[S]) -> Check {
    let actual: Vec<&str> = actual.iter().map(AsRef::as_ref).collect();
    if expected
        .iter()
        .map(String::as_str)
        .eq(actual.iter().copied())
    {
        return Ok(());
    }
    let first = expected
        .iter()
        .zip(&actual)
        .take_while(|(e, a)| e == *a)
        .count();
    let at = |list: Vec<&str>| {
        list.get(first)
            .map_or("<end>".to_string(), |s| format!("{s:?}"))
    };
    Err(format!(
        "{what}: expected {expected:?}, got {actual:?}; first difference at position {first} \
         (expected {}, got {})",
        at(expected.iter().map(String::as_str).collect()),
        at(actual.clone())
    ))
}

/// Expects a failed run: only a run error counts.
fn expect_run_error<T>(result: EngineResult<T>) -> Check {
    match result {
        Err(EngineError::Run(_)) => Ok(()),
        Err(other) => Err(format!("expected the run to fail, but: {other}")),
        Ok(_) => Err("expected the run to fail, but it succeeded".into()),
    }
}

fn compare_count(what: &str, expected: Option<i64>, actual: usize) -> Check {
    match expected {
        Some(e) if e != actual as i64 => Err(format!("{what}: expected {e}, got {actual}")),
        _ => Ok(()),
    }
}

/// 08 §7.2: multiset of selected contents, plus the two count-quota counts.
fn check_slicing(c: &SlicingCase, engine: &dyn Engine) -> Check {
    let result = engine.slice(&c.slicer, &c.items, &c.budget, c.group_value);
    let SliceExpectation::Selected {
        contents,
        shortfall_count,
        cap_excluded_count,
        forms,
    } = &c.expected
    else {
        return expect_run_error(result);
    };
    let result = result.map_err(|e| e.to_string())?;
    let names: Vec<&str> = c.items.iter().map(|s| s.item.content.as_str()).collect();
    let mut actual = contents_at("selected", &result.selected, &names)?;
    let mut expected: Vec<&str> = contents.iter().map(String::as_str).collect();
    actual.sort_unstable();
    expected.sort_unstable();
    if actual != expected {
        return Err(format!(
            "selected (as multisets): expected {expected:?}, got {actual:?}"
        ));
    }
    check_selected_forms(forms, &result.selected, &result.forms, &names)?;
    contents_at("cap_excluded", &result.cap_excluded, &names)?;
    compare_count("shortfall_count", *shortfall_count, result.shortfalls.len())?;
    compare_count(
        "cap_excluded_count",
        *cap_excluded_count,
        result.cap_excluded.len(),
    )
}

/// The variant extension: each selected item's form is the one `expected` names for its
/// content, or 0; `forms` is empty (all full) or parallel to `selected`.
fn check_selected_forms(
    expected: &[(String, usize)],
    selected: &[usize],
    forms: &[usize],
    names: &[&str],
) -> Check {
    if !forms.is_empty() && forms.len() != selected.len() {
        return Err(format!(
            "slicer returned {} forms for {} positions",
            forms.len(),
            selected.len()
        ));
    }
    for (i, &p) in selected.iter().enumerate() {
        let name = names[p];
        let got = forms.get(i).copied().unwrap_or(0);
        let want = expected
            .iter()
            .find(|(c, _)| c == name)
            .map_or(0, |&(_, f)| f);
        if got != want {
            return Err(format!(
                "selected_forms: {name:?} expected form {want}, got form {got}"
            ));
        }
    }
    Ok(())
}

/// 08 §7.3: exact placed order; the result must be a permutation of the input.
fn check_placing(c: &PlacingCase, engine: &dyn Engine) -> Check {
    let placed = engine
        .place(&c.placer, &c.items, c.group_value)
        .map_err(|e| e.to_string())?;
    let names: Vec<&str> = c.items.iter().map(|s| s.item.content.as_str()).collect();
    let actual = contents_at("placed", &placed, &names)?;
    if actual.len() != names.len() {
        return Err(format!(
            "placer returned {} of {} items",
            actual.len(),
            names.len()
        ));
    }
    compare_sequence("ordered_contents", &c.expected, &actual)
}

/// 08 §7.4–§7.5: exact output order; diagnostics and the overflow extension when present.
/// The output is taken from an untraced run; a traced run must place the same items.
fn check_pipeline(c: &PipelineCase, engine: &dyn Engine) -> Check {
    let untraced = engine.pipeline(&c.pipeline, &c.items, &c.budget, false);
    let PipelineExpectation::Output {
        contents,
        forms,
        diagnostics,
        overflow,
    } = &c.expected
    else {
        return expect_run_error(untraced);
    };
    let untraced = untraced.map_err(|e| e.to_string())?;
    let names: Vec<&str> = c.items.iter().map(|i| i.content.as_str()).collect();
    let placed = contents_at("output", &untraced.placed, &names)?;
    compare_sequence("expected_output", contents, &placed)?;
    let placed_forms: Vec<usize> = (0..placed.len())
        .map(|i| untraced.forms.get(i).copied().unwrap_or(0))
        .collect();
    if !untraced.forms.is_empty() && untraced.forms.len() != placed.len() {
        return Err(format!(
            "the run returned {} forms for {} placed items",
            untraced.forms.len(),
            placed.len()
        ));
    }
    if &placed_forms != forms {
        return Err(format!(
            "expected_output forms: expected {forms:?}, got {placed_forms:?} (for {placed:?})"
        ));
    }
    if let Some(expected) = overflow {
        check_overflow(expected, untraced.overflow.as_ref(), &names)?;
    }
    let Some(expected) = diagnostics else {
        return Ok(());
    };
    let traced = engine
        .pipeline(&c.pipeline, &c.items, &c.budget, true)
        .map_err(|e| e.to_string())?;
    if traced.placed != untraced.placed || traced.forms != untraced.forms {
        let traced_placed = contents_at("traced output", &traced.placed, &names)?;
        return Err(format!(
            "traced run placed {traced_placed:?} but the untraced run {placed:?}"
        ));
    }
    let report = traced.report.ok_or("a traced run returned no report")?;
    check_diagnostics(expected, &report, &c.items, c.epsilon)
}

fn check_overflow(
    expected: &OverflowExpectation,
    actual: Option<&crate::engine::OverflowRecord>,
    names: &[&str],
) -> Check {
    let Some(actual) = actual else {
        return match expected.tokens_over_budget {
            0 => Ok(()),
            t => Err(format!(
                "overflow: expected an event {t} tokens over budget, got none"
            )),
        };
    };
    if actual.tokens_over_budget != expected.tokens_over_budget {
        return Err(format!(
            "overflow.tokens_over_budget: expected {}, got {}",
            expected.tokens_over_budget, actual.tokens_over_budget
        ));
    }
    match &expected.contents {
        Some(contents) => {
            let items = contents_at("overflowing items", &actual.items, names)?;
            compare_sequence("overflow.overflowing_contents", contents, &items)
        }
        None => Ok(()),
    }
}

fn check_diagnostics(
    expected: &DiagnosticsExpectation,
    report: &ReportRecord,
    items: &[ItemSpec],
    epsilon: f64,
) -> Check {
    compare_count(
        "summary.total_candidates",
        expected.total_candidates,
        report.total_candidates as usize,
    )?;
    if let Some(e) = expected.total_tokens_considered {
        if i128::from(e) != report.total_tokens_considered {
            return Err(format!(
                "summary.total_tokens_considered: expected {e}, got {}",
                report.total_tokens_considered
            ));
        }
    }
    let content = |index: usize| -> Result<&str, String> {
        items
            .get(index)
            .map(|i| i.content.as_str())
            .ok_or_else(|| format!("report names position {index}, out of range"))
    };
    if let Some(included) = &expected.included {
        let actual = report
            .included
            .iter()
            .map(|r| Ok((content(r.index)?, r)))
            .collect::<Result<Vec<_>, String>>()?;
        check_included(included, &actual, epsilon)?;
    }
    if let Some(pruned) = &expected.pruned_forms {
        let actual = report
            .pruned_forms
            .iter()
            .map(|&(i, f, by)| Ok((content(i)?.to_string(), f, by)))
            .collect::<Result<Vec<_>, String>>()?;
        if &actual != pruned {
            return Err(format!(
                "diagnostics.pruned_forms: expected {pruned:?}, got {actual:?}"
            ));
        }
    }
    if let Some(excluded) = &expected.excluded {
        let actual = report
            .excluded
            .iter()
            .map(|r| Ok((content(r.index)?, r)))
            .collect::<Result<Vec<_>, String>>()?;
        check_excluded(excluded, &actual, epsilon)?;
    }
    if let Some(shortfalls) = &expected.shortfalls {
        check_shortfalls(shortfalls, &report.shortfalls)?;
    }
    match &expected.groups {
        Some(groups) => check_groups(groups, &report.groups, items),
        None => Ok(()),
    }
}

/// The group listing (extension): same groups in the same order; each given field equal.
fn check_groups(
    expected: &[GroupExpectation],
    actual: &[GroupRecord],
    items: &[ItemSpec],
) -> Check {
    let content = |index: usize| -> Result<&str, String> {
        items
            .get(index)
            .map(|i| i.content.as_str())
            .ok_or_else(|| format!("group listing names position {index}, out of range"))
    };
    compare_lengths("diagnostics.groups", expected, actual, |a| {
        format!(
            "got {:?}",
            a.iter().map(|g| g.key.as_str()).collect::<Vec<_>>()
        )
    })?;
    for (pos, (e, a)) in expected.iter().zip(actual).enumerate() {
        let at = format!("diagnostics.groups[{pos}]");
        let members = a
            .members
            .iter()
            .map(|&m| content(m))
            .collect::<Result<Vec<_>, String>>()?;
        let differs = |what: &str, want: &dyn std::fmt::Debug, got: &dyn std::fmt::Debug| {
            Err(format!(
                "{at}.{what} ({}): expected {want:?}, got {got:?}",
                e.key
            ))
        };
        if e.key != a.key {
            return differs("key", &e.key, &a.key);
        }
        if e.members != members {
            return differs("members", &e.members, &members);
        }
        if e.tokens.is_some_and(|t| t != a.tokens) {
            return differs("tokens", &e.tokens, &a.tokens);
        }
        if e.decision != a.decision {
            return differs("decision", &e.decision, &a.decision);
        }
        if e.stage.is_some() && e.stage != a.stage {
            return differs("stage", &e.stage, &a.stage);
        }
        let member = a.member_index.map(content).transpose()?;
        if e.member.is_some() && e.member.as_deref() != member {
            return differs("member", &e.member, &member);
        }
        let pinned_by = a.pinned_by.map(content).transpose()?;
        if e.pinned_by.is_some() && e.pinned_by.as_deref() != pinned_by {
            return differs("pinned_by", &e.pinned_by, &pinned_by);
        }
        if e.partial_selection
            .is_some_and(|p| p != a.partial_selection)
        {
            return differs(
                "partial_selection",
                &e.partial_selection,
                &a.partial_selection,
            );
        }
    }
    Ok(())
}

/// Equal lengths, or a message listing both sides.
fn compare_lengths<E, A>(
    what: &str,
    expected: &[E],
    actual: &[A],
    show: impl Fn(&[A]) -> String,
) -> Check {
    if expected.len() == actual.len() {
        return Ok(());
    }
    Err(format!(
        "{what}: expected {} entries, got {} ({})",
        expected.len(),
        actual.len(),
        show(actual)
    ))
}

fn check_included(
    expected: &[IncludedExpectation],
    actual: &[(&str, &IncludedRecord)],
    epsilon: f64,
) -> Check {
    compare_lengths("diagnostics.included", expected, actual, |a| {
        format!(
            "got {:?}",
            a.iter()
                .map(|(c, r)| format!("{c}:{}", r.reason))
                .collect::<Vec<_>>()
        )
    })?;
    for (pos, (e, &(content, record))) in expected.iter().zip(actual).enumerate() {
        let (score, reason) = (record.score, record.reason.as_str());
        let at = format!("diagnostics.included[{pos}]");
        if e.content != content {
            return Err(format!(
                "{at}.content: expected {:?}, got {content:?}",
                e.content
            ));
        }
        if let Some(s) = e.score.filter(|&s| !score_matches(score, s, epsilon)) {
            return Err(score_mismatch(
                &format!("{at} ({content:?})"),
                s,
                score,
                epsilon,
            ));
        }
        if let Some(r) = e.reason.as_deref().filter(|&r| r != reason) {
            return Err(format!(
                "{at}.inclusion_reason ({content:?}): expected {r}, got {reason}"
            ));
        }
        // The Downgraded reason's fields (extension); other keys are ignored.
        for (key, want) in e
            .fields
            .iter()
            .filter(|(k, _)| DOWNGRADED_FIELDS.contains(&k.as_str()))
        {
            let got = record
                .fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .ok_or_else(|| {
                    format!("{at}.{key}: expected {want}, but the reason has no such field")
                })?;
            if !field_matches(want, got, epsilon) {
                return Err(format!(
                    "{at}.{key} ({content:?}): expected {want}, got {got}"
                ));
            }
        }
    }
    Ok(())
}

/// Wire fields of the `Downgraded` inclusion reason (the variant extension).
const DOWNGRADED_FIELDS: [&str; 5] = [
    "form",
    "full_tokens",
    "chosen_tokens",
    "available_tokens",
    "cause",
];

fn check_excluded(
    expected: &[ExcludedExpectation],
    actual: &[(&str, &ExcludedRecord)],
    epsilon: f64,
) -> Check {
    compare_lengths("diagnostics.excluded", expected, actual, |a| {
        format!(
            "got {:?}",
            a.iter()
                .map(|(c, r)| format!("{c}:{}", r.reason.name))
                .collect::<Vec<_>>()
        )
    })?;
    for (pos, (e, &(content, record))) in expected.iter().zip(actual).enumerate() {
        let at = format!("diagnostics.excluded[{pos}]");
        if e.content != content {
            return Err(format!(
                "{at}.content: expected {:?}, got {content:?}",
                e.content
            ));
        }
        if !score_matches(record.score, e.score, epsilon) {
            return Err(score_mismatch(
                &format!("{at} ({content:?})"),
                e.score,
                record.score,
                epsilon,
            ));
        }
        if e.reason != record.reason.name {
            return Err(format!(
                "{at}.exclusion_reason ({content:?}): expected {}, got {}",
                e.reason, record.reason.name
            ));
        }
        check_reason_fields(&at, e, record, epsilon)?;
    }
    Ok(())
}

/// Wire fields of each known exclusion variant (06 §7.1). Keys of an excluded entry that
/// are not fields of its variant are unknown keys and ignored; for a variant this runner
/// does not know, every extra key is compared.
fn variant_fields(reason: &str) -> Option<&'static [&'static str]> {
    Some(match reason {
        "BudgetExceeded" => &["item_tokens", "available_tokens"],
        "ScoredTooLow" => &["score", "threshold"],
        "Deduplicated" => &["deduplicated_against"],
        "QuotaCapExceeded" => &["kind", "cap", "actual"],
        "QuotaRequireDisplaced" => &["displaced_by_kind"],
        "NegativeTokens" => &["tokens"],
        "PinnedOverride" => &["displaced_by"],
        "Filtered" => &["filter_name"],
        "CountCapExceeded" => &["kind", "cap", "count"],
        "CountRequireCandidatesExhausted" => &["kind"],
        "GroupExcluded" => &["group", "member_index", "member_content", "member_reason"],
        _ => return None,
    })
}

fn check_reason_fields(
    at: &str,
    e: &ExcludedExpectation,
    record: &ExcludedRecord,
    epsilon: f64,
) -> Check {
    let known = variant_fields(&e.reason);
    for (key, want) in &e.fields {
        if known.is_some_and(|k| !k.contains(&key.as_str())) {
            continue;
        }
        let got = record.reason.field(key).ok_or_else(|| {
            format!("{at}.{key}: expected {want}, but the reason has no such field")
        })?;
        if !field_matches(want, got, epsilon) {
            return Err(format!("{at}.{key}: expected {want}, got {got}"));
        }
    }
    Ok(())
}

/// Integers and strings compare exactly; a float on either side compares by the ε rule.
fn field_matches(expected: &FieldValue, actual: &FieldValue, epsilon: f64) -> bool {
    let number = |v: &FieldValue| match v {
        FieldValue::Int(i) => Some(*i as f64),
        FieldValue::Float(f) => Some(*f),
        FieldValue::Str(_) => None,
    };
    match (expected, actual) {
        (FieldValue::Int(a), FieldValue::Int(b)) => a == b,
        (FieldValue::Str(a), FieldValue::Str(b)) => a == b,
        _ => match (number(expected), number(actual)) {
            (Some(a), Some(b)) => score_matches(b, a, epsilon),
            _ => false,
        },
    }
}

fn check_shortfalls(expected: &[ShortfallSpec], actual: &[ShortfallSpec]) -> Check {
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "diagnostics.shortfalls: expected {expected:?}, got {actual:?}"
    ))
}
