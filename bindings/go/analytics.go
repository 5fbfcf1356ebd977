package ctxpack

// Analytics (spec 07 §4-7): dry runs, budget simulation, sensitivity comparisons and the
// report helpers. Items are positions in the caller's list everywhere.

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Analytics are the report helpers of spec 07 §7, computed for every traced result.
type Analytics struct {
	// BudgetUtilization is the included tokens over the budget's max tokens (not clamped).
	BudgetUtilization float64
	// KindDiversity is the number of distinct kinds among the included items.
	KindDiversity int
	// TimestampCoverage is the share of included items with a timestamp.
	TimestampCoverage float64
	// QuotaUtilization has one entry per quota constraint of the pipeline's slicer
	// (none for other slicers), sorted by kind.
	QuotaUtilization []KindQuotaUtilization
}

// QuotaMode tells whether a quota counts percent of the target or items.
type QuotaMode int32

const (
	QuotaPercentage QuotaMode = C.CTXPACK_QUOTA_MODE_PERCENTAGE
	QuotaCount      QuotaMode = C.CTXPACK_QUOTA_MODE_COUNT
)

// KindQuotaUtilization is how fully one quota constraint is used.
type KindQuotaUtilization struct {
	Kind string
	Mode QuotaMode
	// Require and Cap are in percent of the target, or counts.
	Require, Cap float64
	// Actual is the included share of the target in percent, or the included count.
	Actual float64
	// Utilization is Actual / Cap clamped to [0, 1] (0 when the cap is 0).
	Utilization float64
}

// readAnalytics computes the report helpers of a traced result (the result keeps the
// run's budget and slicer, which the budget and quota helpers need).
func readAnalytics(res *C.ctxpack_result) (Analytics, error) {
	var a Analytics
	var budgetUse, coverage C.double
	var kinds C.size_t
	if err := check(C.ctxpack_result_budget_utilization(res, &budgetUse)); err != nil {
		return a, err
	}
	if err := check(C.ctxpack_result_kind_diversity(res, &kinds)); err != nil {
		return a, err
	}
	if err := check(C.ctxpack_result_timestamp_coverage(res, &coverage)); err != nil {
		return a, err
	}
	a.BudgetUtilization, a.KindDiversity, a.TimestampCoverage = float64(budgetUse), int(kinds), float64(coverage)

	var qu *C.ctxpack_quota_utilization
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_result_quota_utilization(res, &qu, &cerr), cerr); err != nil {
		return a, err
	}
	defer C.ctxpack_quota_utilization_free(qu)
	var n C.size_t
	if err := check(C.ctxpack_quota_utilization_count(qu, &n)); err != nil {
		return a, err
	}
	for i := C.size_t(0); i < n; i++ {
		var e C.ctxpack_kind_quota_utilization
		C.ctxpack_kind_quota_utilization_init(&e, C.size_t(unsafe.Sizeof(e)))
		if err := takeError(C.ctxpack_quota_utilization_entry(qu, i, &e, &cerr), cerr); err != nil {
			return a, err
		}
		a.QuotaUtilization = append(a.QuotaUtilization, KindQuotaUtilization{
			Kind: goString(e.kind), Mode: QuotaMode(e.mode), Require: float64(e.require), Cap: float64(e.cap),
			Actual: float64(e.actual), Utilization: float64(e.utilization),
		})
	}
	return a, nil
}

// DryRun runs the pipeline traced at item detail (spec 07 §4): the Result always has a
// Report. The items are copied into a temporary list; DryRunList takes a list. Safe for
// concurrent use.
func (p *Pipeline) DryRun(items []Item, budget *Budget) (Result, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return Result{}, err
	}
	defer list.Close()
	return p.DryRunList(list, budget)
}

// DryRunList is DryRun over an item list; result indices are positions in it.
func (p *Pipeline) DryRunList(list *ItemList, budget *Budget) (Result, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	var res *C.ctxpack_result
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_dry_run(p.ptr(), list.ptr(), budget.ptr(), &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return Result{}, err
	}
	defer C.ctxpack_result_free(res)
	return readResult(res)
}

// MarginalItems returns the items included under budget that drop out when it shrinks
// by slack tokens (spec 07 §5.1), in placed order. A percentage quota slicer is
// StatusPipelineConfig (the inclusion is not monotonic). The items are copied into a
// temporary list; MarginalItemsList takes a list.
func (p *Pipeline) MarginalItems(items []Item, budget *Budget, slack int64) ([]int, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return nil, err
	}
	defer list.Close()
	return p.MarginalItemsList(list, budget, slack)
}

