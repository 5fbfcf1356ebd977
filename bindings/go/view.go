package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// ItemViews are the items a custom component receives, read in place from the library's
// item views: nothing is copied until a field is read, and only that field. They are
// valid only during the callback: reading an item after it returned panics (the memory
// belongs to the library and is gone), so copy what must outlive the call (Item, or a
// field's value). Len stays readable.
type ItemViews struct {
	first *C.ctxpack_item_view
	n     int
	scope *viewScope
}

// ItemView is one item of ItemViews, with the same lifetime.
type ItemView struct {
	v     *C.ctxpack_item_view
	scope *viewScope
}

// viewScope is the lifetime of one callback's views: ended when the callback returns.
type viewScope struct{ ended atomic.Bool }

func (s *viewScope) check() {
	if s == nil || s.ended.Load() {
		panic("ctxpack: an item view was used after its callback returned")
	}
}

// newViews wraps the views of one callback; the caller ends the scope when the callback
// returns.
func newViews(first *C.ctxpack_item_view, count C.size_t) ItemViews {
	return ItemViews{first: first, n: int(count), scope: &viewScope{}}
}

func (vs ItemViews) end() { vs.scope.ended.Store(true) }

// Len is the number of items.
func (vs ItemViews) Len() int { return vs.n }

// At is the i-th item; i must be in [0, Len()).
func (vs ItemViews) At(i int) ItemView {
	vs.scope.check()
	if i < 0 || i >= vs.n {
		panic("ctxpack: item view index out of range")
	}
	return ItemView{v: (*C.ctxpack_item_view)(unsafe.Add(unsafe.Pointer(vs.first), uintptr(i)*unsafe.Sizeof(*vs.first))), scope: vs.scope}
}

// Items copies every item into an Item (with its Tags slice and Metadata map): the
// convenience of the []Item callbacks, at the cost of one copy of everything.
func (vs ItemViews) Items() []Item {
	if vs.n == 0 {
		return nil
	}
	items := make([]Item, vs.n)
	for i := range items {
		items[i] = vs.At(i).Item()
	}
	return items
}

func (v ItemView) view() *C.ctxpack_item_view {
	v.scope.check()
	return v.v
}

// bytesOf is the library's bytes of s, valid during the callback (not a copy).
func bytesOf(s C.ctxpack_str) []byte {
	if s.len == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(s.ptr)), int(s.len))
}

// Content copies the item's text.
func (v ItemView) Content() string { return goString(v.view().content) }

// ContentLen is the length of the item's text in bytes, without copying it.
func (v ItemView) ContentLen() int { return int(v.view().content.len) }

// Tokens is the item's token count.
func (v ItemView) Tokens() int64 { return int64(v.view().tokens) }

// Kind is the item's kind ("Message" when the item gave none).
func (v ItemView) Kind() string { return goString(v.view().kind) }

// IsKind reports whether the kind is exactly kind, without copying it.
func (v ItemView) IsKind(kind string) bool { return string(bytesOf(v.view().kind)) == kind }

// Source is the item's source ("Chat" when the item gave none).
func (v ItemView) Source() string { return goString(v.view().source) }

// Priority is the item's priority, and whether it has one.
func (v ItemView) Priority() (int64, bool) {
	p := v.view()
	return int64(p.priority), bool(p.has_priority)
}

// Pinned reports whether the item is pinned.
func (v ItemView) Pinned() bool { return bool(v.view().pinned) }

// Timestamp is the item's timestamp (UTC), and whether it has one.
func (v ItemView) Timestamp() (time.Time, bool) {
	p := v.view()
	if !p.has_timestamp {
		return time.Time{}, false
	}
	return time.Unix(0, int64(p.timestamp_ns)).UTC(), true
}

// FutureRelevanceHint is the item's hint, and whether it has one.
func (v ItemView) FutureRelevanceHint() (float64, bool) {
	p := v.view()
	return float64(p.future_relevance_hint), bool(p.has_future_relevance_hint)
}

// OriginalTokens is the item's count before truncation, and whether it has one.
func (v ItemView) OriginalTokens() (int64, bool) {
	p := v.view()
	return int64(p.original_tokens), bool(p.has_original_tokens)
}

func (v ItemView) tags() []C.ctxpack_str {
	p := v.view()
	if p.tag_count == 0 {
		return nil
	}
	return unsafe.Slice(p.tags, int(p.tag_count))
}

// TagCount is the number of tags.
func (v ItemView) TagCount() int { return int(v.view().tag_count) }

// Tag copies the i-th tag; i must be in [0, TagCount()).
func (v ItemView) Tag(i int) string { return goString(v.tags()[i]) }

// HasTag reports whether one of the tags is exactly tag, without copying any.
func (v ItemView) HasTag(tag string) bool {
	for _, t := range v.tags() {
		if string(bytesOf(t)) == tag {
			return true
		}
	}
	return false
}

// Tags copies the tags (nil when there are none).
func (v ItemView) Tags() []string {
	ts := v.tags()
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = goString(t)
	}
	return out
}

func (v ItemView) metadata() []C.ctxpack_metadata_entry {
	p := v.view()
	if p.metadata_count == 0 {
		return nil
	}
	return unsafe.Slice(p.metadata, int(p.metadata_count))
}

// MetadataCount is the number of metadata entries.
func (v ItemView) MetadataCount() int { return int(v.view().metadata_count) }

// MetadataAt copies the i-th metadata entry (entries are sorted by key); i must be in
// [0, MetadataCount()).
func (v ItemView) MetadataAt(i int) (key, value string) {
	e := v.metadata()[i]
	return goString(e.key), goString(e.value)
}

// Metadata copies the value of key, and reports whether the item has it; only that
// value is copied.
func (v ItemView) Metadata(key string) (string, bool) {
	for _, e := range v.metadata() {
		if string(bytesOf(e.key)) == key {
			return goString(e.value), true
		}
	}
	return "", false
}

// Item copies the whole item into an Item (Tags and Metadata included). Group,
// Encoding and Variants are not part of a callback's view and stay empty.
func (v ItemView) Item() Item {
	p := v.view()
	it := Item{
		Content: goString(p.content),
		Tokens:  int64(p.tokens),
		Kind:    goString(p.kind),
		Source:  goString(p.source),
		Pinned:  bool(p.pinned),
		Tags:    v.Tags(),
	}
	if p.has_priority {
		it.Priority = Int64(int64(p.priority))
	}
	if md := v.metadata(); len(md) > 0 {
		it.Metadata = make(map[string]string, len(md))
		for _, e := range md {
			it.Metadata[goString(e.key)] = goString(e.value)
		}
	}
	if p.has_timestamp {
		it.Timestamp = time.Unix(0, int64(p.timestamp_ns)).UTC()
	}
	if p.has_future_relevance_hint {
		it.FutureRelevanceHint = Float64(float64(p.future_relevance_hint))
	}
	if p.has_original_tokens {
		it.OriginalTokens = Int64(int64(p.original_tokens))
	}
	return it
}
