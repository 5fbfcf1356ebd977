//! The result handle: the selection, and the selection report of a traced run.

use std::sync::{Arc, OnceLock};

use crate::analytics::{quota_constraints, QuotaConstraint};
use crate::diagnostics::{
    try_report_to_json, CountRequirementShortfall, ExclusionReason, GroupDecision, GroupReport,
    IncludedItem, InclusionReason, SelectionReport,
};
use crate::ffi::enums::{
    ctxpack_downgrade_cause, ctxpack_exclusion_reason, ctxpack_group_decision,
    ctxpack_inclusion_reason, ctxpack_pipeline_stage,
};
use crate::ffi::handles::{self, HandleType};
use crate::ffi::items::ItemVec;
use crate::ffi::status::{ctxpack_error, ctxpack_status, FfiError, FfiResult};
use crate::ffi::strings::{ctxpack_str, static_str, terminate, OwnedCString};
use crate::ffi::versioned::{self, Versioned};
use crate::model::{ContextBudget, ContextItem};
use crate::pipeline::{ColumnarScratch, Pipeline, Selection, StageBuffers};
use crate::prefix::ReuseReport;

/// The outcome of a run. Immutable: its accessors may be called from many threads. Every
/// pointer it hands out is owned by it and valid until `ctxpack_result_free`.
pub struct ctxpack_result {
    _opaque: [u8; 0],
}

impl HandleType for ctxpack_result {
    type Value = ResultData;
    const TAG: u32 = u32::from_be_bytes(*b"CPRS");
    const NAME: &'static str = "ctxpack_result";
}

/// What the report helpers need of the run besides its report and items: the budget and
/// the slicer's quota constraints. A result keeps them, so the helpers never depend on
/// the caller passing the right budget or pipeline again.
#[derive(Debug, Clone)]
pub(crate) struct RunContext {
    /// The budget the run was given.
    pub(crate) budget: ContextBudget,
    /// The quota constraints of the pipeline's slicer (none for other slicers).
    pub(crate) quotas: Vec<QuotaConstraint>,
}

impl RunContext {
    /// The context of a run of `pipeline` within `budget`.
    pub(crate) fn of(pipeline: &Pipeline, budget: &ContextBudget) -> Self {
        Self {
            budget: budget.clone(),
            quotas: quota_constraints(pipeline.slicer().as_ref()),
        }
    }

    /// Makes this the context of a run of `pipeline` within `budget`, reusing the memory
    /// of the budget copy (no allocation for a pipeline without quota constraints).
    fn update(&mut self, pipeline: &Pipeline, budget: &ContextBudget) {
        self.budget.clone_from(budget);
        self.quotas = quota_constraints(pipeline.slicer().as_ref());
    }
}

/// What a result handle holds.
pub(crate) struct ResultData {
    selection: Selection,
    /// The placed items' reasons as `ctxpack_inclusion_reason` values (`selection.reasons`
    /// is empty in a result made by [`ResultData::from_window`]; this is the one read).
    reasons: Vec<i32>,
    /// The form of every placed item, parallel to `selection.indices` (0 = in full; the
    /// selection's own list is empty when no candidate had variants).
    forms: Vec<usize>,
    /// The run's items, kept for the JSON form of a traced run.
    items: Option<Arc<ItemVec>>,
    /// The run's budget and quota constraints, for the report helpers.
    pub(crate) context: RunContext,
    /// The JSON form, built on first request.
    json: OnceLock<OwnedCString>,
    /// The reuse report of a prefix run (`ctxpack_pipeline_run_prefix`).
    pub(crate) reuse: Option<ReuseReport>,
    /// The columnar run's memory, kept for the next run into this result
    /// (`ctxpack_pipeline_run_descs_into`).
    pub(crate) scratch: Option<Box<ColumnarScratch>>,
}

impl ResultData {
    pub(crate) fn new(
        mut selection: Selection,
        items: Option<Arc<ItemVec>>,
        context: RunContext,
    ) -> Self {
        if let Some(report) = &mut selection.report {
            terminate_report(report);
        }
        let (mut reasons, mut forms) = (Vec::new(), Vec::new());
        fill_reasons_and_forms(&selection.reasons, &selection, &mut reasons, &mut forms);
        Self::assemble(selection, reasons, forms, items, context)
    }

    /// The result of a one-shot columnar run whose window `stages` hold, untraced: the
    /// window's indices and scores are moved into it, but its reasons are converted to
    /// their C values where they lie, so that the buffers keep their memory for the next
    /// run (the result's own `selection.reasons` stays empty: only the C values are read).
    /// A reason takes 40 bytes, so at N = 100 their array would be the run's one
    /// allocation of more than 1 KiB, for which glibc first consolidates every small
    /// block freed since (docs/performance.md, "A pipeline keeps its one-shot memory").
    pub(crate) fn from_window(stages: &mut StageBuffers, context: RunContext) -> Self {
        let selection = stages.take_selection_but_reasons();
        let (mut reasons, mut forms) = (Vec::new(), Vec::new());
        fill_reasons_and_forms(stages.reasons(), &selection, &mut reasons, &mut forms);
        Self::assemble(selection, reasons, forms, None, context)
    }

    fn assemble(
        selection: Selection,
        reasons: Vec<i32>,
        forms: Vec<usize>,
        items: Option<Arc<ItemVec>>,
        context: RunContext,
    ) -> Self {
        Self {
            selection,
            reasons,
            forms,
            items,
            context,
            json: OnceLock::new(),
            reuse: None,
            scratch: None,
        }
    }

    /// Makes this result that of an untraced columnar run of `pipeline` within `budget`
    /// whose window `stages` hold, reusing this result's memory: the window's vectors and
    /// this result's are swapped (the stages get the old ones for the next run), the C
    /// forms and the run's context are rewritten in place.
    pub(crate) fn refill(
        &mut self,
        stages: &mut StageBuffers,
        pipeline: &Pipeline,
        budget: &ContextBudget,
    ) {
        stages.swap_into(&mut self.selection);
        let selection = &self.selection;
        fill_reasons_and_forms(
            &selection.reasons,
            selection,
            &mut self.reasons,
            &mut self.forms,
        );
        self.items = None;
        self.context.update(pipeline, budget);
        self.json = OnceLock::new();
        self.reuse = None;
    }

