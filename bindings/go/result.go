package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// Result is the outcome of a run, copied out of the library's result object (which is
// freed before Run returns).
type Result struct {
	// Indices are the selected items as positions in the input, in placed order.
	Indices []int
	// Scores are parallel to Indices (1.0 for pinned items).
	Scores []float64
	// Reasons are parallel to Indices.
	Reasons []InclusionReason
	// Forms are parallel to Indices: 0 when the item is placed in full, f >= 1 when it is
	// placed as its Variants[f-1] (whose content and tokens go into the window).
	Forms []int
	// Overflow is the overflow event of an OverflowProceed run over target, else nil.
	Overflow *Overflow
	// Report is the selection report of a traced run, else nil.
	Report *Report
}

// Overflow is the overflow event of an OverflowProceed run.
type Overflow struct {
	TokensOverBudget int64
	// Items are the merged items (pinned first, then sliced) as positions in the input.
	Items []int
}

// InclusionReason is why an item is in the final window.
type InclusionReason int32

const (
	InclusionScored    InclusionReason = C.CTXPACK_INCLUSION_REASON_SCORED
	InclusionPinned    InclusionReason = C.CTXPACK_INCLUSION_REASON_PINNED
	InclusionZeroToken InclusionReason = C.CTXPACK_INCLUSION_REASON_ZERO_TOKEN
)

// String returns the wire name ("Scored", "Pinned", "ZeroToken", "Downgraded").
func (r InclusionReason) String() string {
	switch r {
	case InclusionDowngraded:
		return "Downgraded"
	case InclusionScored:
		return "Scored"
	case InclusionPinned:
		return "Pinned"
	case InclusionZeroToken:
		return "ZeroToken"
	}
	return "InclusionReason(" + strconv.Itoa(int(r)) + ")"
}

// ExclusionReason is why an item is not in the final window (spec 06 §7); the wire name
// is in ExcludedEntry.Name.
type ExclusionReason int32

const (
	ExclusionUnknown                         ExclusionReason = C.CTXPACK_EXCLUSION_REASON_UNKNOWN
	ExclusionBudgetExceeded                  ExclusionReason = C.CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED
	ExclusionScoredTooLow                    ExclusionReason = C.CTXPACK_EXCLUSION_REASON_SCORED_TOO_LOW
	ExclusionDeduplicated                    ExclusionReason = C.CTXPACK_EXCLUSION_REASON_DEDUPLICATED
	ExclusionQuotaCapExceeded                ExclusionReason = C.CTXPACK_EXCLUSION_REASON_QUOTA_CAP_EXCEEDED
	ExclusionQuotaRequireDisplaced           ExclusionReason = C.CTXPACK_EXCLUSION_REASON_QUOTA_REQUIRE_DISPLACED
	ExclusionNegativeTokens                  ExclusionReason = C.CTXPACK_EXCLUSION_REASON_NEGATIVE_TOKENS
	ExclusionPinnedOverride                  ExclusionReason = C.CTXPACK_EXCLUSION_REASON_PINNED_OVERRIDE
	ExclusionFiltered                        ExclusionReason = C.CTXPACK_EXCLUSION_REASON_FILTERED
	ExclusionCountCapExceeded                ExclusionReason = C.CTXPACK_EXCLUSION_REASON_COUNT_CAP_EXCEEDED
	ExclusionCountRequireCandidatesExhausted ExclusionReason = C.CTXPACK_EXCLUSION_REASON_COUNT_REQUIRE_CANDIDATES_EXHAUSTED
	// ExclusionGroupExcluded: the item's group was left out because another member was
	// (docs/groups.md); see ExcludedEntry.Group and the Member fields.
	ExclusionGroupExcluded ExclusionReason = C.CTXPACK_EXCLUSION_REASON_GROUP_EXCLUDED
)

// GroupDecision is whether a group of the report is in the window.
type GroupDecision int32

