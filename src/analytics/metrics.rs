//! Report helpers (spec 07 §7). All are pure and read only `report.included`; the report
//! names items by position, so each also takes the items of the run. An index outside
//! `items` fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument).

use crate::analytics::{included_forms, included_items};
use crate::diagnostics::SelectionReport;
use crate::error::Result;
use crate::model::{ContextBudget, ContextItem, ContextKind};
use crate::slicer::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, QuotaSlice, Slicer,
};

/// Σ tokens of the included items (as f64; an item placed as one of its variants counts
/// that variant's tokens) ÷ `budget.max_tokens()`.
///
/// The denominator is `max_tokens` (not the target, not `max − reserve`) and the value is
/// not clamped. When `max_tokens` is 0 the result is **0.0** instead of the references'
/// NaN or infinity (with a zero budget only zero-token items can be included, so nothing
/// of the budget is used).
pub fn budget_utilization(
    report: &SelectionReport,
    items: &[ContextItem],
    budget: &ContextBudget,
) -> Result<f64> {
    let used = sum(included_forms(report, items)?
        .iter()
        .map(|&(i, form)| i.form_tokens(form) as f64));
    let max = budget.max_tokens();
    Ok(if max == 0 { 0.0 } else { used / max as f64 })
}

/// The sum of `values` from `+0.0`. (`Iterator::sum` of floats starts from `-0.0`, the
/// additive identity, so an empty sum would be `-0.0` and a ratio of it `-0.0` too.)
fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |total, v| total + v)
}

/// The number of distinct kinds among the included items (ASCII case-insensitive),
/// pinned items included; 0 when nothing is included.
pub fn kind_diversity(report: &SelectionReport, items: &[ContextItem]) -> Result<usize> {
    let mut kinds: Vec<&ContextKind> = Vec::new();
    for item in included_items(report, items)? {
        if !kinds.contains(&item.kind()) {
            kinds.push(item.kind());
        }
    }
    Ok(kinds.len())
}

/// The share of included items that have a timestamp; **0.0** when nothing is included.
pub fn timestamp_coverage(report: &SelectionReport, items: &[ContextItem]) -> Result<f64> {
    let included = included_items(report, items)?;
    if included.is_empty() {
        return Ok(0.0);
    }
    let stamped = included.iter().filter(|i| i.timestamp().is_some()).count();
    Ok(stamped as f64 / included.len() as f64)
}

/// How a quota constraint is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaMode {
    /// Percent of the target's tokens (QuotaSlice).
    Percentage,
    /// Number of items (CountQuotaSlice, CountConstrainedKnapsackSlice).
    Count,
}

/// One per-kind constraint of a quota slicer.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaConstraint {
    /// The kind, as configured.
    pub kind: ContextKind,
    /// Percent or count.
    pub mode: QuotaMode,
    /// Required percent, or required count as f64.
    pub require: f64,
    /// Cap percent, or cap count as f64.
    pub cap: f64,
}

/// The constraints of `slicer` itself, in configuration order: a QuotaSlice gives its
/// entries in percent, CountQuotaSlice and CountConstrainedKnapsackSlice their counts.
/// Any other slicer gives none (wrapped slicers are not searched, as in the references).
pub fn quota_constraints(slicer: &dyn Slicer) -> Vec<QuotaConstraint> {
    let any = slicer.as_any();
    let counts = |entries: &[CountQuotaEntry]| {
        entries
            .iter()
            .map(|e| QuotaConstraint {
                kind: e.kind().clone(),
                mode: QuotaMode::Count,
                require: e.require_count() as f64,
                cap: e.cap_count() as f64,
            })
            .collect()
    };
    if let Some(q) = any.downcast_ref::<QuotaSlice>() {
        q.entries()
            .iter()
            .map(|e| QuotaConstraint {
                kind: e.kind().clone(),
                mode: QuotaMode::Percentage,
                require: e.require(),
                cap: e.cap(),
            })
            .collect()
    } else if let Some(c) = any.downcast_ref::<CountQuotaSlice>() {
        counts(c.entries())
    } else if let Some(c) = any.downcast_ref::<CountConstrainedKnapsackSlice>() {
        counts(c.entries())
    } else {
        Vec::new()
    }
}