    /// The result of a dry run (spec 07 §4) or of one variant of a sensitivity
    /// comparison: the selection is the report's included items (placed order, with their
    /// scores and reasons) and its overflow event, exactly as a traced run's selection
    /// mirrors its report; `items` are the run's items.
    pub(crate) fn from_report(
        report: SelectionReport,
        items: Arc<ItemVec>,
        context: RunContext,
    ) -> Self {
        Self::new(Selection::from_report(report), Some(items), context)
    }

    /// The report and the run's items, or `CTXPACK_NO_REPORT` for an untraced run.
    pub(crate) fn traced(&self) -> FfiResult<(&SelectionReport, &[ContextItem])> {
        let report = self.report()?;
        Ok((report, self.items.as_deref().map_or(&[][..], |v| &v[..])))
    }

    fn report(&self) -> FfiResult<&SelectionReport> {
        self.selection.report.as_ref().ok_or_else(|| {
            FfiError::new(
                ctxpack_status::CTXPACK_NO_REPORT,
                "the run was not traced (set ctxpack_run_options.trace_detail)",
            )
        })
    }
}

/// Writes the placed items' reasons (`placed`: `selection`'s, or the window's when the
/// selection was taken without them) as `ctxpack_inclusion_reason` values into `reasons`
/// and the form of every placed item of `selection` into `forms` (both cleared first; 0
/// for every item when the selection has no forms).
fn fill_reasons_and_forms(
    placed: &[InclusionReason],
    selection: &Selection,
    reasons: &mut Vec<i32>,
    forms: &mut Vec<usize>,
) {
    reasons.clear();
    reasons.extend(
        placed
            .iter()
            .map(|r| ctxpack_inclusion_reason::from(*r) as i32),
    );
    forms.clear();
    match selection.forms.is_empty() {
        true => forms.resize(selection.indices.len(), 0),
        false => forms.extend_from_slice(&selection.forms),
    }
}

/// Makes every string the report accessors hand out NUL-terminated ([`terminate`]): the
/// event messages, the reasons' string fields and the shortfalls' kinds.
fn terminate_report(report: &mut SelectionReport) {
    for message in report.events.iter_mut().filter_map(|e| e.message.as_mut()) {
        terminate(message);
    }
    for e in &mut report.excluded {
        match &mut e.reason {
            ExclusionReason::Deduplicated {
                deduplicated_against: s,
            }
            | ExclusionReason::QuotaCapExceeded { kind: s, .. }
            | ExclusionReason::QuotaRequireDisplaced {
                displaced_by_kind: s,
            }
            | ExclusionReason::PinnedOverride { displaced_by: s }
            | ExclusionReason::Filtered { filter_name: s }
            | ExclusionReason::CountCapExceeded { kind: s, .. }
            | ExclusionReason::CountRequireCandidatesExhausted { kind: s }
            | ExclusionReason::Unknown { name: s } => terminate(s),
            ExclusionReason::GroupExcluded {
                group,
                member_content,
                member_reason,
                ..
            } => {
                terminate(group);
                terminate(member_content);
                terminate(member_reason);
            }
            ExclusionReason::BudgetExceeded { .. }
            | ExclusionReason::ScoredTooLow { .. }
            | ExclusionReason::NegativeTokens { .. } => {}
        }
    }
    terminate_shortfalls(&mut report.count_requirement_shortfalls);
    for g in &mut report.groups {
        terminate(&mut g.key);
    }
}

/// Makes the kinds of count-requirement shortfalls NUL-terminated.
pub(crate) fn terminate_shortfalls(shortfalls: &mut [CountRequirementShortfall]) {
    for s in shortfalls {
        terminate(&mut s.kind);
    }
}

/// The wire name of an exclusion reason, NUL-terminated: a static string for the known
/// reasons, the (terminated) name as read for an unknown one.
fn reason_name(reason: &ExclusionReason) -> ctxpack_str {
    use ctxpack_exclusion_reason as C;
    let name = match ctxpack_exclusion_reason::from(reason) {
        C::BudgetExceeded => c"BudgetExceeded",
        C::ScoredTooLow => c"ScoredTooLow",
        C::Deduplicated => c"Deduplicated",
        C::QuotaCapExceeded => c"QuotaCapExceeded",
        C::QuotaRequireDisplaced => c"QuotaRequireDisplaced",
        C::NegativeTokens => c"NegativeTokens",
        C::PinnedOverride => c"PinnedOverride",
        C::Filtered => c"Filtered",
        C::CountCapExceeded => c"CountCapExceeded",
        C::CountRequireCandidatesExhausted => c"CountRequireCandidatesExhausted",
        C::GroupExcluded => c"GroupExcluded",
        C::Unknown => return ctxpack_str::borrowed(reason.name()),
    };
    static_str(name)
}

/// Entry `index` of a report list, or `CTXPACK_OUT_OF_RANGE`.
pub(crate) fn entry<'a, T>(list: &'a [T], index: usize, what: &str) -> FfiResult<&'a T> {
    list.get(index).ok_or_else(|| {
        FfiError::new(
            ctxpack_status::CTXPACK_OUT_OF_RANGE,
            format!(
                "{what} index {index} is out of range (count {})",
                list.len()
            ),
        )
    })
}

/// Runs an accessor on a result behind the shim (accessors report no error object).
pub(crate) fn with_result(
    result: *const ctxpack_result,
    body: impl FnOnce(&ResultData) -> FfiResult<()>,
) -> ctxpack_status {
    handles::access(result, "result", body)
}

/// Runs an accessor that fills a caller's versioned struct (it reports an error object).
fn fill_from_result(
    result: *const ctxpack_result,
    out_error: *mut *mut ctxpack_error,
    body: impl FnOnce(&ResultData) -> FfiResult<()>,
) -> ctxpack_status {
    handles::access_into(result, "result", out_error, body)
}

