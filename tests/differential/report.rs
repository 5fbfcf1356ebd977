//! A library-neutral view of a SelectionReport, in ctxpack's vocabulary with items named by
//! input position, so reports from ctxpack, from the crate and from the reference driver
//! compare field by field.

use std::fmt::Debug;

use ctxpack::diagnostics::{ExclusionReason, InclusionReason, PipelineStage, SelectionReport};

use crate::both::id_of;
use crate::check::{close, same};

/// One report entry: input position, score, reason.
pub type Entry<R> = (usize, f64, R);

/// What two reports are compared on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportView {
    /// Included items in placed order.
    pub included: Vec<Entry<InclusionReason>>,
    /// Excluded items in report order (score descending, stable).
    pub excluded: Vec<Entry<ExclusionReason>>,
    /// Number of input items.
    pub total_candidates: usize,
    /// Sum of every input item's tokens.
    pub total_tokens: i128,
    /// Stage events (stage, item_count), in order.
    pub stage_counts: Vec<(PipelineStage, usize)>,
}

/// Which parts of two views must agree beyond the totals and stage counts.
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    /// Compare `included` in order (else as a set).
    pub included_order: bool,
    /// Compare `excluded` (in order).
    pub excluded: bool,
}

impl ReportView {
    /// The view of a ctxpack report (stage events are the events without an item).
    pub fn of_ctxpack(r: &SelectionReport) -> Self {
        Self {
            included: r
                .included
                .iter()
                .map(|i| (i.index, i.score, i.reason))
                .collect(),
            excluded: r
                .excluded
                .iter()
                .map(|e| (e.index, e.score, e.reason.clone()))
                .collect(),
            total_candidates: r.total_candidates,
            total_tokens: r.total_tokens_considered,
            stage_counts: r
                .events
                .iter()
                .filter(|e| e.item_index.is_none())
                .map(|e| (e.stage, e.item_count))
                .collect(),
        }
    }

    /// The view of a cupel report.
    pub fn of_cupel(r: &cupel::SelectionReport) -> Self {
        Self {
            included: r
                .included
                .iter()
                .map(|i| (id_of(&i.item), i.score, inclusion(i.reason)))
                .collect(),
            excluded: r
                .excluded
                .iter()
                .map(|e| (id_of(&e.item), e.score, exclusion(&e.reason)))
                .collect(),
            total_candidates: r.total_candidates,
            total_tokens: r.total_tokens_considered.into(),
            stage_counts: r
                .events
                .iter()
                .map(|e| (stage(e.stage), e.item_count))
                .collect(),
        }
    }

    /// Compares `got` with this (expected) view.
    pub fn diff(&self, got: &Self, parts: Parts) -> Result<(), String> {
        same(
            "report total_candidates",
            &self.total_candidates,
            &got.total_candidates,
        )?;
        same(
            "report total_tokens_considered",
            &self.total_tokens,
            &got.total_tokens,
        )?;
        same(
            "report stage events (stage, item_count)",
            &self.stage_counts,
            &got.stage_counts,
        )?;
        if parts.included_order {
            entries("report included", &self.included, &got.included)?;
        } else {
            entries(
                "report included (as a set)",
                &by_index(&self.included),
                &by_index(&got.included),
            )?;
        }
        if parts.excluded {
            entries("report excluded", &self.excluded, &got.excluded)?;
        }
        Ok(())
    }
}

/// Compares entry lists: positions and reasons exactly, scores within tolerance.
fn entries<R: PartialEq + Debug>(
    what: &str,
    want: &[Entry<R>],
    got: &[Entry<R>],
) -> Result<(), String> {
    let matches = want.len() == got.len()
        && want
            .iter()
            .zip(got)
            .all(|(w, g)| w.0 == g.0 && w.2 == g.2 && close(w.1, g.1));
    if matches {
        Ok(())
    } else {
        Err(format!("{what}:\n  expected {want:?}\n  got      {got:?}"))
    }
}

fn by_index<R: Clone>(xs: &[Entry<R>]) -> Vec<Entry<R>> {
    let mut v = xs.to_vec();
    v.sort_by_key(|e| e.0);
    v
}

fn stage(s: cupel::PipelineStage) -> PipelineStage {
    match s {
        cupel::PipelineStage::Classify => PipelineStage::Classify,
        cupel::PipelineStage::Score => PipelineStage::Score,
        cupel::PipelineStage::Deduplicate => PipelineStage::Deduplicate,
        cupel::PipelineStage::Slice => PipelineStage::Slice,
        cupel::PipelineStage::Place => PipelineStage::Place,
        other => panic!("unknown cupel stage {other:?}"),
    }
}

fn inclusion(r: cupel::InclusionReason) -> InclusionReason {
    match r {
        cupel::InclusionReason::Scored => InclusionReason::Scored,
        cupel::InclusionReason::Pinned => InclusionReason::Pinned,
        cupel::InclusionReason::ZeroToken => InclusionReason::ZeroToken,
        other => panic!("unknown cupel inclusion reason {other:?}"),
    }
}

fn exclusion(r: &cupel::ExclusionReason) -> ExclusionReason {
    use cupel::ExclusionReason as C;
    match r.clone() {
        C::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        },
        C::Deduplicated {
            deduplicated_against,
        } => ExclusionReason::Deduplicated {
            deduplicated_against,
        },
        C::NegativeTokens { tokens } => ExclusionReason::NegativeTokens { tokens },
        C::PinnedOverride { displaced_by } => ExclusionReason::PinnedOverride { displaced_by },
        C::CountCapExceeded { kind, cap, count } => ExclusionReason::CountCapExceeded {
            kind,
            cap: cap as u64,
            count: count as u64,
        },
        other => panic!("cupel emitted an unexpected exclusion reason {other:?}"),
    }
}
