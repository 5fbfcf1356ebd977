//! Invariants every run must satisfy, whatever the input.
//!
//! [`run_and_check`] runs a pipeline twice — at the requested trace level and at a
//! different one — and panics (which libFuzzer reports as a crash) when
//!
//! * the two runs disagree (tracing must never change the outcome: the same selection,
//!   or the same error — the report's total of every token is exact, whatever the items);
//! * a selection is malformed: indices out of range or repeated, parallel vectors of
//!   different lengths, a negative-token item included, a pinned item left out (unless a
//!   negative-token member took its group out), a group split or its members apart;
//! * a token sum wrapped: the included tokens (or every token, for the report's total) do
//!   not fit in `i64` although the run succeeded;
//! * the overflow strategy was not honoured (Throw over target, Truncate keeping a
//!   non-pinned item past the target, Proceed without the matching overflow event or
//!   callback);
//! * a report does not account for every input exactly once, or is not ordered as
//!   documented.
//!
//! [`read_both_ways`] and [`reads_back_strictly`] check the JSON readers: lenient and
//! strict reads that agree, and written text that reads back.

use std::cell::RefCell;
use std::fmt::Debug;

use ctxpack::diagnostics::{InclusionReason, OverflowEvent, SelectionReport, TraceDetail};
use ctxpack::policy::{JsonRead, JsonReadOptions};
use ctxpack::{
    ContextBudget, ContextItem, ErrorCode, OverflowStrategy, Pipeline, Result, RunOptions,
    Selection,
};

/// Runs `pipeline` at `trace` and at another level, checks both runs and their agreement,
/// and returns the result of the run at `trace`.
pub fn run_and_check(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    trace: TraceDetail,
) -> Result<Selection> {
    let other = if trace == TraceDetail::Item {
        TraceDetail::None
    } else {
        TraceDetail::Item
    };
    let first = checked_run(pipeline, items, budget, trace);
    let second = checked_run(pipeline, items, budget, other);
    match (&first, &second) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.indices, b.indices, "tracing changed the selection");
            assert_eq!(a.reasons, b.reasons, "tracing changed the reasons");
            assert_eq!(a.overflow, b.overflow, "tracing changed the overflow event");
            let bits = |s: &Selection| s.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a), bits(b), "tracing changed the scores");
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "traced and untraced runs failed differently"),
        (Err(e), Ok(_)) | (Ok(_), Err(e)) => {
            panic!("tracing changed the outcome: one run failed with {e}, the other succeeded")
        }
    }
    first
}

/// One run with an overflow callback attached; checks the result and the callback.
fn checked_run(
    pipeline: &Pipeline,
    items: &[ContextItem],
    budget: &ContextBudget,
    trace: TraceDetail,
) -> Result<Selection> {
    let events: RefCell<Vec<OverflowEvent>> = RefCell::new(Vec::new());
    let on_overflow = |e: &OverflowEvent| events.borrow_mut().push(e.clone());
    let options = RunOptions {
        trace,
        on_overflow: Some(&on_overflow),
    };
    let result = pipeline.run_with(items, budget, &options);
    let events = events.into_inner();
    assert!(
        events.len() <= 1,
        "overflow callback called {} times",
        events.len()
    );
    match &result {
        Ok(selection) => {
            assert_eq!(
                events.first(),
                selection.overflow.as_ref(),
                "overflow callback and selection disagree"
            );
            check_selection(items, budget, pipeline.overflow_strategy(), selection);
            assert_eq!(
                selection.report.is_some(),
                trace != TraceDetail::None,
                "report present iff traced"
            );
            if let Some(report) = &selection.report {
                check_report(items, selection, report);
            }
        }
        // Formatting the message must not panic either.
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    result
}

/// The tokens of `indices`, summed without any chance of wrapping.
fn exact_sum(items: &[ContextItem], indices: impl IntoIterator<Item = usize>) -> i128 {
    indices
        .into_iter()
        .map(|i| i128::from(items[i].tokens()))
        .sum()
}

/// Shape, token and overflow-strategy invariants of a successful run.
pub fn check_selection(
    items: &[ContextItem],
    budget: &ContextBudget,
    strategy: OverflowStrategy,
    selection: &Selection,
) {
    let n = items.len();
    assert_eq!(selection.indices.len(), selection.scores.len());
    assert_eq!(selection.indices.len(), selection.reasons.len());
    let mut seen = vec![false; n];
    for &i in &selection.indices {
        assert!(i < n, "index {i} out of range 0..{n}");
        assert!(!seen[i], "index {i} selected twice");
        seen[i] = true;
        assert!(items[i].tokens() >= 0, "negative-token item {i} selected");
    }
    let negative_group = |key: &str| {
        items
            .iter()
            .any(|m| m.group() == Some(key) && m.tokens() < 0)
    };
    for (i, item) in items.iter().enumerate() {
        if item.pinned() && item.tokens() >= 0 && !item.group().is_some_and(negative_group) {
            assert!(seen[i], "pinned item {i} left out of a successful run");
        }
    }
    check_groups(items, &selection.indices);

    let used = exact_sum(items, selection.indices.iter().copied());
    assert!(
        used <= i128::from(i64::MAX),
        "included tokens ({used}) do not fit in i64: the sum must fail with TokenOverflow"
    );
    let target = i128::from(budget.target_tokens());
    // Pinned: the items placed as pinned (a pinned member pins its group).
    let pinned = exact_sum(
        items,
        selection
            .indices
            .iter()
            .zip(&selection.reasons)
            .filter(|(_, r)| **r == InclusionReason::Pinned)
            .map(|(&i, _)| i),
    );
    match strategy {
        OverflowStrategy::Throw => {
            assert!(
                used <= target,
                "Throw kept {used} tokens over target {target}"
            )
        }
        OverflowStrategy::Truncate => assert!(
            used <= target.max(pinned),
            "Truncate kept {used} tokens over target {target} (pinned {pinned})"
        ),
        OverflowStrategy::Proceed => match &selection.overflow {
            Some(event) => {
                assert!(used > target, "overflow event without overflow");
                assert_eq!(i128::from(event.tokens_over_budget), used - target);
                let mut over = event.overflowing_items.clone();
                let mut placed = selection.indices.clone();
                over.sort_unstable();
                placed.sort_unstable();
                assert_eq!(over, placed, "overflowing items are not the placed items");
            }
            None => assert!(
                used <= target,
                "{used} tokens over target {target} unreported"
            ),
        },
    }
    if strategy != OverflowStrategy::Proceed {
        assert!(
            selection.overflow.is_none(),
            "overflow event without Proceed"
        );
    }
}

/// Every group is placed whole or not at all, its members next to each other in input
/// order.
fn check_groups(items: &[ContextItem], placed: &[usize]) {
    let mut rank = vec![None; items.len()];
    for (r, &i) in placed.iter().enumerate() {
        rank[i] = Some(r);
    }
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        let Some(key) = item.group() else { continue };
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let ranks: Vec<Option<usize>> = (0..items.len())
            .filter(|&i| items[i].group() == Some(key))
            .map(|i| rank[i])
            .collect();
        let placed_count = ranks.iter().flatten().count();
        assert!(
            placed_count == 0 || placed_count == ranks.len(),
            "group {key:?} split: {ranks:?}"
        );
        if placed_count > 0 {
            let first = ranks[0].expect("placed");
            for (k, r) in ranks.iter().enumerate() {
                assert_eq!(*r, Some(first + k), "group {key:?} not together: {ranks:?}");
            }
        }
    }
}