/// Writes an array's pointer and length into two out-parameters.
///
/// # Safety
/// Both are NULL or writable.
pub(crate) unsafe fn write_array<T>(
    values: &[T],
    out_ptr: *mut *const T,
    out_len: *mut usize,
) -> FfiResult<()> {
    if out_ptr.is_null() || out_len.is_null() {
        return Err(FfiError::null(if out_ptr.is_null() {
            "out_ptr"
        } else {
            "out_len"
        }));
    }
    // SAFETY: both checked non-NULL; writable by the caller's contract.
    unsafe {
        out_ptr.write(values.as_ptr());
        out_len.write(values.len());
    }
    Ok(())
}

/// Counts and totals of a selection report. Initialise with `CTXPACK_REPORT_SUMMARY_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_report_summary {
    /// `sizeof(ctxpack_report_summary)`, set by the caller.
    pub struct_size: usize,
    /// Entries of `ctxpack_result_report_included`.
    pub included_count: usize,
    /// Entries of `ctxpack_result_report_excluded`.
    pub excluded_count: usize,
    /// Entries of `ctxpack_result_report_event`.
    pub event_count: usize,
    /// Entries of `ctxpack_result_report_shortfall`.
    pub shortfall_count: usize,
    /// Number of input items.
    pub total_candidates: usize,
    /// Sum of every input item's tokens, negative ones included; when it does not fit in
    /// 64 bits (several items near `INT64_MAX`), the nearest 64-bit value and
    /// `total_tokens_saturated` is set (the report's JSON has the exact number).
    pub total_tokens_considered: i64,
    /// Whether `total_tokens_considered` was saturated.
    pub total_tokens_saturated: bool,
    /// Entries of `ctxpack_result_report_group` (0 when no item has a group key).
    pub group_count: usize,
    /// Entries of `ctxpack_result_report_pruned_form` (0 when no variant was pruned).
    pub pruned_form_count: usize,
}

/// An item in the final window, in placed order. Initialise with
/// `CTXPACK_INCLUDED_ENTRY_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_included_entry {
    /// `sizeof(ctxpack_included_entry)`, set by the caller.
    pub struct_size: usize,
    /// Position in the caller's item list.
    pub index: usize,
    /// Its score (1.0 for pinned items).
    pub score: f64,
    /// A `ctxpack_inclusion_reason` value.
    pub reason: i32,
    /// The form placed: 0 for the item itself, `f >= 1` for its variant `f - 1`
    /// (docs/variants.md). Not 0 exactly when `reason` is DOWNGRADED (a pinned item is
    /// always placed in full).
    pub form: usize,
    /// DOWNGRADED: the item's own tokens (its full form).
    pub full_tokens: i64,
    /// DOWNGRADED: the tokens of the form placed.
    pub chosen_tokens: i64,
    /// DOWNGRADED: the tokens left unused when the form was chosen (one value per stage
    /// and run, as for an exclusion's `available_tokens`).
    pub available_tokens: i64,
    /// DOWNGRADED: a `ctxpack_downgrade_cause` value (NONE for the other reasons).
    pub cause: i32,
}

/// A variant of an item that no selection could need (docs/variants.md): another form
/// of the item has no more tokens and at least its quality. Initialise with
/// `CTXPACK_PRUNED_FORM_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_pruned_form {
    /// `sizeof(ctxpack_pruned_form)`, set by the caller.
    pub struct_size: usize,
    /// Position of the item in the caller's item list.
    pub index: usize,
    /// The pruned form (>= 1: the item itself is never pruned).
    pub form: usize,
    /// The form that makes it unnecessary (the first one reaching its quality).
    pub dominated_by: usize,
}

/// An item left out, with its reason and the reason's fields; fields of other reasons
/// are zero or empty. Initialise with `CTXPACK_EXCLUDED_ENTRY_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_excluded_entry {
    /// `sizeof(ctxpack_excluded_entry)`, set by the caller.
    pub struct_size: usize,
    /// Position in the caller's item list.
    pub index: usize,
    /// Its score when excluded (0.0 for negative-token items).
    pub score: f64,
    /// A `ctxpack_exclusion_reason` value.
    pub reason: i32,
    /// The reason's wire name (`"BudgetExceeded"`, ...; for UNKNOWN the name as read).
    pub name: ctxpack_str,
    /// BUDGET_EXCEEDED: the item's tokens.
    pub item_tokens: i64,
    /// BUDGET_EXCEEDED: tokens left in the budget (one value per stage and run).
    pub available_tokens: i64,
    /// SCORED_TOO_LOW: the score that missed the threshold.
    pub reason_score: f64,
    /// SCORED_TOO_LOW: the threshold.
    pub threshold: f64,
    /// DEDUPLICATED: the content both items share.
    pub deduplicated_against: ctxpack_str,
    /// QUOTA_CAP_EXCEEDED, COUNT_CAP_EXCEEDED, COUNT_REQUIRE_CANDIDATES_EXHAUSTED: the kind.
    pub kind: ctxpack_str,
    /// QUOTA_CAP_EXCEEDED: the cap.
    pub cap: i64,
    /// QUOTA_CAP_EXCEEDED: the actual amount.
    pub actual: i64,
    /// QUOTA_REQUIRE_DISPLACED: the kind that displaced the item.
    pub displaced_by_kind: ctxpack_str,
    /// NEGATIVE_TOKENS: the item's (negative) tokens.
    pub tokens: i64,
    /// PINNED_OVERRIDE: content of the first pinned item.
    pub displaced_by: ctxpack_str,
    /// FILTERED: the filter's name.
    pub filter_name: ctxpack_str,
    /// COUNT_CAP_EXCEEDED: the configured cap.
    pub count_cap: u64,
    /// COUNT_CAP_EXCEEDED: selected items of the kind.
    pub count: u64,
    /// GROUP_EXCLUDED: the key of the item's group.
    pub group: ctxpack_str,
    /// GROUP_EXCLUDED: position (in the caller's item list) of the member whose exclusion
    /// took the group out; that member's own entry carries its reason.
    pub member_index: usize,
    /// GROUP_EXCLUDED: that member's content.
    pub member_content: ctxpack_str,
    /// GROUP_EXCLUDED: that member's reason, as a wire name (`"BudgetExceeded"`, ...).
    pub member_reason: ctxpack_str,
}

