package ctxpack

/*
#include "ctxpack.h"
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Slicer selects what fits into the budget. Slicers are immutable and reference-counted
// like scorers.
type Slicer struct{ h *handle }

// Close releases this reference to the slicer.
func (s *Slicer) Close() error { return s.h.close() }

func (s *Slicer) ptr() *C.ctxpack_slicer {
	if s == nil {
		return nil
	}
	return (*C.ctxpack_slicer)(s.h.pointer())
}

func newSlicer(construct func(**C.ctxpack_slicer, **C.ctxpack_error) C.ctxpack_status) (*Slicer, error) {
	var ptr *C.ctxpack_slicer
	var cerr *C.ctxpack_error
	if err := takeError(construct(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Slicer{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_slicer_free((*C.ctxpack_slicer)(p))
	})}, nil
}

// Scarcity is what a count-quota slicer does when a required kind has too few items.
type Scarcity int32

const (
	// ScarcityDegrade selects what exists and reports a shortfall.
	ScarcityDegrade Scarcity = C.CTXPACK_SCARCITY_DEGRADE
	// ScarcityThrow fails the run with StatusCountRequirementUnmet.
	ScarcityThrow Scarcity = C.CTXPACK_SCARCITY_THROW
)

// DefaultKnapsackBucketSize is the conventional bucket size of the knapsack slicers.
const DefaultKnapsackBucketSize = C.CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE

// QuotaEntry is a percentage quota for one kind (QuotaSlice).
type QuotaEntry struct {
	Kind string
	// Require is the required share of the target, in percent [0, 100].
	Require float64
	// Cap is the maximum share of the target, in percent [Require, 100].
	Cap float64
}

// CountQuotaEntry is a count quota for one kind (count-quota slicers).
type CountQuotaEntry struct {
	Kind string
	// RequireCount items of the kind are committed first.
	RequireCount uint64
	// CapCount is the maximum number of items of the kind (>= RequireCount).
	CapCount uint64
}

func countEntries(a *arena, entries []CountQuotaEntry) []C.ctxpack_count_quota_entry {
	es := cArray[C.ctxpack_count_quota_entry](a, len(entries))
	for i, e := range entries {
		es[i] = C.ctxpack_count_quota_entry{kind: a.str(e.Kind), require_count: C.size_t(e.RequireCount), cap_count: C.size_t(e.CapCount)}
	}
	return es
}

// NewGreedySlicer fills the budget by value density (GreedySlice).
func NewGreedySlicer() (*Slicer, error) {
	return newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_slicer_new_greedy(o, e)
	})
}

// NewKnapsackSlicer selects optimally over a capacity discretised by bucketSize (> 0;
// conventionally DefaultKnapsackBucketSize) (KnapsackSlice). A run whose keep table would
// exceed tableLimitBytes (0 means the default, 256 MiB) fails with StatusTableTooLarge.
func NewKnapsackSlicer(bucketSize int64, tableLimitBytes uint64) (*Slicer, error) {
	return newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_slicer_new_knapsack(C.int64_t(bucketSize), C.uint64_t(tableLimitBytes), o, e)
	})
}

// NewQuotaSlicer applies per-kind percentage budgets around inner (QuotaSlice), which it
// keeps a reference to.
func NewQuotaSlicer(inner *Slicer, entries ...QuotaEntry) (*Slicer, error) {
	defer runtime.KeepAlive(inner)
	var a arena
	defer a.free()
	es := cArray[C.ctxpack_quota_entry](&a, len(entries))
	for i, q := range entries {
		es[i] = C.ctxpack_quota_entry{kind: a.str(q.Kind), require: C.double(q.Require), cap: C.double(q.Cap)}
	}
	return newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_slicer_new_quota(firstOf(es), C.size_t(len(es)), inner.ptr(), o, e)
	})
}

// NewCountQuotaSlicer commits RequireCount items per kind, lets inner (not a knapsack)
// fill the rest and enforces the caps (CountQuotaSlice).
func NewCountQuotaSlicer(inner *Slicer, scarcity Scarcity, entries ...CountQuotaEntry) (*Slicer, error) {
	defer runtime.KeepAlive(inner)
	var a arena
	defer a.free()
	es := countEntries(&a, entries)
	return newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_slicer_new_count_quota(firstOf(es), C.size_t(len(es)), inner.ptr(), C.int32_t(scarcity), o, e)
	})
}

// NewCountConstrainedKnapsackSlicer applies count quotas with a knapsack for the rest
// (CountConstrainedKnapsackSlice); bucketSize and tableLimitBytes as in NewKnapsackSlicer.
func NewCountConstrainedKnapsackSlicer(bucketSize int64, tableLimitBytes uint64, scarcity Scarcity, entries ...CountQuotaEntry) (*Slicer, error) {
	var a arena
	defer a.free()
	es := countEntries(&a, entries)
	return newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_slicer_new_count_constrained_knapsack(firstOf(es), C.size_t(len(es)),
			C.int64_t(bucketSize), C.uint64_t(tableLimitBytes), C.int32_t(scarcity), o, e)
	})
}

// SliceFunc is a custom slicer: given the candidates sorted by score (descending), their
// scores and the effective budget, it returns the chosen positions (indices into items,
// each at most once, any order). Errors and panics fail the run with StatusCallback; the
// function must be safe for concurrent use (see ScoreFunc). Every call copies every
// item; SliceViewFunc reads only the fields it uses.
type SliceFunc func(items []Item, scores []float64, targetTokens, maxTokens int64) ([]int, error)

// SliceViewFunc is SliceFunc over views of the items, valid only during the call (see
// ItemViews).
type SliceViewFunc func(items ItemViews, scores []float64, targetTokens, maxTokens int64) ([]int, error)

// NewCustomSlicer creates a slicer that calls fn with the items copied into Items.
func NewCustomSlicer(fn SliceFunc) (*Slicer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "slice function is nil"}
	}
	return NewCustomViewSlicer(func(items ItemViews, scores []float64, target, max int64) ([]int, error) {
		return fn(items.Items(), scores, target, max)
	})
}

// NewCustomViewSlicer creates a slicer that calls fn with views of the items.
func NewCustomViewSlicer(fn SliceViewFunc) (*Slicer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "slice function is nil"}
	}
	h := newCallbackHandle(fn)
	s, err := newSlicer(func(o **C.ctxpack_slicer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_go_slicer_new(C.uintptr_t(h), o, e)
	})
	if err != nil {
		dropCallbackHandle(h) // a failed constructor does not take user_data
	}
	return s, err
}

// SliceResult is what a slicer returned when run alone (Slicer.Slice).
type SliceResult struct {
	// Selected are positions in the input, in the slicer's output order.
	Selected []int
	// CapExcluded are the positions a count-quota slicer removed for a reached cap.
	CapExcluded []int
	// Shortfalls are the count requirements that could not be met.
	Shortfalls []Shortfall
}

// Slice runs the slicer alone over items with the given scores (one per item), against
// budget exactly as given (no pinned-item or reserve adjustment). Items with a Group are
// selected whole or not at all, a group being worth the sum of its members' scores. The
// items are copied into a temporary list; SliceList takes a list.
func (s *Slicer) Slice(items []Item, scores []float64, budget *Budget) (SliceResult, error) {
	return s.SliceWithGroupValue(items, scores, budget, GroupValueSum)
}

// SliceWithGroupValue is Slice with another rule for a group's value.
func (s *Slicer) SliceWithGroupValue(items []Item, scores []float64, budget *Budget, value GroupValue) (SliceResult, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return SliceResult{}, err
	}
	defer list.Close()
	return s.SliceListWithGroupValue(list, scores, budget, value)
}

// SliceList is Slice over an item list (one score per item of the list; positions are
// positions in it).
func (s *Slicer) SliceList(list *ItemList, scores []float64, budget *Budget) (SliceResult, error) {
	return s.SliceListWithGroupValue(list, scores, budget, GroupValueSum)
}

// SliceListWithGroupValue is SliceList with another rule for a group's value.
func (s *Slicer) SliceListWithGroupValue(list *ItemList, scores []float64, budget *Budget, value GroupValue) (SliceResult, error) {
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	var res *C.ctxpack_slice_result
	var cerr *C.ctxpack_error
	status := C.ctxpack_slicer_slice_with_group_value(s.ptr(), list.ptr(), (*C.double)(firstOf(scores)), C.size_t(len(scores)), budget.ptr(), C.int32_t(value), &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return SliceResult{}, err
	}
	defer C.ctxpack_slice_result_free(res)

	var out SliceResult
	var ptr *C.size_t
	var n C.size_t
	if err := check(C.ctxpack_slice_result_selected(res, &ptr, &n)); err != nil {
		return SliceResult{}, err
	}
	out.Selected = goInts(ptr, n)
	if err := check(C.ctxpack_slice_result_cap_excluded(res, &ptr, &n)); err != nil {
		return SliceResult{}, err
	}
	out.CapExcluded = goInts(ptr, n)
	if err := check(C.ctxpack_slice_result_shortfall_count(res, &n)); err != nil {
		return SliceResult{}, err
	}
	for i := C.size_t(0); i < n; i++ {
		var sf C.ctxpack_shortfall
		C.ctxpack_shortfall_init(&sf, C.size_t(unsafe.Sizeof(sf)))
		var cerr *C.ctxpack_error
		if err := takeError(C.ctxpack_slice_result_shortfall(res, i, &sf, &cerr), cerr); err != nil {
			return SliceResult{}, err
		}
		out.Shortfalls = append(out.Shortfalls, shortfallFrom(&sf))
	}
	return out, nil
}

// goInts copies an array of positions the library returned.
func goInts(p *C.size_t, n C.size_t) []int {
	out := make([]int, int(n))
	if n > 0 {
		for i, v := range unsafe.Slice(p, int(n)) {
			out[i] = int(v)
		}
	}
	return out
}