const (
	// GroupIncluded: every member is placed.
	GroupIncluded GroupDecision = C.CTXPACK_GROUP_DECISION_INCLUDED
	// GroupExcluded: no member is placed.
	GroupExcluded GroupDecision = C.CTXPACK_GROUP_DECISION_EXCLUDED
)

// String returns the wire name ("Included", "Excluded").
func (d GroupDecision) String() string {
	switch d {
	case GroupIncluded:
		return "Included"
	case GroupExcluded:
		return "Excluded"
	}
	return "GroupDecision(" + strconv.Itoa(int(d)) + ")"
}

// GroupEntry is one group of a traced run's input (docs/groups.md), in order of its
// first member.
type GroupEntry struct {
	// Key is the group key.
	Key string
	// Members are the members' positions in the input, in input order.
	Members []int
	// Tokens is the sum of the members' tokens.
	Tokens int64
	// Value is the group's value from its members' scores; nil for a pinned group and
	// for one excluded at Classify.
	Value *float64
	// Decision tells whether the group is in the window.
	Decision GroupDecision
	// Stage is the stage that excluded the group (meaningful when GroupExcluded).
	Stage PipelineStage
	// MemberIndex is the position of the member whose exclusion took the group out
	// (meaningful when GroupExcluded).
	MemberIndex int
	// PinnedBy is the first pinned member, when it pinned the whole group.
	PinnedBy *int
	// PartialSelection is set when a slicer returned only some of the members.
	PartialSelection bool
}

// PipelineStage is a traced pipeline stage.
type PipelineStage int32

const (
	StageClassify    PipelineStage = C.CTXPACK_PIPELINE_STAGE_CLASSIFY
	StageScore       PipelineStage = C.CTXPACK_PIPELINE_STAGE_SCORE
	StageDeduplicate PipelineStage = C.CTXPACK_PIPELINE_STAGE_DEDUPLICATE
	StageSlice       PipelineStage = C.CTXPACK_PIPELINE_STAGE_SLICE
	StagePlace       PipelineStage = C.CTXPACK_PIPELINE_STAGE_PLACE
)

// String returns the stage's name ("Classify", ...).
func (s PipelineStage) String() string {
	names := [...]string{"Classify", "Score", "Deduplicate", "Slice", "Place"}
	if s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return "PipelineStage(" + strconv.Itoa(int(s)) + ")"
}

// Report is the selection report of a traced run.
type Report struct {
	// TotalCandidates is the number of input items.
	TotalCandidates int
	// TotalTokensConsidered is the sum of every input item's tokens, negative included;
	// the nearest int64 when the exact sum does not fit (then TotalTokensSaturated is
	// set; JSON has the exact number).
	TotalTokensConsidered int64
	// TotalTokensSaturated tells whether TotalTokensConsidered was saturated.
	TotalTokensSaturated bool
	// Included are the items in the final window, in placed order.
	Included []IncludedEntry
	// Excluded are the items left out, score descending (ties in recording order).
	Excluded []ExcludedEntry
	// Events are the trace events, in recording order.
	Events []TraceEvent
	// Shortfalls are the count requirements a count-quota slicer could not meet.
	Shortfalls []Shortfall
	// Groups are the item groups of the input (none when no item has a Group).
	Groups []GroupEntry
	// PrunedForms are the variants no selection could need, input order then form order.
	PrunedForms []PrunedForm
	// JSON is the report in the wire form of spec 06 §10.
	JSON string
	// Analytics are the report helpers of spec 07 §7 for this run.
	Analytics Analytics
}

// IncludedEntry is an item in the final window.
type IncludedEntry struct {
	Index  int
	Score  float64
	Reason InclusionReason
	// Form is the form placed (0 = in full; f >= 1 = Variants[f-1]).
	Form int
	// FullTokens, ChosenTokens, AvailableTokens and Cause are set for
	// InclusionDowngraded: the item's own tokens, the placed form's, the tokens left
	// unused when the form was chosen, and why.
	FullTokens, ChosenTokens, AvailableTokens int64
	Cause                                     DowngradeCause
}