/// One group of a traced run's input (docs/groups.md), in order of its first member.
/// Initialise with `CTXPACK_GROUP_ENTRY_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_group_entry {
    /// `sizeof(ctxpack_group_entry)`, set by the caller.
    pub struct_size: usize,
    /// The group key.
    pub key: ctxpack_str,
    /// `member_count` positions of the members in the caller's item list, in input order.
    pub members: *const usize,
    /// Number of members (at least 1).
    pub member_count: usize,
    /// Sum of the members' tokens (saturating; negative members included).
    pub tokens: i64,
    /// The group's value from its members' scores, when `has_value` (not for a pinned
    /// group nor for one excluded at Classify).
    pub value: f64,
    /// EXCLUDED: position of the member whose exclusion took the group out.
    pub member_index: usize,
    /// The first pinned member, when `has_pinned_by` (it pinned the whole group).
    pub pinned_by: usize,
    /// A `ctxpack_group_decision` value.
    pub decision: i32,
    /// EXCLUDED: the `ctxpack_pipeline_stage` that excluded the group.
    pub stage: i32,
    /// Whether `value` is set.
    pub has_value: bool,
    /// Whether `pinned_by` is set.
    pub has_pinned_by: bool,
    /// Whether a slicer returned only some of the members, so that the run dropped the
    /// group.
    pub partial_selection: bool,
}

/// One trace event. Initialise with `CTXPACK_TRACE_EVENT_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_trace_event {
    /// `sizeof(ctxpack_trace_event)`, set by the caller.
    pub struct_size: usize,
    /// A `ctxpack_pipeline_stage` value.
    pub stage: i32,
    /// Wall-clock milliseconds (0.0 for item events).
    pub duration_ms: f64,
    /// Items leaving the stage (1 for item events).
    pub item_count: usize,
    /// Free text, when `has_message`.
    pub message: ctxpack_str,
    /// Whether the event has a message.
    pub has_message: bool,
    /// For item events: the position of the item in the caller's list.
    pub item_index: usize,
    /// Whether this is an item event with an `item_index`.
    pub has_item_index: bool,
}

/// A count requirement a count-quota slicer could not meet. Initialise with
/// `CTXPACK_SHORTFALL_INIT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ctxpack_shortfall {
    /// `sizeof(ctxpack_shortfall)`, set by the caller.
    pub struct_size: usize,
    /// The entry's kind, as configured.
    pub kind: ctxpack_str,
    /// The entry's `require_count`.
    pub required_count: u64,
    /// Candidates found (less than required).
    pub satisfied_count: u64,
}

macro_rules! versioned_output {
    ($($t:ident: $v1:expr),+) => {$(
        // SAFETY: `#[repr(C)]`, `struct_size` first, all-zero valid.
        unsafe impl Versioned for $t {
            const V1_SIZE: usize = $v1;
            const NAME: &'static str = stringify!($t);
        }
    )+};
}
/// `sizeof` the first version of `ctxpack_excluded_entry`, which ended at `count`.
const EXCLUDED_ENTRY_V1_SIZE: usize = std::mem::offset_of!(ctxpack_excluded_entry, group);
/// `sizeof` the first version of `ctxpack_included_entry`, which ended at `reason`.
const INCLUDED_ENTRY_V1_SIZE: usize = std::mem::offset_of!(ctxpack_included_entry, form);
/// Where the variant fields of `ctxpack_included_entry` end (`cause` is the last).
const INCLUDED_ENTRY_VARIANT_END: usize =
    std::mem::offset_of!(ctxpack_included_entry, cause) + std::mem::size_of::<i32>();
/// Where the group fields of `ctxpack_excluded_entry` end (`member_reason` is the last).
const EXCLUDED_ENTRY_GROUP_END: usize = std::mem::offset_of!(ctxpack_excluded_entry, member_reason)
    + std::mem::size_of::<ctxpack_str>();
versioned_output!(
    ctxpack_report_summary: std::mem::offset_of!(ctxpack_report_summary, group_count),
    ctxpack_included_entry: INCLUDED_ENTRY_V1_SIZE,
    ctxpack_excluded_entry: EXCLUDED_ENTRY_V1_SIZE,
    ctxpack_trace_event: std::mem::size_of::<ctxpack_trace_event>(),
    ctxpack_shortfall: std::mem::size_of::<ctxpack_shortfall>(),
    ctxpack_group_entry: std::mem::size_of::<ctxpack_group_entry>(),
    ctxpack_pruned_form: std::mem::size_of::<ctxpack_pruned_form>()
);

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_report_summary) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_report_summary x = CTXPACK_REPORT_SUMMARY_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_report_summary_init(
    out: *mut ctxpack_report_summary,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_included_entry) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_included_entry x = CTXPACK_INCLUDED_ENTRY_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_included_entry_init(
    out: *mut ctxpack_included_entry,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_excluded_entry) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_excluded_entry x = CTXPACK_EXCLUDED_ENTRY_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_excluded_entry_init(
    out: *mut ctxpack_excluded_entry,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_trace_event) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_trace_event x = CTXPACK_TRACE_EVENT_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_trace_event_init(
    out: *mut ctxpack_trace_event,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_shortfall) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_shortfall x = CTXPACK_SHORTFALL_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_shortfall_init(
    out: *mut ctxpack_shortfall,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_pruned_form) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_pruned_form x = CTXPACK_PRUNED_FORM_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_pruned_form_init(
    out: *mut ctxpack_pruned_form,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// Initialises `*out` for a caller whose header has `sizeof(ctxpack_group_entry) == size`: every byte
/// zero and `struct_size = size`. Then pass it to the accessor that fills it. (C and C++ can write
/// `ctxpack_group_entry x = CTXPACK_GROUP_ENTRY_INIT;` instead.) `CTXPACK_INVALID_ARGUMENT` when `size` is below the
/// first version's size, above 4096 or not a multiple of the struct's alignment.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_group_entry_init(
    out: *mut ctxpack_group_entry,
    size: usize,
) -> ctxpack_status {
    // SAFETY: `out` is NULL or valid for `size` bytes (the caller's contract).
    unsafe { versioned::init(out, size) }
}

