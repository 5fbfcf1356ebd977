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

// Placer orders the selected items. Placers are immutable and reference-counted like
// scorers.
type Placer struct{ h *handle }

// Close releases this reference to the placer.
func (p *Placer) Close() error { return p.h.close() }

func (p *Placer) ptr() *C.ctxpack_placer {
	if p == nil {
		return nil
	}
	return (*C.ctxpack_placer)(p.h.pointer())
}

func newPlacer(construct func(**C.ctxpack_placer, **C.ctxpack_error) C.ctxpack_status) (*Placer, error) {
	var ptr *C.ctxpack_placer
	var cerr *C.ctxpack_error
	if err := takeError(construct(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Placer{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_placer_free((*C.ctxpack_placer)(p))
	})}, nil
}

// NewChronologicalPlacer places timestamped items oldest first, then the others; ties
// by input position.
func NewChronologicalPlacer() (*Placer, error) {
	return newPlacer(func(o **C.ctxpack_placer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_placer_new_chronological(o, e)
	})
}

// NewUShapedPlacer places the highest scores at both edges, the lowest in the middle.
func NewUShapedPlacer() (*Placer, error) {
	return newPlacer(func(o **C.ctxpack_placer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_placer_new_u_shaped(o, e)
	})
}

// PlaceFunc is a custom placer: it returns a permutation of 0..len(items)-1, where
// element k is the position placed k-th. Errors and panics fail the run with
// StatusCallback; the function must be safe for concurrent use (see ScoreFunc). Every
// call copies every item; PlaceViewFunc reads only the fields it uses.
type PlaceFunc func(items []Item, scores []float64) ([]int, error)

// PlaceViewFunc is PlaceFunc over views of the items, valid only during the call (see
// ItemViews).
type PlaceViewFunc func(items ItemViews, scores []float64) ([]int, error)

// NewCustomPlacer creates a placer that calls fn with the items copied into Items.
func NewCustomPlacer(fn PlaceFunc) (*Placer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "place function is nil"}
	}
	return NewCustomViewPlacer(func(items ItemViews, scores []float64) ([]int, error) {
		return fn(items.Items(), scores)
	})
}

// NewCustomViewPlacer creates a placer that calls fn with views of the items.
func NewCustomViewPlacer(fn PlaceViewFunc) (*Placer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "place function is nil"}
	}
	h := newCallbackHandle(fn)
	p, err := newPlacer(func(o **C.ctxpack_placer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_go_placer_new(C.uintptr_t(h), o, e)
	})
	if err != nil {
		dropCallbackHandle(h) // a failed constructor does not take user_data
	}
	return p, err
}

// Place runs the placer alone over items with the given scores (one per item) and
// returns the placement order as positions in items. The members of a group end up
// together, in input order; a group is worth the sum of its members' scores. The items
// are copied into a temporary list; PlaceList takes a list.
func (p *Placer) Place(items []Item, scores []float64) ([]int, error) {
	return p.PlaceWithGroupValue(items, scores, GroupValueSum)
}

// PlaceWithGroupValue is Place with another rule for a group's value.
func (p *Placer) PlaceWithGroupValue(items []Item, scores []float64, value GroupValue) ([]int, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return nil, err
	}
	defer list.Close()
	return p.PlaceListWithGroupValue(list, scores, value)
}

// PlaceList is Place over an item list (one score per item of the list; the order is
// positions in it).
func (p *Placer) PlaceList(list *ItemList, scores []float64) ([]int, error) {
	return p.PlaceListWithGroupValue(list, scores, GroupValueSum)
}

// PlaceListWithGroupValue is PlaceList with another rule for a group's value.
func (p *Placer) PlaceListWithGroupValue(list *ItemList, scores []float64, value GroupValue) ([]int, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	order := make([]C.size_t, len(scores))
	var cerr *C.ctxpack_error
	status := C.ctxpack_placer_place_with_group_value(p.ptr(), list.ptr(), (*C.double)(firstOf(scores)), C.size_t(len(scores)), C.int32_t(value), firstOf(order), &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return goInts(firstOf(order), C.size_t(len(order))), nil
}
