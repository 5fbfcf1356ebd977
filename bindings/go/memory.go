package ctxpack

/*
#include <stdlib.h>
#include <string.h>
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// handle owns one reference to a library object. A finalizer releases it when the
// handle becomes unreachable without Close; Close releases it at once.
//
// The wrapper types (Scorer, Pipeline, ...) hold a *handle, and the finalizer may run as
// soon as the wrapper is unreachable, which can be in the middle of a method that still
// has C calls to make with its pointer (reading a result, computing analytics). So every
// function that takes an object's pointer (x.ptr()) starts with
//
//	defer runtime.KeepAlive(x)
//
// (or registers `defer x.Close()` for an object it owns) before the first use: x then
// stays reachable until the function returns, whatever follows. Helpers that make C
// calls take the Go objects, not their pointers, and follow the same rule.
// keepalive_test.go checks the rule on every function of the package.
type handle struct {
	ptr  unsafe.Pointer
	free func(unsafe.Pointer)
}

func newHandle(ptr unsafe.Pointer, free func(unsafe.Pointer)) *handle {
	h := &handle{ptr: ptr, free: free}
	runtime.SetFinalizer(h, (*handle).release)
	return h
}

// pointer is the library pointer, or nil for a nil or closed handle. Passing nil to the
// library gives CTXPACK_NULL_ARGUMENT (or CTXPACK_PIPELINE_CONFIG for a missing
// component), never undefined behaviour, so using a closed object is a reported error.
func (h *handle) pointer() unsafe.Pointer {
	if h == nil {
		return nil
	}
	return atomic.LoadPointer(&h.ptr)
}

// release frees the reference once: the pointer is swapped out atomically, so concurrent
// calls (two Close calls, or Close and the finalizer) free it exactly once.
func (h *handle) release() {
	if p := atomic.SwapPointer(&h.ptr, nil); p != nil {
		h.free(p)
	}
}

// close releases the reference; closing twice, or from several goroutines at once, is
// safe (one of them frees it). It must not run concurrently with other uses of the
// object.
func (h *handle) close() error {
	if h != nil {
		runtime.SetFinalizer(h, nil)
		h.release()
	}
	return nil
}

// arena holds C memory for the arguments of one library call. The cgo pointer rules
// forbid passing C a Go pointer to memory that itself holds Go pointers, and every
// descriptor the ABI takes (items with their strings, tags and metadata; weights; quota
// entries) holds pointers. So the arguments are built in C memory, which the library
// copies during the call, and freed right after it.
type arena struct {
	blocks []unsafe.Pointer
	block  unsafe.Pointer
	used   uintptr
	size   uintptr
	// next is the size of the next block when larger than arenaBlockSize (reserve).
	next uintptr
}

const (
	arenaBlockSize = 16 << 10
	// arenaAlign aligns every allocation for any C type (the ABI's structs need at most 8).
	arenaAlign = 16
)

// reserve makes the next block hold at least n bytes, so that n bytes of allocations
// (each counted rounded up to arenaAlign) fit in one block when the current one is full.
func (a *arena) reserve(n uintptr) {
	if a.block != nil && a.size-a.used >= n+arenaAlign {
		return
	}
	a.next = n
}

// alloc returns n zeroed bytes aligned for any C type.
func (a *arena) alloc(n uintptr) unsafe.Pointer {
	if n == 0 {
		n = 1
	}
	start := (a.used + arenaAlign - 1) &^ (arenaAlign - 1)
	if a.block == nil || start+n > a.size {
		size := uintptr(arenaBlockSize)
		if a.next > size {
			size = a.next
		}
		a.next = 0
		if n > size {
			size = n
		}
		a.block = C.calloc(1, C.size_t(size))
		if a.block == nil {
			panic("ctxpack: out of C memory")
		}
		a.blocks = append(a.blocks, a.block)
		a.size, start = size, 0
	}
	a.used = start + n
	return unsafe.Add(a.block, start)
}

// str copies s into the arena as a ctxpack_str; "" is {NULL, 0}. The bytes are passed
// as they are: invalid UTF-8 is reported by the library (CTXPACK_INVALID_UTF8).
func (a *arena) str(s string) C.ctxpack_str {
	if len(s) == 0 {
		return C.ctxpack_str{}
	}
	p := a.alloc(uintptr(len(s)))
	copy(unsafe.Slice((*byte)(p), len(s)), s)
	return C.ctxpack_str{ptr: (*C.char)(p), len: C.size_t(len(s))}
}

func (a *arena) free() {
	for _, b := range a.blocks {
		C.free(b)
	}
	*a = arena{}
}

// cArray allocates a zeroed C array of n elements of T in the arena.
func cArray[T any](a *arena, n int) []T {
	var zero T
	return unsafe.Slice((*T)(a.alloc(unsafe.Sizeof(zero)*uintptr(n))), n)
}

// goString copies a string the library returned (owned by a result or an error).
func goString(s C.ctxpack_str) string {
	if s.len == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(s.ptr)), int(s.len)))
}