/// The C view of an included entry, for a caller whose `ctxpack_included_entry` has
/// `struct_size` `size`: a caller whose struct predates the variant fields (it ends at
/// `reason`), or does not hold all of them, reads a downgraded item as SCORED, a value
/// its header knows.
fn included_entry(e: &IncludedItem, size: usize) -> ctxpack_included_entry {
    let mut entry = ctxpack_included_entry {
        struct_size: std::mem::size_of::<ctxpack_included_entry>(),
        index: e.index,
        score: e.score,
        reason: ctxpack_inclusion_reason::from(e.reason) as i32,
        form: 0,
        full_tokens: 0,
        chosen_tokens: 0,
        available_tokens: 0,
        cause: ctxpack_downgrade_cause::None as i32,
    };
    if let InclusionReason::Downgraded {
        form,
        full_tokens,
        chosen_tokens,
        available_tokens,
        cause,
    } = e.reason
    {
        if size < INCLUDED_ENTRY_VARIANT_END {
            entry.reason = ctxpack_inclusion_reason::Scored as i32;
        }
        entry.form = form;
        entry.full_tokens = full_tokens;
        entry.chosen_tokens = chosen_tokens;
        entry.available_tokens = available_tokens;
        entry.cause = ctxpack_downgrade_cause::from(cause) as i32;
    }
    entry
}

fn excluded_entry(index: usize, score: f64, reason: &ExclusionReason) -> ctxpack_excluded_entry {
    let s = ctxpack_str::borrowed;
    let mut e = ctxpack_excluded_entry {
        struct_size: std::mem::size_of::<ctxpack_excluded_entry>(),
        index,
        score,
        reason: ctxpack_exclusion_reason::from(reason) as i32,
        name: reason_name(reason),
        item_tokens: 0,
        available_tokens: 0,
        reason_score: 0.0,
        threshold: 0.0,
        deduplicated_against: ctxpack_str::EMPTY,
        kind: ctxpack_str::EMPTY,
        cap: 0,
        actual: 0,
        displaced_by_kind: ctxpack_str::EMPTY,
        tokens: 0,
        displaced_by: ctxpack_str::EMPTY,
        filter_name: ctxpack_str::EMPTY,
        count_cap: 0,
        count: 0,
        group: ctxpack_str::EMPTY,
        member_index: 0,
        member_content: ctxpack_str::EMPTY,
        member_reason: ctxpack_str::EMPTY,
    };
    match reason {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => (e.item_tokens, e.available_tokens) = (*item_tokens, *available_tokens),
        ExclusionReason::ScoredTooLow { score, threshold } => {
            (e.reason_score, e.threshold) = (*score, *threshold)
        }
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => e.deduplicated_against = s(deduplicated_against),
        ExclusionReason::QuotaCapExceeded { kind, cap, actual } => {
            (e.kind, e.cap, e.actual) = (s(kind), *cap, *actual)
        }
        ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
            e.displaced_by_kind = s(displaced_by_kind)
        }
        ExclusionReason::NegativeTokens { tokens } => e.tokens = *tokens,
        ExclusionReason::PinnedOverride { displaced_by } => e.displaced_by = s(displaced_by),
        ExclusionReason::Filtered { filter_name } => e.filter_name = s(filter_name),
        ExclusionReason::CountCapExceeded { kind, cap, count } => {
            (e.kind, e.count_cap, e.count) = (s(kind), *cap, *count)
        }
        ExclusionReason::CountRequireCandidatesExhausted { kind } => e.kind = s(kind),
        ExclusionReason::GroupExcluded {
            group,
            member_index,
            member_content,
            member_reason,
        } => {
            e.group = s(group);
            e.member_index = *member_index;
            e.member_content = s(member_content);
            e.member_reason = s(member_reason);
        }
        ExclusionReason::Unknown { .. } => {}
    }
    e
}

/// An excluded entry as a caller with a `struct_size` of `size` can read it: a caller
/// whose struct predates the group fields (it ends before `group`), or does not hold all
/// of them, receives a group exclusion as UNKNOWN named "GroupExcluded", the value that
/// version documents for reasons it cannot name.
fn for_caller_size(mut e: ctxpack_excluded_entry, size: usize) -> ctxpack_excluded_entry {
    if size < EXCLUDED_ENTRY_GROUP_END && e.reason == ctxpack_exclusion_reason::GroupExcluded as i32
    {
        e.reason = ctxpack_exclusion_reason::Unknown as i32;
    }
    e
}

/// The C view of a group of the report (strings and arrays borrowed from `g`).
fn group_entry(g: &GroupReport) -> ctxpack_group_entry {
    let (stage, member_index) = match g.decision {
        GroupDecision::Included => (0, 0),
        GroupDecision::Excluded {
            stage,
            member_index,
        } => (ctxpack_pipeline_stage::from(stage) as i32, member_index),
    };
    ctxpack_group_entry {
        struct_size: std::mem::size_of::<ctxpack_group_entry>(),
        key: ctxpack_str::borrowed(&g.key),
        members: g.members.as_ptr(),
        member_count: g.members.len(),
        tokens: g.tokens,
        value: g.value.unwrap_or(0.0),
        member_index,
        pinned_by: g.pinned_by.unwrap_or(0),
        decision: ctxpack_group_decision::from(g.decision) as i32,
        stage,
        has_value: g.value.is_some(),
        has_pinned_by: g.pinned_by.is_some(),
        partial_selection: g.partial_selection,
    }
}

