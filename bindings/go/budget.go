package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import "unsafe"

// Budget is a validated token budget. It is immutable and may be shared by concurrent
// runs.
type Budget struct{ h *handle }

type budgetConfig struct {
	outputReserve int64
	slots         []reservedSlot
	margin        float64
}

type reservedSlot struct {
	kind   string
	tokens int64
}

// BudgetOption sets an optional budget field.
type BudgetOption func(*budgetConfig)

// WithOutputReserve keeps tokens for the model's answer (default 0).
func WithOutputReserve(tokens int64) BudgetOption {
	return func(c *budgetConfig) { c.outputReserve = tokens }
}

// WithReservedSlot reserves tokens for one kind (kinds compare ASCII case-insensitively
// and must be distinct). Repeat the option for several kinds.
func WithReservedSlot(kind string, tokens int64) BudgetOption {
	return func(c *budgetConfig) { c.slots = append(c.slots, reservedSlot{kind, tokens}) }
}

// WithSafetyMargin sets the estimation safety margin, in percent [0, 100] (default 0).
func WithSafetyMargin(percent float64) BudgetOption {
	return func(c *budgetConfig) { c.margin = percent }
}

// NewBudget creates a budget of maxTokens (the model's window) aiming at targetTokens.
// The library validates it (StatusInvalidBudget, with a message naming the rule),
// including reserved slots that could never be honoured: a reserved slot shrinks the
// room of every kind, its own included.
func NewBudget(maxTokens, targetTokens int64, opts ...BudgetOption) (*Budget, error) {
	var cfg budgetConfig
	for _, o := range opts {
		o(&cfg)
	}
	var a arena
	defer a.free()
	var slots *C.ctxpack_reserved_slot
	if n := len(cfg.slots); n > 0 {
		s := cArray[C.ctxpack_reserved_slot](&a, n)
		for i, slot := range cfg.slots {
			s[i] = C.ctxpack_reserved_slot{kind: a.str(slot.kind), count: C.int64_t(slot.tokens)}
		}
		slots = &s[0]
	}
	desc := cArray[C.ctxpack_budget_desc](&a, 1)
	d := &desc[0]
	C.ctxpack_budget_desc_init(d, C.size_t(unsafe.Sizeof(*d)))
	d.max_tokens, d.target_tokens = C.int64_t(maxTokens), C.int64_t(targetTokens)
	d.output_reserve, d.estimation_safety_margin_percent = C.int64_t(cfg.outputReserve), C.double(cfg.margin)
	d.slots, d.slot_count = slots, C.size_t(len(cfg.slots))
	var ptr *C.ctxpack_budget
	var cerr *C.ctxpack_error
	status := C.ctxpack_budget_new(d, &ptr, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return &Budget{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_budget_free((*C.ctxpack_budget)(p))
	})}, nil
}

func (b *Budget) ptr() *C.ctxpack_budget {
	if b == nil {
		return nil
	}
	return (*C.ctxpack_budget)(b.h.pointer())
}

// Close frees the budget.
func (b *Budget) Close() error { return b.h.close() }
