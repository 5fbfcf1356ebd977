//! Trace collectors: the pipeline is generic over [`Collector`], so an untraced run uses
//! [`NullCollector`] (a zero-sized type whose methods are empty) and every diagnostics
//! computation sits behind `if C::ENABLED`, which the compiler removes.

use std::time::Instant;

use crate::diagnostics::{
    CountRequirementShortfall, ExcludedItem, ExclusionReason, GroupReport, IncludedItem,
    InclusionReason, OverflowEvent, PipelineStage, SelectionReport, TraceDetail, TraceEvent,
};
use crate::model::PrunedForm;

/// What the pipeline reports to while it runs.
pub(crate) trait Collector {
    /// False for the null collector: callers skip building any payload.
    const ENABLED: bool;

    /// Marks the start of a stage's timed section.
    fn begin_stage(&mut self);
    /// Records the stage event (after the stage's item events).
    fn end_stage(&mut self, stage: PipelineStage, item_count: usize);
    /// Records an exclusion decided at `stage`.
    fn exclude(&mut self, stage: PipelineStage, index: usize, score: f64, reason: ExclusionReason);
    /// Records an inclusion (called in placed order, during Place).
    fn include(&mut self, index: usize, score: f64, reason: InclusionReason);
    /// Records the count-quota shortfalls of the Slice stage.
    fn shortfalls(&mut self, shortfalls: Vec<CountRequirementShortfall>);
    /// Records the group listing (grouped runs only, once, after Place).
    fn groups(&mut self, groups: Vec<GroupReport>);
    /// Records the forms pruned before slicing (runs with variants only, once).
    fn pruned_forms(&mut self, pruned: Vec<PrunedForm>);
}

/// The disabled collector: records nothing and allocates nothing.
pub(crate) struct NullCollector;

impl Collector for NullCollector {
    const ENABLED: bool = false;
    #[inline(always)]
    fn begin_stage(&mut self) {}
    #[inline(always)]
    fn end_stage(&mut self, _: PipelineStage, _: usize) {}
    #[inline(always)]
    fn exclude(&mut self, _: PipelineStage, _: usize, _: f64, _: ExclusionReason) {}
    #[inline(always)]
    fn include(&mut self, _: usize, _: f64, _: InclusionReason) {}
    #[inline(always)]
    fn shortfalls(&mut self, _: Vec<CountRequirementShortfall>) {}
    #[inline(always)]
    fn groups(&mut self, _: Vec<GroupReport>) {}
    #[inline(always)]
    fn pruned_forms(&mut self, _: Vec<PrunedForm>) {}
}

/// The recording collector behind traced runs.
pub(crate) struct Recorder {
    detail: TraceDetail,
    stage_started: Instant,
    report: SelectionReport,
}

impl Recorder {
    /// A recorder at `detail` (Stage or Item).
    pub(crate) fn new(detail: TraceDetail) -> Self {
        Self {
            detail,
            stage_started: Instant::now(),
            report: SelectionReport::default(),
        }
    }

    fn item_event(&mut self, stage: PipelineStage, index: usize, what: &str, reason: &str) {
        if self.detail >= TraceDetail::Item {
            self.report.events.push(TraceEvent {
                stage,
                duration_ms: 0.0,
                item_count: 1,
                message: Some(item_message(index, what, reason)),
                item_index: Some(index),
            });
        }
    }

    /// Finishes the report: totals, excluded sorted by score descending (total order,
    /// stable, so ties keep recording order), and the overflow event.
    pub(crate) fn into_report(
        mut self,
        total_candidates: usize,
        total_tokens_considered: i128,
        overflow: Option<OverflowEvent>,
    ) -> SelectionReport {
        self.report.total_candidates = total_candidates;
        self.report.total_tokens_considered = total_tokens_considered;
        self.report.overflow = overflow;
        self.report
            .excluded
            .sort_by(|a, b| b.score.total_cmp(&a.score));
        self.report
    }
}

/// `item {index} {what}: {reason}`, built without the formatting machinery (a traced run
/// writes one such message for every item).
fn item_message(index: usize, what: &str, reason: &str) -> String {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = index;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = std::str::from_utf8(&digits[start..]).unwrap_or_default();
    let mut message = String::with_capacity(8 + digits.len() + what.len() + reason.len());
    for part in ["item ", digits, " ", what, ": ", reason] {
        message.push_str(part);
    }
    message
}

impl Collector for Recorder {
    const ENABLED: bool = true;

    fn begin_stage(&mut self) {
        self.stage_started = Instant::now();
    }

    fn end_stage(&mut self, stage: PipelineStage, item_count: usize) {
        let duration_ms = self.stage_started.elapsed().as_secs_f64() * 1000.0;
        self.report.events.push(TraceEvent {
            stage,
            duration_ms,
            item_count,
            message: None,
            item_index: None,
        });
    }

    fn exclude(&mut self, stage: PipelineStage, index: usize, score: f64, reason: ExclusionReason) {
        self.item_event(stage, index, "excluded", reason.name());
        self.report.excluded.push(ExcludedItem {
            index,
            score,
            reason,
        });
    }

    fn include(&mut self, index: usize, score: f64, reason: InclusionReason) {
        self.item_event(PipelineStage::Place, index, "included", reason.name());
        self.report.included.push(IncludedItem {
            index,
            score,
            reason,
        });
    }

    fn shortfalls(&mut self, shortfalls: Vec<CountRequirementShortfall>) {
        self.report.count_requirement_shortfalls = shortfalls;
    }

    fn groups(&mut self, groups: Vec<GroupReport>) {
        self.report.groups = groups;
    }

    fn pruned_forms(&mut self, pruned: Vec<PrunedForm>) {
        self.report.pruned_forms = pruned;
    }
}

#[cfg(test)]
mod tests {
    use super::item_message;

    #[test]
    fn item_message_is_the_formatted_message() {
        let mut indices = vec![0, 1, 9, 10, 99, 100, 12_345, usize::MAX];
        indices.extend((0..64).map(|bit| 1usize << bit));
        indices.extend((0..64).map(|bit| (1usize << bit).wrapping_sub(1)));
        for index in indices {
            for (what, reason) in [("excluded", "BudgetExceeded"), ("included", ""), ("", "x")] {
                assert_eq!(
                    item_message(index, what, reason),
                    format!("item {index} {what}: {reason}")
                );
            }
        }
    }
}