/// The C view of a shortfall (strings borrowed from `s`).
pub(crate) fn shortfall_entry(s: &CountRequirementShortfall) -> ctxpack_shortfall {
    ctxpack_shortfall {
        struct_size: std::mem::size_of::<ctxpack_shortfall>(),
        kind: ctxpack_str::borrowed(&s.kind),
        required_count: s.required_count,
        satisfied_count: s.satisfied_count,
    }
}

/// The selected items as positions in the caller's item list, in placed order.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_indices(
    result: *const ctxpack_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_result(result, |r| unsafe {
        write_array(&r.selection.indices, out_ptr, out_len)
    })
}

/// The score of each selected item, parallel to the indices (1.0 for pinned items).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_scores(
    result: *const ctxpack_result,
    out_ptr: *mut *const f64,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_result(result, |r| unsafe {
        write_array(&r.selection.scores, out_ptr, out_len)
    })
}

/// The inclusion reason of each selected item (`ctxpack_inclusion_reason` values),
/// parallel to the indices. DOWNGRADED (4) appears only for items with variants.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_reasons(
    result: *const ctxpack_result,
    out_ptr: *mut *const i32,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_result(result, |r| unsafe {
        write_array(&r.reasons, out_ptr, out_len)
    })
}

/// The form of each selected item, parallel to the indices: 0 when the item is placed
/// in full, `f >= 1` when it is placed as its variant `f - 1` (the variant's content and
/// tokens are what goes into the window; docs/variants.md). All zero when no item has
/// variants.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_forms(
    result: *const ctxpack_result,
    out_ptr: *mut *const usize,
    out_len: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_result(result, |r| unsafe {
        write_array(&r.forms, out_ptr, out_len)
    })
}

/// The overflow event of a Proceed run that went over `target_tokens`: `*out_present`
/// tells whether there is one; then `*out_tokens_over_budget` is the excess and
/// `out_items`/`out_count` the merged items (pinned first, then sliced) as positions in
/// the caller's list. Without an event: false, 0, an empty array.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_overflow(
    result: *const ctxpack_result,
    out_present: *mut bool,
    out_tokens_over_budget: *mut i64,
    out_items: *mut *const usize,
    out_count: *mut usize,
) -> ctxpack_status {
    // SAFETY: out-parameters are NULL or writable.
    with_result(result, |r| unsafe {
        // Every out-parameter is checked before any is written.
        if out_present.is_null() {
            return Err(FfiError::null("out_present"));
        }
        if out_tokens_over_budget.is_null() {
            return Err(FfiError::null("out_tokens_over_budget"));
        }
        let event = r.selection.overflow.as_ref();
        let items = event.map_or(&[][..], |e| &e.overflowing_items[..]);
        write_array(items, out_items, out_count)?;
        handles::write_out(
            out_tokens_over_budget,
            event.map_or(0, |e| e.tokens_over_budget),
            "out_tokens_over_budget",
        )?;
        handles::write_out(out_present, event.is_some(), "out_present")
    })
}

/// Whether the run was traced, so that the `ctxpack_result_report_*` functions have a
/// report to show (they return `CTXPACK_NO_REPORT` otherwise).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_has_report(
    result: *const ctxpack_result,
    out_has_report: *mut bool,
) -> ctxpack_status {
    // SAFETY: the out-parameter is NULL or writable.
    with_result(result, |r| unsafe {
        handles::write_out(
            out_has_report,
            r.selection.report.is_some(),
            "out_has_report",
        )
    })
}

/// Counts and totals of the report.
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_summary(
    result: *const ctxpack_result,
    out: *mut ctxpack_report_summary,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let report = r.report()?;
        let total = report.total_tokens_considered;
        let saturated = i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX });
        let summary = ctxpack_report_summary {
            struct_size: std::mem::size_of::<ctxpack_report_summary>(),
            included_count: report.included.len(),
            excluded_count: report.excluded.len(),
            event_count: report.events.len(),
            shortfall_count: report.count_requirement_shortfalls.len(),
            total_candidates: report.total_candidates,
            total_tokens_considered: saturated,
            total_tokens_saturated: i128::from(saturated) != report.total_tokens_considered,
            group_count: report.groups.len(),
            pruned_form_count: report.pruned_forms.len(),
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, summary, "out") }
    })
}

/// Included entry `i` (placed order), with the form placed and, for a DOWNGRADED item,
/// the reason's fields.
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_included(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_included_entry,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let e = entry(&r.report()?.included, i, "included")?;
        // SAFETY: `out` is NULL or valid for its `struct_size` (read only when not NULL).
        let size = if out.is_null() {
            0
        } else {
            unsafe { out.cast::<usize>().read_unaligned() }
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, included_entry(e, size), "out") }
    })
}

/// Excluded entry `i` (score descending, ties in recording order), with its reason's
/// fields; strings point into the result.
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_excluded(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_excluded_entry,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let e = entry(&r.report()?.excluded, i, "excluded")?;
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        // SAFETY: `out` is not NULL and starts with its `struct_size`.
        let size = unsafe { out.cast::<usize>().read_unaligned() };
        let value = for_caller_size(excluded_entry(e.index, e.score, &e.reason), size);
        // SAFETY: `out` is valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// Group `i` of the report (order of each group's first member; none when no item has a
/// group key): its key, members, tokens and decision; strings and the member array point
/// into the result. The report's JSON lists the same groups under `"groups"`.
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_group(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_group_entry,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let g = entry(&r.report()?.groups, i, "group")?;
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, group_entry(g), "out") }
    })
}

/// Trace event `i` (recording order).
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_event(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_trace_event,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let e = entry(&r.report()?.events, i, "event")?;
        let value = ctxpack_trace_event {
            struct_size: std::mem::size_of::<ctxpack_trace_event>(),
            stage: ctxpack_pipeline_stage::from(e.stage) as i32,
            duration_ms: e.duration_ms,
            item_count: e.item_count,
            message: e
                .message
                .as_deref()
                .map_or(ctxpack_str::EMPTY, ctxpack_str::borrowed),
            has_message: e.message.is_some(),
            item_index: e.item_index.unwrap_or(0),
            has_item_index: e.item_index.is_some(),
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// Count-requirement shortfall `i` (configuration order).
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_shortfall(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_shortfall,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let e = entry(&r.report()?.count_requirement_shortfalls, i, "shortfall")?;
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, shortfall_entry(e), "out") }
    })
}

