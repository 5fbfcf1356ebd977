package ctxpack

/*
#include <stdint.h>
#include <stdlib.h>
#include "ctxpack.h"
*/
import "C"

import (
	"context"
	"runtime"
	"unsafe"
)

// PrefixState is what a turn placed, in order, for the next turn to compare with or to
// keep (docs/prefix-cache.md). It is immutable and may be shared by concurrent runs.
// Store it next to the conversation with Bytes (or JSON) and read it back with
// ReadPrefixState (or ReadPrefixStateJSON).
type PrefixState struct{ h *handle }

func newPrefixState(ptr *C.ctxpack_prefix_state) *PrefixState {
	return &PrefixState{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_prefix_state_free((*C.ctxpack_prefix_state)(p))
	})}
}

func (s *PrefixState) ptr() *C.ctxpack_prefix_state {
	if s == nil {
		return nil
	}
	return (*C.ctxpack_prefix_state)(s.h.pointer())
}

// Close frees the state.
func (s *PrefixState) Close() error { return s.h.close() }

// ReadPrefixState reads a state from its binary form. Anything but a complete,
// uncorrupted state of a format version this library reads is StatusInvalidState.
func ReadPrefixState(data []byte) (*PrefixState, error) {
	var a arena
	defer a.free()
	c := a.str(string(data))
	var ptr *C.ctxpack_prefix_state
	var cerr *C.ctxpack_error
	status := C.ctxpack_prefix_state_from_bytes((*C.uint8_t)(unsafe.Pointer(c.ptr)), c.len, &ptr, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return newPrefixState(ptr), nil
}

// ReadPrefixStateJSON reads a state from its JSON form (StatusInvalidState naming the
// member when it is not a valid state).
func ReadPrefixStateJSON(text string) (*PrefixState, error) {
	var a arena
	defer a.free()
	c := a.str(text)
	var ptr *C.ctxpack_prefix_state
	var cerr *C.ctxpack_error
	status := C.ctxpack_prefix_state_from_json(c, &ptr, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return newPrefixState(ptr), nil
}

// Bytes returns the binary form of the state.
func (s *PrefixState) Bytes() ([]byte, error) {
	defer runtime.KeepAlive(s)
	var n C.size_t
	if err := check(C.ctxpack_prefix_state_to_bytes(s.ptr(), nil, 0, &n)); err != nil {
		return nil, err
	}
	buf := C.malloc(n + 1)
	if buf == nil {
		panic("ctxpack: out of C memory")
	}
	defer C.free(buf)
	if err := check(C.ctxpack_prefix_state_to_bytes(s.ptr(), (*C.uint8_t)(buf), n, &n)); err != nil {
		return nil, err
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// JSON returns the JSON form of the state.
func (s *PrefixState) JSON() (string, error) {
	defer runtime.KeepAlive(s)
	var str *C.ctxpack_string
	var cerr *C.ctxpack_error
	status := C.ctxpack_prefix_state_json(s.ptr(), &str, &cerr)
	if err := takeError(status, cerr); err != nil {
		return "", err
	}
	defer C.ctxpack_string_free(str)
	var v C.ctxpack_str
	if err := check(C.ctxpack_string_value(str, &v)); err != nil {
		return "", err
	}
	return goString(v), nil
}

// PrefixStateInfo describes a state.
type PrefixStateInfo struct {
	// Turn is the turn number (1 for the first turn of a chain).
	Turn uint64
	// Entries is the number of items of the state's window.
	Entries int
	// Tokens are their tokens.
	Tokens int64
}

// Info returns the state's turn, number of entries and tokens.
func (s *PrefixState) Info() (PrefixStateInfo, error) {
	defer runtime.KeepAlive(s)
	var turn C.uint64_t
	var entries C.size_t
	var tokens C.int64_t
	if err := check(C.ctxpack_prefix_state_info(s.ptr(), &turn, &entries, &tokens)); err != nil {
		return PrefixStateInfo{}, err
	}
	return PrefixStateInfo{Turn: uint64(turn), Entries: int(entries), Tokens: int64(tokens)}, nil
}

// PrefixMode is what a prefix run does with the previous turn's window.
type PrefixMode int32

const (
	// PrefixHold keeps the longest previous prefix that is still present and fits, and
	// selects the rest after it (re-anchoring when that gives up too much value).
	PrefixHold PrefixMode = C.CTXPACK_PREFIX_MODE_HOLD
	// PrefixMeasure selects as usual and reports how much of the previous window survives.
	PrefixMeasure PrefixMode = C.CTXPACK_PREFIX_MODE_MEASURE
)

// TurnOutcome is how a prefix run's turn went.
type TurnOutcome int32

const (
	TurnMeasured   TurnOutcome = C.CTXPACK_TURN_OUTCOME_MEASURED
	TurnHeld       TurnOutcome = C.CTXPACK_TURN_OUTCOME_HELD
	TurnAnchored   TurnOutcome = C.CTXPACK_TURN_OUTCOME_ANCHORED
	TurnReanchored TurnOutcome = C.CTXPACK_TURN_OUTCOME_REANCHORED
)

// DifferenceReason is why the new window stops matching the previous one.
type DifferenceReason int32

const (
	DifferenceRemoved      DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_REMOVED
	DifferenceEdited       DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_EDITED
	DifferenceReordered    DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_REORDERED
	DifferenceInserted     DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_INSERTED
	DifferenceBudget       DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_BUDGET
	DifferenceGroupChanged DifferenceReason = C.CTXPACK_DIFFERENCE_REASON_GROUP_CHANGED
)

// PrefixOptions are the options of a prefix run; the zero value is Hold with the
// defaults.
type PrefixOptions struct {
	Mode PrefixMode
	// Conversation names the conversation (any bytes; empty for none). A previous state
	// made with another key is StatusInvalidState.
	Conversation []byte
	// CacheRule is the provider's caching rule for Reuse.CachedTokens: "" or "none",
	// "openai", "anthropic", "anthropic:MIN", "vllm", "blocks:N".
	CacheRule string
	// Thresholds, when not nil, replace the defaults (MaxValueLoss 0.05, LowWatermark 0.8).
	Thresholds *PrefixThresholds
}

// PrefixThresholds are Hold's thresholds.
type PrefixThresholds struct {
	// MaxValueLoss is the largest share of a fresh selection's value a turn may give up,
	// in [0, 1].
	MaxValueLoss float64
	// LowWatermark is the share of the target an anchor selects to at least, in (0, 1].
	LowWatermark float64
}

// Difference is where and why the new window stops matching the previous one.
type Difference struct {
	// Index is the index, in both windows, of the first differing item.
	Index  int
	Reason DifferenceReason
	// Item is the input position of the item the new window has there, or -1 when the
	// new window ends there.
	Item int
	// PreviousPosition is the input position, in the previous turn, of the previous
	// window's item there.
	PreviousPosition int
}

// Reuse is the reuse report of a prefix run (docs/prefix-cache.md §4).
type Reuse struct {
	Mode                            PrefixMode
	Outcome                         TurnOutcome
	Turn, TurnsSinceAnchor          uint64
	PreviousEntries, WindowEntries  int
	PreviousTokens, WindowTokens    int64
	KeptEntries                     int
	KeptTokens, CachedTokens        int64
	AnchorTarget                    int64
	FreshValue, Value, ValueGivenUp float64
	// Difference is nil when the previous window is a prefix of the new one (or there was
	// none).
	Difference *Difference
	// JSON is the report's JSON form.
	JSON string
}

// PrefixRun is the outcome of RunPrefix.
type PrefixRun struct {
	Result Result
	Reuse  Reuse
	// State is this turn's state, for the next one (owned by the caller: Close it).
	State *PrefixState
}

// RunPrefix runs the pipeline over items with the previous turn's state (nil on a first
// turn); see RunPrefixList.
func (p *Pipeline) RunPrefix(items []Item, budget *Budget, opts *RunOptions, prefix *PrefixOptions, previous *PrefixState) (PrefixRun, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return PrefixRun{}, err
	}
	defer list.Close()
	return p.RunPrefixList(list, budget, opts, prefix, previous)
}

// RunPrefixList runs the pipeline over an item list with the previous turn's state (nil
// on a first turn; a closed one is StatusNullArgument), in Measure or Hold mode (prefix
// nil: Hold with the defaults), and returns the result, the reuse report and this turn's
// state. Safe for concurrent use.
func (p *Pipeline) RunPrefixList(list *ItemList, budget *Budget, opts *RunOptions, prefix *PrefixOptions, previous *PrefixState) (PrefixRun, error) {
	return p.runPrefix(list, budget, opts, prefix, previous, nil)
}

// RunPrefixContext is RunPrefix that stops when ctx is done (see RunContext): a
// cancelled run returns no state, so the previous one stays the conversation's state.
func (p *Pipeline) RunPrefixContext(ctx context.Context, items []Item, budget *Budget, opts *RunOptions, prefix *PrefixOptions, previous *PrefixState) (PrefixRun, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return PrefixRun{}, err
	}
	defer list.Close()
	return p.RunPrefixListContext(ctx, list, budget, opts, prefix, previous)
}

// RunPrefixListContext is RunPrefixList that stops when ctx is done (see
// RunPrefixContext).
func (p *Pipeline) RunPrefixListContext(ctx context.Context, list *ItemList, budget *Budget, opts *RunOptions, prefix *PrefixOptions, previous *PrefixState) (PrefixRun, error) {
	var out PrefixRun
	err := withCancel(ctx, func(token *C.ctxpack_cancel_token) (err error) {
		out, err = p.runPrefix(list, budget, opts, prefix, previous, token)
		return err
	})
	return out, err
}

// runPrefix is RunPrefixList, cancellable when token is not nil.
func (p *Pipeline) runPrefix(list *ItemList, budget *Budget, opts *RunOptions, prefix *PrefixOptions, previous *PrefixState,
	token *C.ctxpack_cancel_token) (PrefixRun, error) {
	defer runtime.KeepAlive(p)
	defer runtime.KeepAlive(list)
	defer runtime.KeepAlive(budget)
	defer runtime.KeepAlive(previous)
	if previous != nil && previous.ptr() == nil {
		// A closed state is not a first turn: say so rather than anchor afresh.
		return PrefixRun{}, &Error{Status: StatusNullArgument, Message: "previous is a closed PrefixState"}
	}
	var a arena
	defer a.free()
	copts := cArray[C.ctxpack_run_options](&a, 1)
	C.ctxpack_run_options_init(&copts[0], C.size_t(unsafe.Sizeof(copts[0])))
	if opts != nil {
		copts[0].trace_detail = C.int32_t(opts.Trace)
	}
	copts[0].cancel = token // C memory
	o := cPrefixOptions(&a, prefix)
	var res *C.ctxpack_result
	var state *C.ctxpack_prefix_state
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_run_prefix(p.ptr(), list.ptr(), budget.ptr(), &copts[0], o, previous.ptr(), &res, &state, &cerr)
	if err := takeError(status, cerr); err != nil {
		return PrefixRun{}, err
	}
	defer C.ctxpack_result_free(res)
	next := newPrefixState(state)
	fail := func(err error) (PrefixRun, error) {
		next.Close()
		return PrefixRun{}, err
	}
	result, err := readResult(res)
	if err != nil {
		return fail(err)
	}
	reuse, err := readReuse(res)
	if err != nil {
		return fail(err)
	}
	return PrefixRun{Result: result, Reuse: reuse, State: next}, nil
}

// cPrefixOptions writes prefix (nil: Hold with the defaults) as a C struct in the arena
// (it points to the arena's copies of the strings).
func cPrefixOptions(a *arena, prefix *PrefixOptions) *C.ctxpack_prefix_options {
	popts := cArray[C.ctxpack_prefix_options](a, 1)
	o := &popts[0]
	C.ctxpack_prefix_options_init(o, C.size_t(unsafe.Sizeof(*o)))
	if prefix != nil {
		o.mode = C.int32_t(prefix.Mode)
		o.conversation = a.str(string(prefix.Conversation))
		o.cache_rule = a.str(prefix.CacheRule)
		if t := prefix.Thresholds; t != nil {
			o.custom_thresholds = 1
			o.max_value_loss, o.low_watermark = C.double(t.MaxValueLoss), C.double(t.LowWatermark)
		}
	}
	return o
}

// readReuse copies the reuse report of a prefix run's result.
func readReuse(res *C.ctxpack_result) (Reuse, error) {
	var r C.ctxpack_prefix_reuse
	C.ctxpack_prefix_reuse_init(&r, C.size_t(unsafe.Sizeof(r)))
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_result_prefix_reuse(res, &r, &cerr), cerr); err != nil {
		return Reuse{}, err
	}
	var str *C.ctxpack_string
	if err := takeError(C.ctxpack_result_prefix_reuse_json(res, &str, &cerr), cerr); err != nil {
		return Reuse{}, err
	}
	return reuseOf(&r, str)
}

// reuseOf copies a reuse report and its JSON form (freeing str).
func reuseOf(r *C.ctxpack_prefix_reuse, str *C.ctxpack_string) (Reuse, error) {
	defer C.ctxpack_string_free(str)
	out := Reuse{
		Mode: PrefixMode(r.mode), Outcome: TurnOutcome(r.outcome),
		Turn: uint64(r.turn), TurnsSinceAnchor: uint64(r.turns_since_anchor),
		PreviousEntries: int(r.previous_entries), PreviousTokens: int64(r.previous_tokens),
		WindowEntries: int(r.window_entries), WindowTokens: int64(r.window_tokens),
		KeptEntries: int(r.kept_entries), KeptTokens: int64(r.kept_tokens),
		CachedTokens: int64(r.cached_tokens), AnchorTarget: int64(r.anchor_target),
		FreshValue: float64(r.fresh_value), Value: float64(r.value), ValueGivenUp: float64(r.value_given_up),
	}
	if r.has_difference != 0 {
		item := -1
		if r.difference_item != ^C.size_t(0) {
			item = int(r.difference_item)
		}
		out.Difference = &Difference{
			Index: int(r.difference_index), Reason: DifferenceReason(r.difference_reason),
			Item: item, PreviousPosition: int(r.difference_previous_position),
		}
	}
	var v C.ctxpack_str
	if err := check(C.ctxpack_string_value(str, &v)); err != nil {
		return Reuse{}, err
	}
	out.JSON = goString(v)
	return out, nil
}