/// How fully one constraint is used.
#[derive(Debug, Clone, PartialEq)]
pub struct KindQuotaUtilization {
    /// The constraint's kind.
    pub kind: ContextKind,
    /// Percent or count.
    pub mode: QuotaMode,
    /// The constraint's requirement.
    pub require: f64,
    /// The constraint's cap.
    pub cap: f64,
    /// Percentage: included tokens of the kind ÷ `budget.target_tokens()` × 100 (0.0 when
    /// the target is 0). Count: included items of the kind.
    pub actual: f64,
    /// `clamp(actual ÷ cap, 0, 1)`, or 0.0 when the cap is 0.
    pub utilization: f64,
}

/// One result per constraint of `slicer` ([`quota_constraints`]), sorted by kind string
/// (ordinal, case-sensitive, stable). Included items are grouped by kind ASCII
/// case-insensitively; the percentage mode divides by the caller's original target, not
/// the effective one. A slicer without constraints gives an empty list.
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::analytics::{quota_utilization, QuotaMode};
/// use ctxpack::placer::ChronologicalPlacer;
/// use ctxpack::scorer::ReflexiveScorer;
/// use ctxpack::slicer::{CountQuotaEntry, CountQuotaSlice, GreedySlice, ScarcityBehavior};
/// use ctxpack::{ContextBudget, ContextItem, ContextKind, Pipeline};
///
/// let memory = ContextKind::new("Memory")?;
/// let item = |content: &str, kind: &ContextKind, hint| {
///     ContextItem::builder(content, 10)
///         .kind(kind.clone())
///         .future_relevance_hint(hint)
///         .build()
/// };
/// let items = [
///     item("m1", &memory, 0.9)?,
///     item("m2", &memory, 0.8)?,
///     item("m3", &memory, 0.7)?,
///     item("note", &ContextKind::new("Message")?, 0.1)?,
/// ];
/// // At least one memory, at most two.
/// let entries = vec![CountQuotaEntry::new(memory.clone(), 1, 2)?];
/// let slicer = Arc::new(CountQuotaSlice::new(
///     entries,
///     Arc::new(GreedySlice::new()),
///     ScarcityBehavior::Degrade,
/// )?);
/// let pipeline = Pipeline::builder()
///     .scorer(Arc::new(ReflexiveScorer::new()))
///     .slicer(slicer.clone())
///     .placer(Arc::new(ChronologicalPlacer::new()))
///     .build()?;
/// let budget = ContextBudget::new(100, 100)?;
/// let report = pipeline.dry_run(&items, &budget)?; // m1, m2 and the note; m3 hits the cap
/// let usage = quota_utilization(&report, &items, slicer.as_ref(), &budget)?;
/// assert_eq!(usage.len(), 1);
/// assert_eq!((usage[0].mode, usage[0].actual, usage[0].cap), (QuotaMode::Count, 2.0, 2.0));
/// assert_eq!(usage[0].utilization, 1.0);
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub fn quota_utilization(
    report: &SelectionReport,
    items: &[ContextItem],
    slicer: &dyn Slicer,
    budget: &ContextBudget,
) -> Result<Vec<KindQuotaUtilization>> {
    quota_utilization_of(report, items, quota_constraints(slicer), budget)
}

