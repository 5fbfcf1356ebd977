//! Policy sensitivity (spec 07 §6): run several configurations over the same items and
//! budget and list the items whose inclusion changes.

use crate::diagnostics::SelectionReport;
use crate::error::{Error, Result};
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::Pipeline;
use crate::policy::Policy;

/// Whether one variant included or excluded an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemStatus {
    /// The item is in that variant's `included`.
    Included,
    /// The item is in that variant's `excluded`.
    Excluded,
}

/// One variant's label and the report of its dry run.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantReport {
    /// The caller's label (not checked for uniqueness).
    pub label: String,
    /// The full report of the variant's dry run.
    pub report: SelectionReport,
}

/// An item whose inclusion differs between variants.
#[derive(Debug, Clone, PartialEq)]
pub struct SensitivityDiff {
    /// The item's position in the input (decision D15 in docs/decisions.md).
    pub index: usize,
    /// One (label, status) per variant that reported the item, in variant order.
    pub statuses: Vec<(String, ItemStatus)>,
}

/// The result of a sensitivity comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct SensitivityReport {
    /// Every variant's report, in input order.
    pub variants: Vec<VariantReport>,
    /// The swinging items (included by at least one variant and excluded by at least
    /// one), in input order of the items.
    pub diffs: Vec<SensitivityDiff>,
}

/// Compares policies: each is built into a pipeline and dry-run with `budget` (policies carry no
/// budget). At least two variants are required ([`Error::InvalidArgument`]); build and run errors
/// propagate.
///
/// Items are matched by position (decision D15 in docs/decisions.md), not by content as in the
/// references, so duplicate contents cannot create false swings, and `diffs` follow the input order
/// of the items (the references give first-seen or hash order).
///
/// ```
/// use ctxpack::analytics::policy_sensitivity;
/// use ctxpack::policy::Policy;
/// use ctxpack::{ContextBudget, ContextItem};
///
/// let items = [ContextItem::new("hello", 10)?, ContextItem::new("world", 20)?];
/// let (chat, rag) = (Policy::preset("chat")?, Policy::preset("rag")?);
/// let budget = ContextBudget::new(1000, 1000)?;
/// let report = policy_sensitivity(&items, &budget, &[("chat", &chat), ("rag", &rag)])?;
/// assert_eq!(report.variants[1].label, "rag");
/// assert!(report.diffs.is_empty()); // everything fits under both policies
///
/// // At least two variants are required.
/// assert!(policy_sensitivity(&items, &budget, &[("chat", &chat)]).is_err());
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub fn policy_sensitivity(
    items: &[ContextItem],
    budget: &ContextBudget,
    variants: &[(&str, &Policy)],
) -> Result<SensitivityReport> {
    sensitivity(items, variants, |policy| policy.dry_run(items, budget))
}

/// Compares pipelines, which can hold components a policy cannot express (count quotas
/// with custom inner slicers, custom scorers, …). Same rules as [`policy_sensitivity`],
/// including the two-variant minimum (which the crate's pipeline form does not enforce).
///
/// Greedy slicing against the optimal knapsack on the same items:
///
/// ```
/// use std::sync::Arc;
///
/// use ctxpack::analytics::{pipeline_sensitivity, ItemStatus};
/// use ctxpack::placer::ChronologicalPlacer;
/// use ctxpack::scorer::ReflexiveScorer;
/// use ctxpack::slicer::{GreedySlice, KnapsackSlice, Slicer};
/// use ctxpack::{ContextBudget, ContextItem, Pipeline};
///
/// let items = [
///     ContextItem::builder("a", 60).future_relevance_hint(0.9).build()?,
///     ContextItem::builder("b", 50).future_relevance_hint(0.6).build()?,
///     ContextItem::builder("c", 50).future_relevance_hint(0.6).build()?,
/// ];
/// let with = |slicer: Arc<dyn Slicer>| {
///     Pipeline::builder()
///         .scorer(Arc::new(ReflexiveScorer::new()))
///         .slicer(slicer)
///         .placer(Arc::new(ChronologicalPlacer::new()))
///         .build()
/// };
/// let greedy = with(Arc::new(GreedySlice::new()))?;
/// let knapsack = with(Arc::new(KnapsackSlice::new(1)?))?;
/// let budget = ContextBudget::new(100, 100)?;
/// // Greedy takes "a" (best score per token), then nothing else fits; the knapsack finds
/// // "b" + "c" (1.2 > 0.9). Every item swings.
/// let report = pipeline_sensitivity(&items, &budget, &[("greedy", &greedy), ("knapsack", &knapsack)])?;
/// assert_eq!(report.variants.len(), 2);
/// let swinging: Vec<usize> = report.diffs.iter().map(|d| d.index).collect();
/// assert_eq!(swinging, [0, 1, 2]);
/// assert_eq!(
///     report.diffs[0].statuses,
///     [("greedy".to_string(), ItemStatus::Included), ("knapsack".to_string(), ItemStatus::Excluded)]
/// );
/// # Ok::<(), ctxpack::Error>(())
/// ```
pub fn pipeline_sensitivity(
    items: &[ContextItem],
    budget: &ContextBudget,
    variants: &[(&str, &Pipeline)],
) -> Result<SensitivityReport> {
    sensitivity(items, variants, |pipeline| pipeline.dry_run(items, budget))
}