/// Pruned form `i` (input order, then form order): a variant no selection could need
/// (docs/variants.md). `ctxpack_report_summary.pruned_form_count` has the count.
/// `out` is the caller's struct (its `struct_size` set, e.g. by its `_INIT` macro); a wrong
/// `struct_size` fails with a message in `out_error` (which may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_pruned_form(
    result: *const ctxpack_result,
    i: usize,
    out: *mut ctxpack_pruned_form,
    out_error: *mut *mut ctxpack_error,
) -> ctxpack_status {
    fill_from_result(result, out_error, |r| {
        let p = entry(&r.report()?.pruned_forms, i, "pruned form")?;
        let value = ctxpack_pruned_form {
            struct_size: std::mem::size_of::<ctxpack_pruned_form>(),
            index: p.index,
            form: p.form,
            dominated_by: p.dominated_by,
        };
        // SAFETY: `out` is NULL or valid for its `struct_size`.
        unsafe { versioned::write(out, value, "out") }
    })
}

/// The report in the JSON wire form of spec 06 §10 (UTF-8, also NUL-terminated), built
/// on first request and owned by the result. It holds every item's content:
/// `CTXPACK_OUT_OF_MEMORY` when it cannot be allocated (a later call tries again).
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_report_json(
    result: *const ctxpack_result,
    out: *mut ctxpack_str,
) -> ctxpack_status {
    with_result(result, |r| {
        let (report, items) = r.traced()?;
        let json = match r.json.get() {
            Some(json) => json,
            None => {
                let text = OwnedCString::try_new(try_report_to_json(report, items)?)?;
                r.json.get_or_init(|| text)
            }
        };
        // SAFETY: `out` is NULL or writable.
        unsafe { handles::write_out(out, json.as_ctxpack_str(), "out") }
    })
}

