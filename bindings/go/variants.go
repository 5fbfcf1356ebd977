package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// Variant is a cheaper alternative form of an item (docs/variants.md): a summary, an
// excerpt or a stub that a run may place instead of the item — never in addition — when
// the item does not fit or the budget is better spent that way.
type Variant struct {
	// Content is the text sent in place of the item's; it must not be empty.
	Content string
	// Tokens is the form's caller-counted token count, >= 0 (0 is a stub). A variant with
	// as many tokens as its item or more is accepted and pruned (Report.PrunedForms).
	Tokens int64
	// Quality is the share of the item's value the form keeps, in (0, 1]: a form is worth
	// the item's score times its quality.
	Quality float64
}

// InclusionDowngraded is the reason of an item placed as one of its variants; its
// IncludedEntry has the form and the tokens.
const InclusionDowngraded InclusionReason = C.CTXPACK_INCLUSION_REASON_DOWNGRADED

// DowngradeCause is why an item is in the window as a cheaper variant.
type DowngradeCause int32

const (
	// DowngradeNone: the entry's reason is not InclusionDowngraded.
	DowngradeNone DowngradeCause = C.CTXPACK_DOWNGRADE_CAUSE_NONE
	// DowngradeBudgetExceeded: the full form needs more than the form placed plus
	// everything left unused.
	DowngradeBudgetExceeded DowngradeCause = C.CTXPACK_DOWNGRADE_CAUSE_BUDGET_EXCEEDED
	// DowngradeSlicerChoice: the full form would fit in what is left, but the slicer's
	// rule chose the cheaper form (knapsack optimum, quota budget, a group's level).
	DowngradeSlicerChoice DowngradeCause = C.CTXPACK_DOWNGRADE_CAUSE_SLICER_CHOICE
	// DowngradeTruncated: the Truncate overflow strategy moved the item to a cheaper form.
	DowngradeTruncated DowngradeCause = C.CTXPACK_DOWNGRADE_CAUSE_TRUNCATED
)

// String returns the wire name ("BudgetExceeded", "SlicerChoice", "Truncated"), or
// "None".
func (c DowngradeCause) String() string {
	switch c {
	case DowngradeNone:
		return "None"
	case DowngradeBudgetExceeded:
		return "BudgetExceeded"
	case DowngradeSlicerChoice:
		return "SlicerChoice"
	case DowngradeTruncated:
		return "Truncated"
	}
	return "DowngradeCause(" + strconv.Itoa(int(c)) + ")"
}

// PrunedForm is a variant no selection could need: another form of the item has no more
// tokens and at least its quality.
type PrunedForm struct {
	// Index is the item's position in the input.
	Index int
	// Form is the pruned form (>= 1; variant Form-1 of the item).
	Form int
	// DominatedBy is the form that makes it unnecessary.
	DominatedBy int
}

// WithoutVariants selects every item in full or not at all, ignoring the items'
// variants ("drop instead of degrade"; default: variants are used).
func WithoutVariants() PipelineOption {
	return func(c *pipelineConfig) { c.noVariants = true }
}

// fillVariants sets the variant array of a descriptor (in the arena).
func fillVariants(a *arena, d *C.ctxpack_item_desc, variants []Variant) {
	n := len(variants)
	if n == 0 {
		return
	}
	vs := cArray[C.ctxpack_variant_desc](a, n)
	for i, v := range variants {
		vs[i].struct_size = C.size_t(unsafe.Sizeof(vs[i])) // as ctxpack_variant_desc_init (zeroed arena)
		vs[i].content = a.str(v.Content)
		vs[i].tokens = C.int64_t(v.Tokens)
		vs[i].quality = C.double(v.Quality)
	}
	d.variants, d.variant_count = &vs[0], C.size_t(n)
}

// readForms copies the form of every placed item (0 = in full).
func readForms(res *C.ctxpack_result) ([]int, error) {
	var forms *C.size_t
	var n C.size_t
	if err := check(C.ctxpack_result_forms(res, &forms, &n)); err != nil {
		return nil, err
	}
	return goInts(forms, n), nil
}

// readPrunedForms copies the report's pruned forms.
func readPrunedForms(res *C.ctxpack_result, count C.size_t) ([]PrunedForm, error) {
	var out []PrunedForm
	var cerr *C.ctxpack_error
	for i := C.size_t(0); i < count; i++ {
		var f C.ctxpack_pruned_form
		C.ctxpack_pruned_form_init(&f, C.size_t(unsafe.Sizeof(f)))
		if err := takeError(C.ctxpack_result_report_pruned_form(res, i, &f, &cerr), cerr); err != nil {
			return nil, err
		}
		out = append(out, PrunedForm{Index: int(f.index), Form: int(f.form), DominatedBy: int(f.dominated_by)})
	}
	return out, nil
}