/// Checks the two-variant minimum, dry-runs every variant in order, then compares.
fn sensitivity<T>(
    items: &[ContextItem],
    variants: &[(&str, &T)],
    dry_run: impl Fn(&T) -> Result<SelectionReport>,
) -> Result<SensitivityReport> {
    require_two(variants.len())?;
    let runs = variants
        .iter()
        .map(|(label, config)| {
            Ok(VariantReport {
                label: label.to_string(),
                report: dry_run(config)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(compare(items.len(), runs))
}

fn require_two(count: usize) -> Result<()> {
    if count < 2 {
        return Err(Error::InvalidArgument(format!(
            "a sensitivity comparison requires at least 2 variants (got {count})"
        )));
    }
    Ok(())
}

/// Builds the status table by position and keeps the swinging items. Per variant, an item
/// gets `Included` for its entry in `included`, then `Excluded` for its entry in
/// `excluded` (a well-formed report names each item once).
fn compare(item_count: usize, variants: Vec<VariantReport>) -> SensitivityReport {
    let mut table: Vec<Vec<(String, ItemStatus)>> = vec![Vec::new(); item_count];
    for v in &variants {
        let included = v
            .report
            .included
            .iter()
            .map(|x| (x.index, ItemStatus::Included));
        let excluded = v
            .report
            .excluded
            .iter()
            .map(|x| (x.index, ItemStatus::Excluded));
        for (index, status) in included.chain(excluded) {
            if let Some(row) = table.get_mut(index) {
                row.push((v.label.clone(), status));
            }
        }
    }
    let diffs = table
        .into_iter()
        .enumerate()
        .filter(|(_, s)| {
            s.iter().any(|(_, st)| *st == ItemStatus::Included)
                && s.iter().any(|(_, st)| *st == ItemStatus::Excluded)
        })
        .map(|(index, statuses)| SensitivityDiff { index, statuses })
        .collect();
    SensitivityReport { variants, diffs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{ExcludedItem, ExclusionReason, IncludedItem, InclusionReason};

    fn report(included: &[usize], excluded: &[usize]) -> SelectionReport {
        SelectionReport {
            included: included
                .iter()
                .map(|&index| IncludedItem {
                    index,
                    score: 0.5,
                    reason: InclusionReason::Scored,
                })
                .collect(),
            excluded: excluded
                .iter()
                .map(|&index| ExcludedItem {
                    index,
                    score: 0.1,
                    reason: ExclusionReason::BudgetExceeded {
                        item_tokens: 1,
                        available_tokens: 0,
                    },
                })
                .collect(),
            ..SelectionReport::default()
        }
    }

    fn variant(label: &str, included: &[usize], excluded: &[usize]) -> VariantReport {
        VariantReport {
            label: label.into(),
            report: report(included, excluded),
        }
    }

    #[test]
    fn only_swinging_items_in_input_order() {
        // Placed order differs from input order on purpose.
        let r = compare(
            5,
            vec![
                variant("a", &[3, 0, 1], &[4, 2]),
                variant("b", &[1, 4, 0], &[3, 2]),
                variant("c", &[0, 1], &[2, 4, 3]),
            ],
        );
        let got: Vec<(usize, Vec<(&str, ItemStatus)>)> = r
            .diffs
            .iter()
            .map(|d| {
                (
                    d.index,
                    d.statuses.iter().map(|(l, s)| (l.as_str(), *s)).collect(),
                )
            })
            .collect();
        use ItemStatus::{Excluded as E, Included as I};
        assert_eq!(
            got,
            vec![
                (3, vec![("a", I), ("b", E), ("c", E)]),
                (4, vec![("a", E), ("b", I), ("c", E)]),
            ]
        );
        assert_eq!(r.variants.len(), 3);
        assert_eq!(r.variants[1].label, "b");
    }

    #[test]
    fn duplicate_labels_are_kept_and_identical_runs_have_no_diffs() {
        let r = compare(2, vec![variant("x", &[0], &[1]), variant("x", &[0], &[1])]);
        assert!(r.diffs.is_empty());
        assert_eq!(r.variants[0].label, r.variants[1].label);
    }

    fn hinted(content: &str, tokens: i64, hint: f64, priority: i64) -> ContextItem {
        ContextItem::builder(content, tokens)
            .future_relevance_hint(hint)
            .priority(priority)
            .build()
            .unwrap()
    }

    fn single(scorer: crate::policy::ScorerSpec) -> Policy {
        Policy::new(vec![crate::policy::ScorerEntry::new(1.0, scorer)])
    }

    #[test]
    fn policies_that_disagree_produce_swings() {
        use crate::policy::ScorerSpec;
        // Room for one of the first two items; the third is always included.
        let items = vec![
            hinted("hinted", 10, 0.9, 1),
            hinted("urgent", 10, 0.1, 9),
            hinted("free", 0, 0.5, 5),
        ];
        let budget = ContextBudget::new(10, 10).unwrap();
        let by_hint = single(ScorerSpec::Reflexive);
        let by_priority = single(ScorerSpec::Priority);
        let r = policy_sensitivity(
            &items,
            &budget,
            &[("hint", &by_hint), ("priority", &by_priority)],
        )
        .unwrap();
        assert_eq!(r.variants.len(), 2);
        assert_eq!(r.variants[0].label, "hint");
        // The variant report is the variant's own dry run (events carry wall-clock times).
        let own = by_hint.dry_run(&items, &budget).unwrap();
        assert_eq!(r.variants[0].report.included, own.included);
        assert_eq!(r.variants[0].report.excluded, own.excluded);
        use ItemStatus::{Excluded as E, Included as I};
        let diffs: Vec<(usize, Vec<ItemStatus>)> = r
            .diffs
            .iter()
            .map(|d| (d.index, d.statuses.iter().map(|(_, s)| *s).collect()))
            .collect();
        assert_eq!(diffs, vec![(0, vec![I, E]), (1, vec![E, I])]);

        // The pipeline form gives the same diffs.
        let a = by_hint.build_pipeline().unwrap();
        let b = by_priority.build_pipeline().unwrap();
        let r2 = pipeline_sensitivity(&items, &budget, &[("hint", &a), ("priority", &b)]).unwrap();
        assert_eq!(r2.diffs, r.diffs);
    }

    #[test]
    fn duplicate_contents_are_matched_by_position() {
        use crate::policy::ScorerSpec;
        // Without deduplication two identical contents are two items; both variants keep
        // the first copy and drop the second, so nothing swings (content matching would
        // see one content both included and excluded in every variant).
        let items = vec![hinted("same", 10, 0.9, 9), hinted("same", 10, 0.1, 1)];
        let budget = ContextBudget::new(10, 10).unwrap();
        let mut a = single(ScorerSpec::Reflexive);
        a.deduplication = false;
        let mut b = single(ScorerSpec::Priority);
        b.deduplication = false;
        let r = policy_sensitivity(&items, &budget, &[("a", &a), ("b", &b)]).unwrap();
        assert!(r.diffs.is_empty(), "{:?}", r.diffs);
    }

    #[test]
    fn run_errors_propagate() {
        let items = vec![ContextItem::builder("big", 50)
            .pinned(true)
            .build()
            .unwrap()];
        let budget = ContextBudget::new(10, 10).unwrap();
        let p = Policy::preset("chat").unwrap();
        let err = policy_sensitivity(&items, &budget, &[("a", &p), ("b", &p)]).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::PinnedExceedsBudget);
    }

    #[test]
    fn fewer_than_two_variants_is_an_error() {
        let items: Vec<ContextItem> = Vec::new();
        let budget = ContextBudget::new(10, 10).unwrap();
        let policy = Policy::preset("chat").unwrap();
        let err = policy_sensitivity(&items, &budget, &[("only", &policy)]).unwrap_err();
        assert_eq!(
            err,
            Error::InvalidArgument(
                "a sensitivity comparison requires at least 2 variants (got 1)".into()
            )
        );
        assert!(pipeline_sensitivity(&items, &budget, &[]).is_err());
    }
}