/// [`quota_utilization`] for constraints taken from a slicer earlier
/// ([`quota_constraints`]), so that a report can be measured after the slicer is gone.
pub fn quota_utilization_of(
    report: &SelectionReport,
    items: &[ContextItem],
    constraints: Vec<QuotaConstraint>,
    budget: &ContextBudget,
) -> Result<Vec<KindQuotaUtilization>> {
    let included = included_forms(report, items)?;
    let target = budget.target_tokens();
    let mut out: Vec<KindQuotaUtilization> = constraints
        .into_iter()
        .map(|c| {
            let of_kind = included.iter().filter(|(i, _)| *i.kind() == c.kind);
            let actual = match c.mode {
                QuotaMode::Count => of_kind.count() as f64,
                QuotaMode::Percentage if target == 0 => 0.0,
                QuotaMode::Percentage => {
                    sum(of_kind.map(|&(i, form)| i.form_tokens(form) as f64)) / target as f64
                        * 100.0
                }
            };
            let utilization = if c.cap == 0.0 {
                0.0
            } else {
                (actual / c.cap).clamp(0.0, 1.0)
            };
            KindQuotaUtilization {
                kind: c.kind,
                mode: c.mode,
                require: c.require,
                cap: c.cap,
                actual,
                utilization,
            }
        })
        .collect();
    out.sort_by(|a, b| a.kind.as_str().cmp(b.kind.as_str()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{IncludedItem, InclusionReason};
    use crate::slicer::GreedySlice;

    fn item(content: &str, tokens: i64, kind: &str, ts: Option<i64>) -> ContextItem {
        let b = ContextItem::builder(content, tokens).kind(ContextKind::new(kind).unwrap());
        match ts {
            Some(t) => b.timestamp(t).build().unwrap(),
            None => b.build().unwrap(),
        }
    }

    fn report(included: &[usize]) -> SelectionReport {
        SelectionReport {
            included: included
                .iter()
                .map(|&index| IncludedItem {
                    index,
                    score: 1.0,
                    reason: InclusionReason::Scored,
                })
                .collect(),
            ..SelectionReport::default()
        }
    }

    fn items() -> Vec<ContextItem> {
        vec![
            item("a", 30, "Message", Some(1)),
            item("b", 20, "message", None),
            item("c", 50, "Document", Some(2)),
            item("d", 7, "ToolOutput", None),
        ]
    }

    #[test]
    fn nothing_included_is_positive_zero() {
        let items = [item("a", 10, "Message", None)];
        let budget = ContextBudget::new(100, 100).unwrap();
        let empty = report(&[]);
        let u = budget_utilization(&empty, &items, &budget).unwrap();
        assert!(u == 0.0 && u.is_sign_positive());
        let quota = QuotaConstraint {
            kind: ContextKind::new("Message").unwrap(),
            mode: QuotaMode::Percentage,
            require: 0.0,
            cap: 50.0,
        };
        let q = quota_utilization_of(&empty, &items, vec![quota], &budget).unwrap();
        assert!(q[0].actual.is_sign_positive() && q[0].utilization.is_sign_positive());
    }

    #[test]
    fn budget_utilization_divides_by_max_tokens() {
        let items = items();
        let budget = ContextBudget::with_all(200, 100, 50, vec![], 0.0).unwrap();
        assert_eq!(
            budget_utilization(&report(&[0, 2]), &items, &budget),
            Ok(0.4)
        );
        assert_eq!(budget_utilization(&report(&[]), &items, &budget), Ok(0.0));
        // Not clamped.
        let small = ContextBudget::new(50, 50).unwrap();
        assert_eq!(
            budget_utilization(&report(&[0, 1, 2]), &items, &small),
            Ok(2.0)
        );
        // A zero budget gives 0.0, not NaN.
        let zero = ContextBudget::new(0, 0).unwrap();
        assert_eq!(budget_utilization(&report(&[]), &items, &zero), Ok(0.0));
    }

    #[test]
    fn kind_diversity_folds_ascii_case() {
        let items = items();
        assert_eq!(kind_diversity(&report(&[0, 1]), &items), Ok(1));
        assert_eq!(kind_diversity(&report(&[0, 1, 2, 3]), &items), Ok(3));
        assert_eq!(kind_diversity(&report(&[]), &items), Ok(0));
    }

    #[test]
    fn timestamp_coverage_guards_the_empty_report() {
        let items = items();
        assert_eq!(timestamp_coverage(&report(&[0, 1, 2, 3]), &items), Ok(0.5));
        assert_eq!(timestamp_coverage(&report(&[1]), &items), Ok(0.0));
        assert_eq!(timestamp_coverage(&report(&[]), &items), Ok(0.0));
    }

    #[test]
    fn indices_outside_the_items_are_an_error() {
        let items = items();
        let err = kind_diversity(&report(&[9]), &items).unwrap_err();
        assert_eq!(
            err,
            crate::Error::InvalidArgument(
                "the report names item 9 but only 4 items were given".into()
            )
        );
    }

    #[test]
    fn percentage_quotas_use_the_original_target() {
        use crate::slicer::{QuotaEntry, QuotaSlice};
        use std::sync::Arc;
        let items = items();
        let quota = QuotaSlice::new(
            vec![
                QuotaEntry::new(ContextKind::new("ToolOutput").unwrap(), 0.0, 10.0).unwrap(),
                QuotaEntry::new(ContextKind::new("Message").unwrap(), 10.0, 40.0).unwrap(),
                QuotaEntry::new(ContextKind::new("Document").unwrap(), 0.0, 0.0).unwrap(),
            ],
            Arc::new(GreedySlice::new()),
        )
        .unwrap();
        let budget = ContextBudget::with_all(200, 100, 50, vec![], 20.0).unwrap();
        let got = quota_utilization(&report(&[0, 1, 2, 3]), &items, &quota, &budget).unwrap();
        let summary: Vec<(&str, f64, f64, f64, f64)> = got
            .iter()
            .map(|u| (u.kind.as_str(), u.require, u.cap, u.actual, u.utilization))
            .collect();
        // Sorted by kind (ordinal); Message groups "Message" and "message" (50 tokens);
        // a zero cap gives utilization 0; ToolOutput 7 % of a 10 % cap (7 / 100 * 100 in
        // f64, the spec's order of operations).
        assert_eq!(
            summary,
            vec![
                ("Document", 0.0, 0.0, 50.0, 0.0),
                ("Message", 10.0, 40.0, 50.0, 1.0),
                (
                    "ToolOutput",
                    0.0,
                    10.0,
                    7.000000000000001,
                    0.7000000000000001
                ),
            ]
        );
        assert!(got.iter().all(|u| u.mode == QuotaMode::Percentage));
        // A zero target gives actual 0.
        let zero = ContextBudget::new(10, 0).unwrap();
        let got = quota_utilization(&report(&[0]), &items, &quota, &zero).unwrap();
        assert!(got.iter().all(|u| u.actual == 0.0 && u.utilization == 0.0));
    }

    #[test]
    fn count_quotas_count_items() {
        use crate::slicer::{
            CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, KnapsackSlice,
            ScarcityBehavior,
        };
        use std::sync::Arc;
        let items = items();
        let entries = vec![
            CountQuotaEntry::new(ContextKind::new("message").unwrap(), 1, 4).unwrap(),
            CountQuotaEntry::new(ContextKind::new("Memory").unwrap(), 0, 0).unwrap(),
        ];
        let budget = ContextBudget::new(100, 100).unwrap();
        let cq = CountQuotaSlice::new(
            entries.clone(),
            Arc::new(GreedySlice::new()),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        let ccks = CountConstrainedKnapsackSlice::new(
            entries,
            KnapsackSlice::new(10).unwrap(),
            ScarcityBehavior::Degrade,
        )
        .unwrap();
        for slicer in [&cq as &dyn Slicer, &ccks] {
            let got = quota_utilization(&report(&[0, 1, 2]), &items, slicer, &budget).unwrap();
            // "Memory" sorts before "message" (ordinal, case-sensitive).
            let summary: Vec<(&str, QuotaMode, f64, f64, f64, f64)> = got
                .iter()
                .map(|u| {
                    (
                        u.kind.as_str(),
                        u.mode,
                        u.require,
                        u.cap,
                        u.actual,
                        u.utilization,
                    )
                })
                .collect();
            assert_eq!(
                summary,
                vec![
                    ("Memory", QuotaMode::Count, 0.0, 0.0, 0.0, 0.0),
                    ("message", QuotaMode::Count, 1.0, 4.0, 2.0, 0.5),
                ]
            );
        }
        assert_eq!(quota_constraints(&cq).len(), 2);
    }

    #[test]
    fn non_quota_slicers_have_no_constraints() {
        let items = items();
        let budget = ContextBudget::new(100, 100).unwrap();
        assert!(quota_constraints(&GreedySlice::new()).is_empty());
        assert_eq!(
            quota_utilization(&report(&[0]), &items, &GreedySlice::new(), &budget),
            Ok(vec![])
        );
    }
}