// MarginalItemsList is MarginalItems over an item list (positions in it).
func (p *Pipeline) MarginalItemsList(list *ItemList, budget *Budget, slack int64) ([]int, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	var capacity C.size_t
	if err := check(C.ctxpack_items_len(list.ptr(), &capacity)); err != nil {
		return nil, err
	}
	positions := make([]C.size_t, int(capacity))
	var n C.size_t
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_marginal_items(p.ptr(), list.ptr(), budget.ptr(), C.int64_t(slack),
		firstOf(positions), capacity, &n, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return goInts(firstOf(positions), n), nil
}

// MinBudgetFor returns the smallest budget (max = target = b, no reserve) in
// [tokens of items[target], ceiling] that includes items[target] (spec 07 §5.2), and
// whether there is one. Quota slicers are StatusPipelineConfig; a target outside items
// or a ceiling below its tokens is StatusInvalidArgument. The items are copied into a
// temporary list; MinBudgetForList takes a list.
func (p *Pipeline) MinBudgetFor(items []Item, target int, ceiling int64) (budget int64, found bool, err error) {
	if target < 0 {
		return 0, false, &Error{Status: StatusInvalidArgument, Message: "target is negative"}
	}
	list, err := NewItemList(items...)
	if err != nil {
		return 0, false, err
	}
	defer list.Close()
	return p.MinBudgetForList(list, target, ceiling)
}

// MinBudgetForList is MinBudgetFor over an item list; target is a position in it.
func (p *Pipeline) MinBudgetForList(list *ItemList, target int, ceiling int64) (budget int64, found bool, err error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	if target < 0 {
		return 0, false, &Error{Status: StatusInvalidArgument, Message: "target is negative"}
	}
	var cfound C.bool
	var cbudget C.int64_t
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_min_budget_for(p.ptr(), list.ptr(), C.size_t(target), C.int64_t(ceiling), &cfound, &cbudget, &cerr)
	if err := takeError(status, cerr); err != nil {
		return 0, false, err
	}
	return int64(cbudget), bool(cfound), nil
}

// SensitivityVariant is one labelled pipeline of a sensitivity comparison.
type SensitivityVariant struct {
	Label    string
	Pipeline *Pipeline
}

// ItemStatus is whether a variant includes an item.
type ItemStatus int32

const (
	ItemIncluded ItemStatus = C.CTXPACK_ITEM_STATUS_INCLUDED
	ItemExcluded ItemStatus = C.CTXPACK_ITEM_STATUS_EXCLUDED
)

// Sensitivity is the outcome of CompareSensitivity.
type Sensitivity struct {
	// Labels and Results are per variant, in the order given; each Result is a dry run.
	Labels  []string
	Results []Result
	// Swings are the items some variant includes and another excludes, in list order.
	Swings []Swing
}

// Swing is an item whose inclusion differs between variants.
type Swing struct {
	// Index is the item's position in the items.
	Index int
	// Statuses has one entry per variant, in variant order.
	Statuses []ItemStatus
}

// CompareSensitivity dry-runs two or more labelled pipelines over the same items and
// budget (spec 07 §6) and lists the items whose inclusion swings between them. The
// items are copied into a temporary list; CompareSensitivityList takes a list.
func CompareSensitivity(items []Item, budget *Budget, variants ...SensitivityVariant) (Sensitivity, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return Sensitivity{}, err
	}
	defer list.Close()
	return CompareSensitivityList(list, budget, variants...)
}

// CompareSensitivityList is CompareSensitivity over an item list (Swing.Index is a
// position in it).
func CompareSensitivityList(list *ItemList, budget *Budget, variants ...SensitivityVariant) (Sensitivity, error) {
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	defer runtime.KeepAlive(variants)
	var a arena
	defer a.free()
	cv := cArray[C.ctxpack_sensitivity_variant](&a, len(variants))
	for i, v := range variants {
		cv[i] = C.ctxpack_sensitivity_variant{label: a.str(v.Label), pipeline: v.Pipeline.ptr()}
	}
	var sens *C.ctxpack_sensitivity
	var cerr *C.ctxpack_error
	status := C.ctxpack_sensitivity_new(list.ptr(), budget.ptr(), firstOf(cv), C.size_t(len(cv)), &sens, &cerr)
	if err := takeError(status, cerr); err != nil {
		return Sensitivity{}, err
	}
	defer C.ctxpack_sensitivity_free(sens)

	var out Sensitivity
	var n C.size_t
	if err := check(C.ctxpack_sensitivity_variant_count(sens, &n)); err != nil {
		return Sensitivity{}, err
	}
	for i := C.size_t(0); i < n; i++ {
		var label C.ctxpack_str
		if err := check(C.ctxpack_sensitivity_variant_label(sens, i, &label)); err != nil {
			return Sensitivity{}, err
		}
		var res *C.ctxpack_result
		if err := takeError(C.ctxpack_sensitivity_variant_result(sens, i, &res, &cerr), cerr); err != nil {
			return Sensitivity{}, err
		}
		r, err := readResult(res)
		C.ctxpack_result_free(res)
		if err != nil {
			return Sensitivity{}, err
		}
		out.Labels = append(out.Labels, goString(label))
		out.Results = append(out.Results, r)
	}
	if err := check(C.ctxpack_sensitivity_diff_count(sens, &n)); err != nil {
		return Sensitivity{}, err
	}
	for i := C.size_t(0); i < n; i++ {
		var index, count C.size_t
		var statuses *C.int32_t
		if err := check(C.ctxpack_sensitivity_diff(sens, i, &index, &statuses, &count)); err != nil {
			return Sensitivity{}, err
		}
		swing := Swing{Index: int(index), Statuses: make([]ItemStatus, int(count))}
		if count > 0 {
			for k, s := range unsafe.Slice(statuses, int(count)) {
				swing.Statuses[k] = ItemStatus(s)
			}
		}
		out.Swings = append(out.Swings, swing)
	}
	return out, nil
}
