//go:build ctxpack_testhooks

package ctxpack

// Test helpers compiled only with the build tag ctxpack_testhooks, which needs a library
// built with the Cargo feature ffi-test-hooks (bindings/go/run.sh does both). They reach
// the statuses the typed Go API cannot produce, so the tests see every status code
// arrive through the real library and this package's error conversion.

/*
#include "ctxpack.h"

// Exported by the ffi-test-hooks build only (not in the header): a scorer whose runs
// panic inside the library (code 0) or fail with the core error `code` (1..15).
ctxpack_status ctxpack_test_scorer_new_faulty(int32_t code, ctxpack_scorer **out, ctxpack_error **out_error);
*/
import "C"

import (
	"runtime"
	"unsafe"
)

func newFaultyScorer(code int32) (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_test_scorer_new_faulty(C.int32_t(code), o, e)
	})
}

// misuseErrors returns the errors of three calls the typed API never makes: an item
// list call given a budget handle, a report accessor on an untraced result, and a
// report accessor with an index past the end.
func misuseErrors(p *Pipeline, list *ItemList, b *Budget) (wrongHandle, noReport, outOfRange error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(b)
	var n C.size_t
	wrongHandle = check(C.ctxpack_items_len((*C.ctxpack_items)(unsafe.Pointer(b.ptr())), &n))

	var entry C.ctxpack_included_entry
	C.ctxpack_included_entry_init(&entry, C.size_t(unsafe.Sizeof(entry)))
	var res *C.ctxpack_result
	if err := check(C.ctxpack_pipeline_run(p.ptr(), list.ptr(), b.ptr(), nil, &res, nil)); err != nil {
		return nil, nil, err
	}
	noReport = check(C.ctxpack_result_report_included(res, 0, &entry, nil))
	C.ctxpack_result_free(res)

	var opts C.ctxpack_run_options
	C.ctxpack_run_options_init(&opts, C.size_t(unsafe.Sizeof(opts)))
	opts.trace_detail = C.CTXPACK_TRACE_DETAIL_STAGE
	if err := check(C.ctxpack_pipeline_run(p.ptr(), list.ptr(), b.ptr(), &opts, &res, nil)); err != nil {
		return nil, nil, err
	}
	outOfRange = check(C.ctxpack_result_report_included(res, 1<<20, &entry, nil))
	C.ctxpack_result_free(res)
	return wrongHandle, noReport, outOfRange
}