// ExcludedEntry is an item left out, with its reason and the reason's fields; fields
// of other reasons are zero.
type ExcludedEntry struct {
	Index  int
	Score  float64 // 0 for negative-token items
	Reason ExclusionReason
	Name   string // wire name of the reason ("BudgetExceeded", ...)

	ItemTokens, AvailableTokens int64   // BudgetExceeded
	ReasonScore, Threshold      float64 // ScoredTooLow
	DeduplicatedAgainst         string  // Deduplicated
	Kind                        string  // QuotaCapExceeded, CountCapExceeded, CountRequireCandidatesExhausted
	Cap, Actual                 int64   // QuotaCapExceeded
	DisplacedByKind             string  // QuotaRequireDisplaced
	Tokens                      int64   // NegativeTokens
	DisplacedBy                 string  // PinnedOverride: content of the first pinned item
	FilterName                  string  // Filtered
	CountCap, Count             uint64  // CountCapExceeded
	Group                       string  // GroupExcluded: the group key
	MemberIndex                 int     // GroupExcluded: the member whose exclusion took the group out
	MemberContent               string  // GroupExcluded: that member's content
	MemberReason                string  // GroupExcluded: that member's reason (wire name)
}

// TraceEvent is a stage event, or (with TraceItem) an item event that has an ItemIndex.
type TraceEvent struct {
	Stage      PipelineStage
	DurationMS float64 // 0 for item events
	ItemCount  int
	Message    *string
	ItemIndex  *int
}

// Shortfall is a count requirement a count-quota slicer could not meet.
type Shortfall struct {
	Kind           string
	RequiredCount  uint64
	SatisfiedCount uint64
}

func shortfallFrom(s *C.ctxpack_shortfall) Shortfall {
	return Shortfall{Kind: goString(s.kind), RequiredCount: uint64(s.required_count), SatisfiedCount: uint64(s.satisfied_count)}
}

// readResult copies a result, with the report's analytics when it is traced (the result
// keeps what the report helpers need of its run).
func readResult(res *C.ctxpack_result) (Result, error) {
	out, err := readSelection(res)
	if err != nil {
		return Result{}, err
	}
	var has C.bool
	if err := check(C.ctxpack_result_has_report(res, &has)); err != nil {
		return Result{}, err
	}
	if has {
		report, err := readReport(res)
		if err != nil {
			return Result{}, err
		}
		if report.Analytics, err = readAnalytics(res); err != nil {
			return Result{}, err
		}
		out.Report = report
	}
	return out, nil
}

// readSelection copies the selected items and the overflow event, not the report.
func readSelection(res *C.ctxpack_result) (Result, error) {
	var out Result
	var idx *C.size_t
	var scores *C.double
	var reasons *C.int32_t
	var n, ns, nr C.size_t
	if err := check(C.ctxpack_result_indices(res, &idx, &n)); err != nil {
		return Result{}, err
	}
	if err := check(C.ctxpack_result_scores(res, &scores, &ns)); err != nil {
		return Result{}, err
	}
	if err := check(C.ctxpack_result_reasons(res, &reasons, &nr)); err != nil {
		return Result{}, err
	}
	out.Indices = goInts(idx, n)
	forms, err := readForms(res)
	if err != nil {
		return Result{}, err
	}
	out.Forms = forms
	out.Scores = goFloats(scores, ns)
	out.Reasons = make([]InclusionReason, int(nr))
	if nr > 0 {
		for i, r := range unsafe.Slice(reasons, int(nr)) {
			out.Reasons[i] = InclusionReason(r)
		}
	}

	var present C.bool
	var over C.int64_t
	var items *C.size_t
	var ni C.size_t
	if err := check(C.ctxpack_result_overflow(res, &present, &over, &items, &ni)); err != nil {
		return Result{}, err
	}
	if present {
		out.Overflow = &Overflow{TokensOverBudget: int64(over), Items: goInts(items, ni)}
	}
	return out, nil
}

