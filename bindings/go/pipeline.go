package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// OverflowStrategy is what a run does when the selection exceeds the target.
type OverflowStrategy int32

const (
	// OverflowThrow fails the run with StatusOverflow (the default).
	OverflowThrow OverflowStrategy = C.CTXPACK_OVERFLOW_STRATEGY_THROW
	// OverflowTruncate drops non-pinned items that do not fit.
	OverflowTruncate OverflowStrategy = C.CTXPACK_OVERFLOW_STRATEGY_TRUNCATE
	// OverflowProceed keeps everything and reports the overflow in Result.Overflow.
	OverflowProceed OverflowStrategy = C.CTXPACK_OVERFLOW_STRATEGY_PROCEED
)

// Pipeline is a configured scorer, slicer and placer. It is immutable and may be run
// from many goroutines at once.
type Pipeline struct{ h *handle }

type pipelineConfig struct {
	deduplication bool
	overflow      OverflowStrategy
	noVariants    bool
	groupValue    GroupValue
	pinnedFirst   bool
}

// GroupValue is how a group's value is computed from its members' scores
// (docs/groups.md).
type GroupValue int32

const (
	// GroupValueSum adds the members' scores (the default).
	GroupValueSum GroupValue = C.CTXPACK_GROUP_VALUE_SUM
	// GroupValueMax takes the highest member score.
	GroupValueMax GroupValue = C.CTXPACK_GROUP_VALUE_MAX
	// GroupValueMean takes the mean of the members' scores.
	GroupValueMean GroupValue = C.CTXPACK_GROUP_VALUE_MEAN
)

// WithGroupValue sets how a group's value is computed (default GroupValueSum); it
// matters only when items have a Group.
func WithGroupValue(v GroupValue) PipelineOption {
	return func(c *pipelineConfig) { c.groupValue = v }
}

// WithPinnedFirst places the pinned items first, in input order, before everything the
// placer orders (default off: the placer places them like any other item).
func WithPinnedFirst(on bool) PipelineOption {
	return func(c *pipelineConfig) { c.pinnedFirst = on }
}

// PipelineOption sets an option of NewPipeline.
type PipelineOption func(*pipelineConfig)

// WithDeduplication turns the removal of byte-identical contents on or off (default on).
func WithDeduplication(on bool) PipelineOption {
	return func(c *pipelineConfig) { c.deduplication = on }
}

// WithOverflowStrategy sets the overflow strategy (default OverflowThrow).
func WithOverflowStrategy(s OverflowStrategy) PipelineOption {
	return func(c *pipelineConfig) { c.overflow = s }
}

// NewPipeline builds a pipeline. It keeps its own references to the components, so they
// may be closed afterwards. A nil component is StatusPipelineConfig.
func NewPipeline(scorer *Scorer, slicer *Slicer, placer *Placer, opts ...PipelineOption) (*Pipeline, error) {
	defer runtime.KeepAlive(scorer)
	defer runtime.KeepAlive(slicer)
	defer runtime.KeepAlive(placer)
	cfg := pipelineConfig{deduplication: true, overflow: OverflowThrow}
	for _, o := range opts {
		o(&cfg)
	}
	// Go memory is fine here: the struct holds no pointers.
	var copts C.ctxpack_pipeline_options
	C.ctxpack_pipeline_options_init(&copts, C.size_t(unsafe.Sizeof(copts)))
	copts.deduplication, copts.overflow_strategy = flag(cfg.deduplication), C.int32_t(cfg.overflow)
	copts.group_value, copts.pinned_first = C.int32_t(cfg.groupValue), flag(cfg.pinnedFirst)
	copts.no_variants = flag(cfg.noVariants)
	return newPipeline(func(o **C.ctxpack_pipeline, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_pipeline_new(scorer.ptr(), slicer.ptr(), placer.ptr(), &copts, o, e)
	})
}

func (p *Pipeline) ptr() *C.ctxpack_pipeline {
	if p == nil {
		return nil
	}
	return (*C.ctxpack_pipeline)(p.h.pointer())
}

// Close frees the pipeline. It must not run while a run is in progress.
func (p *Pipeline) Close() error { return p.h.close() }

// TraceDetail is how much a run records for its report.
type TraceDetail int32

