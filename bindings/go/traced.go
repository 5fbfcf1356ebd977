package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// TracedResult is the outcome of a traced run that keeps the library's result object
// and reads the report only when asked: the selection (Indices, Scores, Reasons,
// Overflow) is copied at once, as for an untraced run, while each report part is read
// by its own method, on the first call, and kept. Close frees the result (a finalizer does it otherwise); a method of a
// closed TracedResult that still has to read returns StatusNullArgument. Safe for
// concurrent use, Close included.
type TracedResult struct {
	// Indices are the selected items as positions in the input, in placed order.
	Indices []int
	// Scores are parallel to Indices (1.0 for pinned items).
	Scores []float64
	// Reasons are parallel to Indices.
	Reasons []InclusionReason
	// Overflow is the overflow event of an OverflowProceed run over target, else nil.
	Overflow *Overflow

	h *handle

	mu        sync.Mutex
	summary   *ReportSummary
	included  []IncludedEntry
	excluded  []ExcludedEntry
	events    []TraceEvent
	groups    []GroupEntry
	json      *string
	analytics *Analytics
	read      uint8 // bits: included, excluded, events read
}

const (
	readIncludedBit = 1 << iota
	readExcludedBit
	readEventsBit
	readGroupsBit
)

// RunListTraced runs the pipeline over an item list at the given detail (TraceNone is
// taken as TraceStage) and returns a TracedResult. Safe for concurrent use.
func (p *Pipeline) RunListTraced(list *ItemList, budget *Budget, detail TraceDetail) (*TracedResult, error) {
	return p.runTraced(list, budget, detail, nil)
}

func (p *Pipeline) runTraced(list *ItemList, budget *Budget, detail TraceDetail, token *C.ctxpack_cancel_token) (*TracedResult, error) {
	if detail == TraceNone {
		detail = TraceStage
	}
	res, err := p.runRaw(list, budget, &RunOptions{Trace: detail}, token)
	if err != nil {
		return nil, err
	}
	sel, err := readSelection(res)
	if err != nil {
		C.ctxpack_result_free(res)
		return nil, err
	}
	return &TracedResult{
		Indices:  sel.Indices,
		Scores:   sel.Scores,
		Reasons:  sel.Reasons,
		Overflow: sel.Overflow,
		h:        newHandle(unsafe.Pointer(res), func(p unsafe.Pointer) { C.ctxpack_result_free((*C.ctxpack_result)(p)) }),
	}, nil
}

func (r *TracedResult) ptr() *C.ctxpack_result {
	if r == nil {
		return nil
	}
	return (*C.ctxpack_result)(r.h.pointer())
}

// Close frees the library's result. Parts already read stay available; closing twice
// is a no-op.
func (r *TracedResult) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.close()
}

// Summary returns the report's totals and part sizes.
func (r *TracedResult) Summary() (ReportSummary, error) {
	defer runtime.KeepAlive(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.summaryLocked()
}

func (r *TracedResult) summaryLocked() (ReportSummary, error) {
	defer runtime.KeepAlive(r)
	if r.summary == nil {
		s, err := readSummary(r.ptr())
		if err != nil {
			return ReportSummary{}, err
		}
		r.summary = &s
	}
	return *r.summary, nil
}

// part reads one list of the report once (under the lock) with read(result, count).
func (r *TracedResult) part(bit uint8, count func(ReportSummary) int, read func(*C.ctxpack_result, int) error) error {
	defer runtime.KeepAlive(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read&bit != 0 {
		return nil
	}
	sum, err := r.summaryLocked()
	if err != nil {
		return err
	}
	if err := read(r.ptr(), count(sum)); err != nil {
		return err
	}
	r.read |= bit
	return nil
}

// Included returns the items in the final window, in placed order.
func (r *TracedResult) Included() ([]IncludedEntry, error) {
	err := r.part(readIncludedBit, func(s ReportSummary) int { return s.IncludedCount },
		func(res *C.ctxpack_result, n int) (err error) { r.included, err = readIncluded(res, n); return })
	return r.included, err
}

// Excluded returns the items left out, score descending.
func (r *TracedResult) Excluded() ([]ExcludedEntry, error) {
	err := r.part(readExcludedBit, func(s ReportSummary) int { return s.ExcludedCount },
		func(res *C.ctxpack_result, n int) (err error) { r.excluded, err = readExcluded(res, n); return })
	return r.excluded, err
}

// Events returns the trace events, in recording order.
func (r *TracedResult) Events() ([]TraceEvent, error) {
	err := r.part(readEventsBit, func(s ReportSummary) int { return s.EventCount },
		func(res *C.ctxpack_result, n int) (err error) { r.events, err = readEvents(res, n); return })
	return r.events, err
}

// Groups returns the item groups of the input (none when no item has a Group).
func (r *TracedResult) Groups() ([]GroupEntry, error) {
	err := r.part(readGroupsBit, func(s ReportSummary) int { return s.GroupCount },
		func(res *C.ctxpack_result, n int) (err error) { r.groups, err = readGroups(res, n); return })
	return r.groups, err
}

// JSON returns the report in the wire form of spec 06 §10 (built by the library on the
// first call).
func (r *TracedResult) JSON() (string, error) {
	defer runtime.KeepAlive(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.json == nil {
		s, err := readReportJSON(r.ptr())
		if err != nil {
			return "", err
		}
		r.json = &s
	}
	return *r.json, nil
}

// Analytics returns the report helpers of spec 07 §7 for this run.
func (r *TracedResult) Analytics() (Analytics, error) {
	defer runtime.KeepAlive(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.analytics == nil {
		a, err := readAnalytics(r.ptr())
		if err != nil {
			return Analytics{}, err
		}
		r.analytics = &a
	}
	return *r.analytics, nil
}

// Report reads every part (what RunList builds for a traced run).
func (r *TracedResult) Report() (*Report, error) {
	defer runtime.KeepAlive(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	rep, err := readReport(r.ptr())
	if err != nil {
		return nil, err
	}
	if rep.Analytics, err = readAnalytics(r.ptr()); err != nil {
		return nil, err
	}
	return rep, nil
}
