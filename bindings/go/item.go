package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"sort"
	"time"
	"unsafe"
)

// Item is one candidate for the context window (a ContextItem of the specification).
// Optional fields are pointers (nil = absent) or, for Timestamp, the zero time.
type Item struct {
	// Content is the text; it must not be empty.
	Content string
	// Tokens is the caller-counted token count; negative items are excluded by a run.
	Tokens int64
	// Kind defaults to "Message" when empty; a whitespace-only kind is an error.
	Kind string
	// Source defaults to "Chat" when empty; a whitespace-only source is an error.
	Source string
	// Priority, higher is more important.
	Priority *int64
	// Tags, order and duplicates kept.
	Tags []string
	// Metadata key/value pairs (keys are case-sensitive).
	Metadata map[string]string
	// Timestamp; the zero time means none. Must lie within the range of
	// time.Time.UnixNano (years 1678 to 2262).
	Timestamp time.Time
	// FutureRelevanceHint, conventionally in [0, 1].
	FutureRelevanceHint *float64
	// Pinned items bypass scoring and slicing and are always placed.
	Pinned bool
	// OriginalTokens is an informational token count before truncation.
	OriginalTokens *int64
	// Group is the item's group key; empty means no group. Items with equal keys (byte
	// for byte) are selected or dropped together and placed next to each other
	// (docs/groups.md).
	Group string
	// Encoding names a built-in encoding ("o200k_base", "cl100k_base") with which the
	// library counts Content's tokens; Tokens must then be 0. Empty means Tokens is the
	// caller's count (docs/tokenizer.md).
	Encoding string
	// Variants are cheaper alternative forms, richest first by convention: a run may
	// place one of them instead of the item (Result.Forms says which).
	Variants []Variant
}

// Int64 returns a pointer to v, for the optional fields of Item.
func Int64(v int64) *int64 { return &v }

// Float64 returns a pointer to v, for the optional fields of Item and DecayConfig.
func Float64(v float64) *float64 { return &v }

// ItemList is a list of items held by the library. Pipeline.Run copies a []Item into a
// temporary list on every call; an ItemList lets several runs share one copy.
// Concurrent runs may read one list; Push and Clear must not overlap any other use.
type ItemList struct{ h *handle }

// NewItemList creates a list holding items (all or nothing).
func NewItemList(items ...Item) (*ItemList, error) {
	var ptr *C.ctxpack_items
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_items_new(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	l := &ItemList{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_items_free((*C.ctxpack_items)(p))
	})}
	if err := l.Push(items...); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *ItemList) ptr() *C.ctxpack_items {
	if l == nil {
		return nil
	}
	return (*C.ctxpack_items)(l.h.pointer())
}

// Push appends items, all or nothing; an invalid item's error message starts with
// "item <index>:".
func (l *ItemList) Push(items ...Item) error {
	defer runtime.KeepAlive(l)
	if len(items) == 0 {
		return nil
	}
	var a arena
	defer a.free()
	descs := itemDescs(&a, items)
	var cerr *C.ctxpack_error
	return takeError(C.ctxpack_items_push_many(l.ptr(), descs, C.size_t(len(items)), &cerr), cerr)
}

// Len returns the number of items in the list.
func (l *ItemList) Len() (int, error) {
	defer runtime.KeepAlive(l)
	var n C.size_t
	err := check(C.ctxpack_items_len(l.ptr(), &n))
	return int(n), err
}

// Clear removes every item (results of earlier runs are not affected).
func (l *ItemList) Clear() error {
	defer runtime.KeepAlive(l)
	return check(C.ctxpack_items_clear(l.ptr()))
}

// Close frees the list. Results of earlier runs stay valid.
func (l *ItemList) Close() error { return l.h.close() }