const (
	// TraceNone records no report (the default).
	TraceNone TraceDetail = C.CTXPACK_TRACE_DETAIL_NONE
	// TraceStage records stage events, included and excluded items, totals, shortfalls.
	TraceStage TraceDetail = C.CTXPACK_TRACE_DETAIL_STAGE
	// TraceItem also records one event per inclusion and exclusion.
	TraceItem TraceDetail = C.CTXPACK_TRACE_DETAIL_ITEM
)

// RunOptions are the options of one run; nil or the zero value means untraced.
type RunOptions struct {
	// Trace makes Result.Report available when not TraceNone.
	Trace TraceDetail
}

// Run runs the pipeline over items within budget in one call (the library's one-shot
// run, ctxpack_pipeline_run_descs: the items are copied once and no list is kept); use
// RunList to share one copy between runs. Safe for concurrent use.
func (p *Pipeline) Run(items []Item, budget *Budget, opts *RunOptions) (Result, error) {
	return p.runItems(items, budget, opts, nil)
}

// ReleaseMemory frees the memory the pipeline keeps for its one-shot runs (Run,
// RunContext; the library's ctxpack_pipeline_release_memory). After a one-shot run of at
// most 131 072 items the pipeline keeps that run's buffers for the next one, about 170
// bytes per item of the largest kept run for an agent pipeline (numbers only, never the
// items' contents); ReleaseMemory frees them, and the next one-shot run allocates them
// again. Results and Runners are unaffected. Safe for concurrent use, during runs too: a
// run in progress keeps what it holds until it returns. A closed pipeline is
// StatusNullArgument.
func (p *Pipeline) ReleaseMemory() error {
	defer runtime.KeepAlive(p)
	return check(C.ctxpack_pipeline_release_memory(p.ptr()))
}

// runItems is Run, cancellable when token is not nil.
func (p *Pipeline) runItems(items []Item, budget *Budget, opts *RunOptions, token *C.ctxpack_cancel_token) (Result, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(budget)
	var a arena
	defer a.free()
	var descs *C.ctxpack_item_desc
	if len(items) > 0 {
		descs = itemDescs(&a, items)
	}
	copts := runOptions(opts, token)
	var res *C.ctxpack_result
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_run_descs(p.ptr(), descs, C.size_t(len(items)), budget.ptr(), &copts, &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return Result{}, err
	}
	defer C.ctxpack_result_free(res)
	return readResult(res)
}

// runOptions is the C form of opts with the cancel token (nil: not cancellable). It holds
// no Go pointer, so it may be passed to C from the Go stack.
func runOptions(opts *RunOptions, token *C.ctxpack_cancel_token) C.ctxpack_run_options {
	var copts C.ctxpack_run_options
	C.ctxpack_run_options_init(&copts, C.size_t(unsafe.Sizeof(copts)))
	if opts != nil {
		copts.trace_detail = C.int32_t(opts.Trace)
	}
	copts.cancel = token
	return copts
}

// RunList runs the pipeline over an item list; result indices are positions in it.
// Safe for concurrent use; the run works on the list as it was when it started.
func (p *Pipeline) RunList(list *ItemList, budget *Budget, opts *RunOptions) (Result, error) {
	var out Result
	err := p.runList(list, budget, opts, nil, func(res *C.ctxpack_result) (err error) {
		out, err = readResult(res)
		return err
	})
	return out, err
}

// runList runs the pipeline (cancellable when token is not nil) and passes the result to
// read, which must copy what it needs: the result is freed when read returns.
func (p *Pipeline) runList(list *ItemList, budget *Budget, opts *RunOptions, token *C.ctxpack_cancel_token,
	read func(*C.ctxpack_result) error) error {
	res, err := p.runRaw(list, budget, opts, token)
	if err != nil {
		return err
	}
	defer C.ctxpack_result_free(res)
	return read(res)
}

// runRaw runs the pipeline and returns the library's result, which the caller frees.
func (p *Pipeline) runRaw(list *ItemList, budget *Budget, opts *RunOptions, token *C.ctxpack_cancel_token) (*C.ctxpack_result, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	// No Go pointers: no overflow callback (see Result.Overflow); the token is C memory.
	copts := runOptions(opts, token)
	var res *C.ctxpack_result
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_run(p.ptr(), list.ptr(), budget.ptr(), &copts, &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return res, nil
}