/// Frees a result. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ctxpack_result_free(result: *mut ctxpack_result) {
    // SAFETY: `result` is NULL or a handle.
    unsafe { handles::release(result) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::TraceDetail;
    use crate::model::{ContextBudget, ContextKind};
    use crate::pipeline::RunOptions;
    use crate::policy::Preset;
    use crate::testutil::Rng;

    #[test]
    fn reason_names_are_the_wire_names_with_a_nul() {
        let reasons = [
            ExclusionReason::BudgetExceeded {
                item_tokens: 1,
                available_tokens: 0,
            },
            ExclusionReason::ScoredTooLow {
                score: 0.0,
                threshold: 1.0,
            },
            ExclusionReason::Deduplicated {
                deduplicated_against: "x".into(),
            },
            ExclusionReason::QuotaCapExceeded {
                kind: "k".into(),
                cap: 1,
                actual: 2,
            },
            ExclusionReason::QuotaRequireDisplaced {
                displaced_by_kind: "k".into(),
            },
            ExclusionReason::NegativeTokens { tokens: -1 },
            ExclusionReason::PinnedOverride {
                displaced_by: "p".into(),
            },
            ExclusionReason::Filtered {
                filter_name: "f".into(),
            },
            ExclusionReason::CountCapExceeded {
                kind: "k".into(),
                cap: 1,
                count: 1,
            },
            ExclusionReason::CountRequireCandidatesExhausted { kind: "k".into() },
            ExclusionReason::GroupExcluded {
                group: "g".into(),
                member_index: 0,
                member_content: "m".into(),
                member_reason: "BudgetExceeded".into(),
            },
        ];
        for reason in &reasons {
            let name = reason_name(reason);
            // SAFETY: a static C string of `len` bytes and its NUL.
            let bytes = unsafe { std::slice::from_raw_parts(name.ptr.cast::<u8>(), name.len + 1) };
            assert_eq!(&bytes[..name.len], reason.name().as_bytes());
            assert_eq!(bytes[name.len], 0);
        }
    }

    /// A group exclusion is reason GROUP_EXCLUDED with its fields, every string of it
    /// NUL-terminated in a result; a caller whose entry predates the group fields reads
    /// UNKNOWN named "GroupExcluded" instead.
    #[test]
    fn a_group_exclusion_has_its_own_value_and_fields() {
        let mut report = SelectionReport {
            excluded: vec![crate::diagnostics::ExcludedItem {
                index: 1,
                score: 0.5,
                reason: ExclusionReason::GroupExcluded {
                    group: "call-1".into(),
                    member_index: 0,
                    member_content: "the call".into(),
                    member_reason: "BudgetExceeded".into(),
                },
            }],
            ..SelectionReport::default()
        };
        terminate_report(&mut report);
        let excluded = &report.excluded[0];
        let ExclusionReason::GroupExcluded {
            group,
            member_content,
            member_reason,
            ..
        } = &excluded.reason
        else {
            unreachable!()
        };
        for s in [group, member_content, member_reason] {
            let c = ctxpack_str::borrowed(s);
            // SAFETY: `terminate` wrote a NUL after the text, inside the allocation.
            assert_eq!(unsafe { *c.ptr.add(c.len) }, 0, "{s:?}");
        }
        let entry = excluded_entry(excluded.index, excluded.score, &excluded.reason);
        assert_eq!(entry.reason, ctxpack_exclusion_reason::GroupExcluded as i32);
        // SAFETY: strings borrowed from the report, alive here.
        unsafe {
            assert_eq!(entry.group.to_str_lossy(), "call-1");
            assert_eq!(entry.member_content.to_str_lossy(), "the call");
            assert_eq!(entry.member_reason.to_str_lossy(), "BudgetExceeded");
        }
        assert_eq!(entry.member_index, 0);
        let current = for_caller_size(entry, std::mem::size_of::<ctxpack_excluded_entry>());
        assert_eq!(
            current.reason,
            ctxpack_exclusion_reason::GroupExcluded as i32
        );
        let old = for_caller_size(entry, EXCLUDED_ENTRY_V1_SIZE);
        assert_eq!(old.reason, ctxpack_exclusion_reason::Unknown as i32);
        // A struct_size between the two versions holds only some group fields.
        let partial = for_caller_size(entry, EXCLUDED_ENTRY_V1_SIZE + 8);
        assert_eq!(partial.reason, ctxpack_exclusion_reason::Unknown as i32);
        // SAFETY: a static C string of `len` bytes and its NUL.
        let name =
            unsafe { std::slice::from_raw_parts(old.name.ptr.cast::<u8>(), old.name.len + 1) };
        assert_eq!(name, b"GroupExcluded\0");
    }

    /// A downgraded item reads back through the C views with the form placed and the
    /// reason's fields; a caller whose entry predates them reads SCORED. The forms array is
    /// parallel to the indices, zeros for items in full.
    #[test]
    fn a_downgraded_item_reads_back_with_its_form_and_fields() {
        use crate::placer::ChronologicalPlacer;
        use crate::scorer::ReflexiveScorer;
        use crate::slicer::GreedySlice;
        // Greedy takes the 10-token item first (density 0.05 against 0.009), leaving 40:
        // the 100-token item does not fit and its 20-token summary does.
        let items = vec![
            ContextItem::builder("long tool output", 100)
                .future_relevance_hint(0.9)
                .variant("its summary", 20, 0.5)
                .build()
                .unwrap(),
            ContextItem::builder("question", 10)
                .future_relevance_hint(0.5)
                .build()
                .unwrap(),
        ];
        let pipeline = Pipeline::builder()
            .scorer(Arc::new(ReflexiveScorer::new()))
            .slicer(Arc::new(GreedySlice::new()))
            .placer(Arc::new(ChronologicalPlacer::new()))
            .build()
            .unwrap();
        let budget = ContextBudget::new(50, 50).unwrap();
        let options = RunOptions {
            trace: TraceDetail::Stage,
            on_overflow: None,
        };
        let selection = pipeline.run_with(&items, &budget, &options).unwrap();
        let context = RunContext::of(&pipeline, &budget);
        let data = ResultData::new(selection, Some(Arc::new(ItemVec::from(items))), context);
        assert_eq!(data.selection.indices, [0, 1]);
        assert_eq!(data.forms, [1, 0]);
        assert_eq!(
            data.reasons,
            [
                ctxpack_inclusion_reason::Downgraded as i32,
                ctxpack_inclusion_reason::Scored as i32
            ]
        );
        let report = data.selection.report.as_ref().unwrap();
        let full = included_entry(
            &report.included[0],
            std::mem::size_of::<ctxpack_included_entry>(),
        );
        assert_eq!(full.reason, ctxpack_inclusion_reason::Downgraded as i32);
        assert_eq!(
            (full.form, full.full_tokens, full.chosen_tokens),
            (1, 100, 20)
        );
        // 50 - (20 + 10) left; the full form needs 80 more than the summary: over budget.
        assert_eq!(full.available_tokens, 20);
        assert_eq!(full.cause, ctxpack_downgrade_cause::BudgetExceeded as i32);
        let old = included_entry(&report.included[0], INCLUDED_ENTRY_V1_SIZE);
        assert_eq!(old.reason, ctxpack_inclusion_reason::Scored as i32);
        // A struct_size between the two versions holds only some variant fields.
        let partial = included_entry(&report.included[0], INCLUDED_ENTRY_V1_SIZE + 8);
        assert_eq!(partial.reason, ctxpack_inclusion_reason::Scored as i32);
        let plain = included_entry(
            &report.included[1],
            std::mem::size_of::<ctxpack_included_entry>(),
        );
        assert_eq!(plain.reason, ctxpack_inclusion_reason::Scored as i32);
        assert_eq!((plain.form, plain.cause), (0, 0));
        // Without variants in the run, the forms are zeros all the same.
        let items = vec![ContextItem::new("only", 5).unwrap()];
        let selection = pipeline.run(&items, &budget).unwrap();
        let data = ResultData::new(selection, None, RunContext::of(&pipeline, &budget));
        assert_eq!(data.forms, [0]);
    }

    /// A dry run's (or a sensitivity variant's) result is built from the report alone; it
    /// must equal the selection of the same run traced at Item detail, overflow included.
    #[test]
    fn a_result_from_a_report_is_the_traced_runs_selection() {
        let mut rng = Rng::new(0x4ffe_0004);
        let kinds = ["Message", "Document", "ToolOutput", "SystemPrompt"];
        let mut overflows = 0;
        for case in 0..200 {
            let items: Vec<ContextItem> = (0..rng.range(0, 12))
                .map(|i| {
                    ContextItem::builder(format!("item {}", rng.below(8)), rng.range(-2, 40))
                        .kind(ContextKind::new(*rng.pick(&kinds)).unwrap())
                        .priority(rng.range(0, 5))
                        .timestamp(rng.range(0, 1_000_000) * 1_000_000_000)
                        .pinned(i % 7 == 3 && rng.chance(0.5))
                        .build()
                        .unwrap()
                })
                .collect();
            let mut policy = rng.pick(&Preset::ALL).policy();
            policy.overflow_strategy = *rng.pick(&[
                crate::OverflowStrategy::Proceed,
                crate::OverflowStrategy::Truncate,
            ]);
            let pipeline = policy.build_pipeline().unwrap();
            let max = rng.range(40, 200);
            let budget = ContextBudget::new(max, rng.range(0, max)).unwrap();
            let options = RunOptions {
                trace: TraceDetail::Item,
                on_overflow: None,
            };
            let Ok(traced) = pipeline.run_with(&items, &budget, &options) else {
                continue;
            };
            overflows += usize::from(traced.overflow.is_some());
            let report = traced.report.clone().unwrap();
            let context = RunContext::of(&pipeline, &budget);
            let data = ResultData::from_report(report, Arc::new(ItemVec::from(items)), context);
            assert_eq!(data.selection, traced, "case {case}");
        }
        assert!(overflows > 0, "no case went over target");
    }
}
