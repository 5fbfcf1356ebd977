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

// Runner runs pipelines over items into one library result that it keeps between runs
// (the library's ctxpack_pipeline_run_descs_into): once that result has grown to a
// run's size, the library allocates nothing for the run (docs/ffi.md, "Reusing a
// result"). Each Run returns its Result copied out, exactly as Pipeline.Run does, so a
// Result stays valid after later runs. Keep one Runner per goroutine (or worker):
// concurrent calls on one Runner are serialised. Close frees the kept result; a
// finalizer frees it otherwise.
type Runner struct {
	mu sync.Mutex
	// kept is the kept result; nil before the first successful run and after Close.
	kept *handle
}

// NewRunner returns a Runner with no kept result yet.
func NewRunner() *Runner { return &Runner{} }

// Run is Pipeline.Run(items, budget, opts), run into the kept result.
func (r *Runner) Run(p *Pipeline, items []Item, budget *Budget, opts *RunOptions) (Result, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(budget)
	r.mu.Lock()
	defer r.mu.Unlock()
	var a arena
	defer a.free()
	var descs *C.ctxpack_item_desc
	if len(items) > 0 {
		descs = itemDescs(&a, items)
	}
	copts := runOptions(opts, nil)
	earlier := (*C.ctxpack_result)(r.kept.pointer())
	res := earlier
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_run_descs_into(p.ptr(), descs, C.size_t(len(items)), budget.ptr(), &copts, &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return Result{}, err
	}
	if res != earlier {
		// A new result: the library released the earlier one, so its handle must not.
		if r.kept != nil {
			runtime.SetFinalizer(r.kept, nil)
		}
		r.kept = newHandle(unsafe.Pointer(res), func(p unsafe.Pointer) { C.ctxpack_result_free((*C.ctxpack_result)(p)) })
	}
	return readResult(res)
}

// Close frees the kept result; the Runner may be used again (its next run makes a new
// one). Closing twice is safe.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.kept.close()
	r.kept = nil
	return err
}
