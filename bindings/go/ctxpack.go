// Package ctxpack is the Go binding of ctxpack, the context-window selection library
// (Cupel context-selection specification v1.0.0), over its C ABI (libctxpack.so and
// include/ctxpack.h; the rules are in docs/ffi.md).
//
// Build items, a Budget, a scorer, a slicer and a placer, combine the components into a
// Pipeline, and Run it:
//
//	pipeline, err := ctxpack.NewPipeline(scorer, slicer, placer)
//	result, err := pipeline.Run(items, budget, nil)
//	for _, i := range result.Indices { fmt.Println(items[i].Content) }
//
// Every object that holds a library handle has a Close method. Close releases the handle
// at once; a finalizer releases it otherwise, when the object becomes unreachable.
// Components are reference-counted by the library: a pipeline keeps the components it
// was built from, so they may be closed right after NewPipeline.
//
// Failures are *Error values carrying the library's Status and message; every Status is
// also an error, so errors.Is(err, ctxpack.StatusOverflow) works.
//
// Pipelines, budgets, components and item lists may be used from many goroutines at
// once (see Pipeline.Run); custom components written in Go must then be safe for
// concurrent use.
//
// Linking: the package finds the installed library through pkg-config (ctxpack.pc, which
// `make install` writes; PKG_CONFIG_PATH for a prefix outside pkg-config's search path)
// and records no run path: the loader finds libctxpack.so.MAJOR as it finds any system
// library. The module path is github.com/ctxpack/ctxpack/bindings/go.
package ctxpack

/*
#cgo pkg-config: ctxpack
#include "ctxpack.h"
*/
import "C"

// Version returns the version of the loaded library ("MAJOR.MINOR.PATCH").
func Version() string {
	return C.GoString(C.ctxpack_version())
}

// HeaderVersion is the version of the header this package was compiled against.
const HeaderVersion = C.CTXPACK_VERSION_STRING

// VersionNumber returns the version of the loaded library as
// MAJOR*10000 + MINOR*100 + PATCH; compare it with HeaderVersionNumber.
func VersionNumber() uint32 {
	return uint32(C.ctxpack_version_number())
}

// HeaderVersionNumber is HeaderVersion as a number (MAJOR*10000 + MINOR*100 + PATCH).
const HeaderVersionNumber = C.CTXPACK_VERSION_NUMBER