// readReport copies the whole report. Each entry struct starts with struct_size, set by
// its _init function to this package's sizeof so the library writes exactly the fields it
// knows about; a wrong size would come back with a message.
func readReport(res *C.ctxpack_result) (*Report, error) {
	sum, err := readSummary(res)
	if err != nil {
		return nil, err
	}
	r := &Report{
		TotalCandidates:       sum.TotalCandidates,
		TotalTokensConsidered: sum.TotalTokensConsidered,
		TotalTokensSaturated:  sum.TotalTokensSaturated,
	}
	if r.Included, err = readIncluded(res, sum.IncludedCount); err != nil {
		return nil, err
	}
	if r.Excluded, err = readExcluded(res, sum.ExcludedCount); err != nil {
		return nil, err
	}
	if r.Events, err = readEvents(res, sum.EventCount); err != nil {
		return nil, err
	}
	if r.Shortfalls, err = readShortfalls(res, sum.ShortfallCount); err != nil {
		return nil, err
	}
	if r.Groups, err = readGroups(res, sum.GroupCount); err != nil {
		return nil, err
	}
	if r.PrunedForms, err = readPrunedForms(res, C.size_t(sum.PrunedFormCount)); err != nil {
		return nil, err
	}
	if r.JSON, err = readReportJSON(res); err != nil {
		return nil, err
	}
	return r, nil
}

// ReportSummary is the report's totals and the number of entries of each part.
type ReportSummary struct {
	TotalCandidates       int
	TotalTokensConsidered int64
	TotalTokensSaturated  bool
	IncludedCount         int
	ExcludedCount         int
	EventCount            int
	ShortfallCount        int
	GroupCount            int
	PrunedFormCount       int
}

func readSummary(res *C.ctxpack_result) (ReportSummary, error) {
	var cerr *C.ctxpack_error
	var sum C.ctxpack_report_summary
	C.ctxpack_report_summary_init(&sum, C.size_t(unsafe.Sizeof(sum)))
	if err := takeError(C.ctxpack_result_report_summary(res, &sum, &cerr), cerr); err != nil {
		return ReportSummary{}, err
	}
	return ReportSummary{
		TotalCandidates:       int(sum.total_candidates),
		TotalTokensConsidered: int64(sum.total_tokens_considered),
		TotalTokensSaturated:  bool(sum.total_tokens_saturated),
		IncludedCount:         int(sum.included_count),
		ExcludedCount:         int(sum.excluded_count),
		EventCount:            int(sum.event_count),
		ShortfallCount:        int(sum.shortfall_count),
		GroupCount:            int(sum.group_count),
		PrunedFormCount:       int(sum.pruned_form_count),
	}, nil
}

func readIncluded(res *C.ctxpack_result, n int) ([]IncludedEntry, error) {
	var cerr *C.ctxpack_error
	var out []IncludedEntry
	for i := 0; i < n; i++ {
		var e C.ctxpack_included_entry
		C.ctxpack_included_entry_init(&e, C.size_t(unsafe.Sizeof(e)))
		if err := takeError(C.ctxpack_result_report_included(res, C.size_t(i), &e, &cerr), cerr); err != nil {
			return nil, err
		}
		out = append(out, IncludedEntry{
			Index: int(e.index), Score: float64(e.score), Reason: InclusionReason(e.reason), Form: int(e.form),
			FullTokens: int64(e.full_tokens), ChosenTokens: int64(e.chosen_tokens),
			AvailableTokens: int64(e.available_tokens), Cause: DowngradeCause(e.cause),
		})
	}
	return out, nil
}