// itemDescs builds the descriptor array of items in the arena. ctxpack_items_push_many
// takes descs[0].struct_size as the stride, so every element carries
// sizeof(ctxpack_item_desc) with every field it does not set zero.
//
// The arena first reserves one block for the whole batch (descriptors, tag and metadata
// arrays, string bytes), so a batch costs one C allocation, and each byte of the items
// is copied once, into that block.
func itemDescs(a *arena, items []Item) *C.ctxpack_item_desc {
	a.reserve(batchBytes(items))
	descs := cArray[C.ctxpack_item_desc](a, len(items))
	for i := range items {
		fillDesc(a, &descs[i], &items[i])
	}
	return &descs[0]
}

// batchBytes is an upper bound of the arena bytes itemDescs uses for items (every
// allocation rounded up to the arena's alignment).
func batchBytes(items []Item) uintptr {
	const pad = arenaAlign - 1
	str := func(s string) uintptr { return uintptr(len(s)) + pad }
	n := uintptr(len(items))*unsafe.Sizeof(C.ctxpack_item_desc{}) + pad
	for i := range items {
		it := &items[i]
		n += str(it.Content) + str(it.Kind) + str(it.Source) + str(it.Group) + str(it.Encoding)
		if len(it.Tags) > 0 {
			n += uintptr(len(it.Tags))*unsafe.Sizeof(C.ctxpack_str{}) + pad
			for _, t := range it.Tags {
				n += str(t)
			}
		}
		if len(it.Metadata) > 0 {
			n += uintptr(len(it.Metadata))*unsafe.Sizeof(C.ctxpack_metadata_entry{}) + pad
			for k, v := range it.Metadata {
				n += str(k) + str(v)
			}
		}
		if len(it.Variants) > 0 {
			n += uintptr(len(it.Variants))*unsafe.Sizeof(C.ctxpack_variant_desc{}) + pad
			for _, v := range it.Variants {
				n += str(v.Content)
			}
		}
	}
	return n
}

// flag is a flag byte of the C structs: 0 or 1.
func flag(b bool) C.uint8_t {
	if b {
		return 1
	}
	return 0
}

func fillDesc(a *arena, d *C.ctxpack_item_desc, it *Item) {
	// What ctxpack_item_desc_init does (the arena's memory is zeroed), without a C call
	// per item.
	d.struct_size = C.size_t(unsafe.Sizeof(*d))
	d.content = a.str(it.Content)
	d.tokens = C.int64_t(it.Tokens)
	d.kind = a.str(it.Kind)
	d.source = a.str(it.Source)
	if it.Priority != nil {
		d.priority, d.has_priority = C.int64_t(*it.Priority), 1
	}
	if n := len(it.Tags); n > 0 {
		tags := cArray[C.ctxpack_str](a, n)
		for i, t := range it.Tags {
			tags[i] = a.str(t)
		}
		d.tags, d.tag_count = &tags[0], C.size_t(n)
	}
	if n := len(it.Metadata); n > 0 {
		keys := make([]string, 0, n)
		for k := range it.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic order (the library sorts views by key anyway)
		entries := cArray[C.ctxpack_metadata_entry](a, n)
		for i, k := range keys {
			entries[i] = C.ctxpack_metadata_entry{key: a.str(k), value: a.str(it.Metadata[k])}
		}
		d.metadata, d.metadata_count = &entries[0], C.size_t(n)
	}
	if !it.Timestamp.IsZero() {
		d.timestamp_ns, d.has_timestamp = C.int64_t(it.Timestamp.UnixNano()), 1
	}
	if it.FutureRelevanceHint != nil {
		d.future_relevance_hint, d.has_future_relevance_hint = C.double(*it.FutureRelevanceHint), 1
	}
	d.pinned = flag(it.Pinned)
	if it.OriginalTokens != nil {
		d.original_tokens, d.has_original_tokens = C.int64_t(*it.OriginalTokens), 1
	}
	d.group = a.str(it.Group)
	d.encoding = a.str(it.Encoding)
	fillVariants(a, d, it.Variants)
}
