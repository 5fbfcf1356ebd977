package ctxpack

// The Go side of the custom components' callbacks (the C side is shim.c). Each exported
// function receives the component's cgo.Handle, wraps the library's views in ItemViews
// (read in place, nothing copied up front), calls the user's function, and copies the
// answer back. No panic may unwind
// into the library: invoke recovers it and fails the callback with a message instead.

/*
#include <stdint.h>
#include <stdlib.h>
#include "ctxpack.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"
)

// liveCallbacks counts the Go components whose handle the library has not destroyed yet
// (a test checks that destroy runs exactly when the last reference goes).
var liveCallbacks atomic.Int64

// newCallbackHandle makes the user_data of a Go component. The library owns it once
// the constructor succeeds and calls goDestroy when the last reference is dropped;
// after a failed constructor the caller must call dropCallbackHandle.
func newCallbackHandle(fn interface{}) cgo.Handle {
	liveCallbacks.Add(1)
	return cgo.NewHandle(fn)
}

func dropCallbackHandle(h cgo.Handle) {
	h.Delete()
	liveCallbacks.Add(-1)
}

// invoke runs one callback: the library sees 0 for success, or 1 with a message (the
// error's text, or the panic value) that shim.c keeps alive until the library copied it.
func invoke(cerr *C.ctxpack_callback_error, call func() error) (rc C.int) {
	defer func() {
		if p := recover(); p != nil {
			rc = failCallback(cerr, fmt.Sprintf("panic in Go callback: %v", p))
		}
	}()
	if err := call(); err != nil {
		return failCallback(cerr, err.Error())
	}
	return 0
}

func failCallback(cerr *C.ctxpack_callback_error, msg string) C.int {
	cerr.message = C.ctxpack_str{ptr: C.CString(msg), len: C.size_t(len(msg))}
	return 1
}

func goFloats(p *C.double, n C.size_t) []float64 {
	if n == 0 {
		return nil
	}
	out := make([]float64, int(n))
	for i, v := range unsafe.Slice(p, int(n)) {
		out[i] = float64(v)
	}
	return out
}

// storePositions copies positions returned by a Go slicer or placer into the library's
// array of the given capacity.
func storePositions(what string, positions []int, out *C.size_t, capacity C.size_t) error {
	if len(positions) > int(capacity) {
		return fmt.Errorf("custom %s returned %d positions for %d items", what, len(positions), capacity)
	}
	if len(positions) == 0 {
		return nil
	}
	dst := unsafe.Slice(out, len(positions))
	for i, p := range positions {
		if p < 0 {
			return fmt.Errorf("custom %s returned the negative position %d", what, p)
		}
		dst[i] = C.size_t(p)
	}
	return nil
}

// callViews runs one callback body over the library's views and ends their scope when
// it returns, so that a view the user kept panics instead of reading freed memory.
func callViews(views *C.ctxpack_item_view, count C.size_t, body func(ItemViews) error) error {
	vs := newViews(views, count)
	defer vs.end()
	return body(vs)
}

//export goScoreAll
func goScoreAll(h C.uintptr_t, views *C.ctxpack_item_view, count C.size_t, out *C.double, cerr *C.ctxpack_callback_error) C.int {
	return invoke(cerr, func() error {
		fn := cgo.Handle(h).Value().(ScoreViewFunc)
		// The scores are written straight into the library's array (pre-filled with NaN),
		// which a Go slice may address since it is C memory.
		var scores []float64
		if count > 0 {
			scores = unsafe.Slice((*float64)(unsafe.Pointer(out)), int(count))
		}
		return callViews(views, count, func(vs ItemViews) error { return fn(vs, scores) })
	})
}

//export goSlice
func goSlice(h C.uintptr_t, views *C.ctxpack_item_view, scores *C.double, count C.size_t, target, max C.int64_t,
	out *C.size_t, outCount *C.size_t, cerr *C.ctxpack_callback_error) C.int {
	return invoke(cerr, func() error {
		fn := cgo.Handle(h).Value().(SliceViewFunc)
		return callViews(views, count, func(vs ItemViews) error {
			positions, err := fn(vs, goFloats(scores, count), int64(target), int64(max))
			if err != nil {
				return err
			}
			if err := storePositions("slicer", positions, out, count); err != nil {
				return err
			}
			*outCount = C.size_t(len(positions))
			return nil
		})
	})
}

//export goPlace
func goPlace(h C.uintptr_t, views *C.ctxpack_item_view, scores *C.double, count C.size_t, out *C.size_t, cerr *C.ctxpack_callback_error) C.int {
	return invoke(cerr, func() error {
		fn := cgo.Handle(h).Value().(PlaceViewFunc)
		return callViews(views, count, func(vs ItemViews) error {
			order, err := fn(vs, goFloats(scores, count))
			if err != nil {
				return err
			}
			if len(order) != int(count) {
				return fmt.Errorf("custom placer returned %d positions for %d items", len(order), count)
			}
			return storePositions("placer", order, out, count)
		})
	})
}

// goDestroy is the destroy callback of every Go component: the library calls it once,
// when its last reference to the component is dropped (possibly on another thread).
//
//export goDestroy
func goDestroy(h C.uintptr_t) {
	dropCallbackHandle(cgo.Handle(h))
}