/// A report accounts for every input once, mirrors the selection and is ordered as
/// documented.
fn check_report(items: &[ContextItem], selection: &Selection, report: &SelectionReport) {
    let n = items.len();
    assert_eq!(report.total_candidates, n);
    assert_eq!(
        report.total_tokens_considered,
        exact_sum(items, 0..n),
        "report total is not the exact sum of every token"
    );
    let included: Vec<usize> = report.included.iter().map(|x| x.index).collect();
    assert_eq!(included, selection.indices, "report and selection disagree");
    assert_eq!(report.overflow, selection.overflow);
    assert_eq!(
        report.included.len() + report.excluded.len(),
        n,
        "included + excluded != total candidates"
    );
    let mut seen = vec![false; n];
    for i in included
        .iter()
        .chain(report.excluded.iter().map(|x| &x.index))
    {
        assert!(
            *i < n && !seen[*i],
            "item {i} reported twice or out of range"
        );
        seen[*i] = true;
    }
    for pair in report.excluded.windows(2) {
        assert!(
            pair[0].score.total_cmp(&pair[1].score).is_ge(),
            "excluded items are not sorted by score, descending"
        );
    }
}

/// Reads one document with `read`, leniently (`lenient`) and strictly (the same options
/// with `strict`), and checks that the reads agree: each failure has `code`, and the
/// strict read succeeds exactly when the lenient one succeeds without warnings, with an
/// equal value. Returns the lenient read's value.
pub fn read_both_ways<T: PartialEq + Debug>(
    lenient: JsonReadOptions<'_>,
    code: ErrorCode,
    read: impl Fn(&JsonReadOptions<'_>) -> Result<JsonRead<T>>,
) -> Option<T> {
    let strict = JsonReadOptions {
        strict: true,
        ..lenient
    };
    let (loose, tight) = (read(&lenient), read(&strict));
    for r in [&loose, &tight] {
        if let Err(e) = r {
            assert_eq!(e.code(), code, "{e}");
        }
    }
    match (&loose, &tight) {
        (Ok(l), Ok(s)) => {
            assert!(
                l.warnings.is_empty(),
                "strict accepted what lenient warned about"
            );
            assert_eq!(l.value, s.value, "strict and lenient reads differ");
        }
        (Ok(l), Err(e)) => assert!(
            !l.warnings.is_empty(),
            "strict rejected a document lenient read without warnings: {e}"
        ),
        (Err(e), Ok(_)) => panic!("lenient rejected what strict accepted: {e}"),
        (Err(_), Err(_)) => {}
    }
    loose.ok().map(|r| r.value)
}

/// Checks that `json`, written by the library from `expected`, reads back with `read`
/// strictly (with `options`' registry), without warnings, to an equal value, and returns
/// it.
pub fn reads_back_strictly<T: PartialEq + Debug>(
    json: &str,
    expected: &T,
    options: JsonReadOptions<'_>,
    read: impl Fn(&str, &JsonReadOptions<'_>) -> Result<JsonRead<T>>,
) -> T {
    let strict = JsonReadOptions {
        strict: true,
        ..options
    };
    let again =
        read(json, &strict).unwrap_or_else(|e| panic!("written JSON must read back: {e}: {json}"));
    assert!(
        again.warnings.is_empty(),
        "written JSON reads with warnings: {json}"
    );
    assert_eq!(
        &again.value, expected,
        "round trip changed the value: {json}"
    );
    again.value
}