func readExcluded(res *C.ctxpack_result, n int) ([]ExcludedEntry, error) {
	var cerr *C.ctxpack_error
	var out []ExcludedEntry
	for i := 0; i < n; i++ {
		var e C.ctxpack_excluded_entry
		C.ctxpack_excluded_entry_init(&e, C.size_t(unsafe.Sizeof(e)))
		if err := takeError(C.ctxpack_result_report_excluded(res, C.size_t(i), &e, &cerr), cerr); err != nil {
			return nil, err
		}
		out = append(out, ExcludedEntry{
			Index: int(e.index), Score: float64(e.score), Reason: ExclusionReason(e.reason), Name: goString(e.name),
			ItemTokens: int64(e.item_tokens), AvailableTokens: int64(e.available_tokens),
			ReasonScore: float64(e.reason_score), Threshold: float64(e.threshold),
			DeduplicatedAgainst: goString(e.deduplicated_against), Kind: goString(e.kind),
			Cap: int64(e.cap), Actual: int64(e.actual), DisplacedByKind: goString(e.displaced_by_kind),
			Tokens: int64(e.tokens), DisplacedBy: goString(e.displaced_by), FilterName: goString(e.filter_name),
			CountCap: uint64(e.count_cap), Count: uint64(e.count),
			Group: goString(e.group), MemberIndex: int(e.member_index),
			MemberContent: goString(e.member_content), MemberReason: goString(e.member_reason),
		})
	}
	return out, nil
}

func readEvents(res *C.ctxpack_result, n int) ([]TraceEvent, error) {
	var cerr *C.ctxpack_error
	var out []TraceEvent
	for i := 0; i < n; i++ {
		var e C.ctxpack_trace_event
		C.ctxpack_trace_event_init(&e, C.size_t(unsafe.Sizeof(e)))
		if err := takeError(C.ctxpack_result_report_event(res, C.size_t(i), &e, &cerr), cerr); err != nil {
			return nil, err
		}
		ev := TraceEvent{Stage: PipelineStage(e.stage), DurationMS: float64(e.duration_ms), ItemCount: int(e.item_count)}
		if e.has_message {
			msg := goString(e.message)
			ev.Message = &msg
		}
		if e.has_item_index {
			idx := int(e.item_index)
			ev.ItemIndex = &idx
		}
		out = append(out, ev)
	}
	return out, nil
}

func readShortfalls(res *C.ctxpack_result, n int) ([]Shortfall, error) {
	var cerr *C.ctxpack_error
	var out []Shortfall
	for i := 0; i < n; i++ {
		var s C.ctxpack_shortfall
		C.ctxpack_shortfall_init(&s, C.size_t(unsafe.Sizeof(s)))
		if err := takeError(C.ctxpack_result_report_shortfall(res, C.size_t(i), &s, &cerr), cerr); err != nil {
			return nil, err
		}
		out = append(out, shortfallFrom(&s))
	}
	return out, nil
}

func readGroups(res *C.ctxpack_result, n int) ([]GroupEntry, error) {
	var cerr *C.ctxpack_error
	var out []GroupEntry
	for i := 0; i < n; i++ {
		var g C.ctxpack_group_entry
		C.ctxpack_group_entry_init(&g, C.size_t(unsafe.Sizeof(g)))
		if err := takeError(C.ctxpack_result_report_group(res, C.size_t(i), &g, &cerr), cerr); err != nil {
			return nil, err
		}
		entry := GroupEntry{
			Key: goString(g.key), Members: goInts(g.members, g.member_count), Tokens: int64(g.tokens),
			Decision: GroupDecision(g.decision), Stage: PipelineStage(g.stage),
			MemberIndex: int(g.member_index), PartialSelection: bool(g.partial_selection),
		}
		if g.has_value {
			entry.Value = Float64(float64(g.value))
		}
		if g.has_pinned_by {
			p := int(g.pinned_by)
			entry.PinnedBy = &p
		}
		out = append(out, entry)
	}
	return out, nil
}

func readReportJSON(res *C.ctxpack_result) (string, error) {
	var js C.ctxpack_str
	if err := check(C.ctxpack_result_report_json(res, &js)); err != nil {
		return "", err
	}
	return goString(js), nil
}
