package ctxpack

/*
#include "ctxpack.h"
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sort"
	"time"
	"unsafe"
)

// Scorer computes a relevance score for each item. Scorers are immutable; the library
// reference-counts them, so a composite, scaled scorer or pipeline built from a Scorer
// keeps working after the Scorer is closed.
type Scorer struct{ h *handle }

// Close releases this reference to the scorer.
func (s *Scorer) Close() error { return s.h.close() }

func (s *Scorer) ptr() *C.ctxpack_scorer {
	if s == nil {
		return nil
	}
	return (*C.ctxpack_scorer)(s.h.pointer())
}

// newScorer runs a scorer constructor and wraps the handle it creates.
func newScorer(construct func(**C.ctxpack_scorer, **C.ctxpack_error) C.ctxpack_status) (*Scorer, error) {
	var ptr *C.ctxpack_scorer
	var cerr *C.ctxpack_error
	if err := takeError(construct(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Scorer{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_scorer_free((*C.ctxpack_scorer)(p))
	})}, nil
}

// NewRecencyScorer ranks items by timestamp (RecencyScorer).
func NewRecencyScorer() (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_recency(o, e)
	})
}

// NewPriorityScorer ranks items by priority (PriorityScorer).
func NewPriorityScorer() (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_priority(o, e)
	})
}

// NewFrequencyScorer scores the share of peers sharing a tag (FrequencyScorer).
func NewFrequencyScorer() (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_frequency(o, e)
	})
}

// NewReflexiveScorer uses the future-relevance hint, clamped to [0, 1] (ReflexiveScorer).
func NewReflexiveScorer() (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_reflexive(o, e)
	})
}

// NewKindScorer scores by kind with the default weights (SystemPrompt 1.0, Memory 0.8,
// ToolOutput 0.6, Document 0.4, Message 0.2).
func NewKindScorer() (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_kind(o, e)
	})
}

// NewKindScorerWithWeights scores by kind with a weight table replacing the defaults
// (kinds compare ASCII case-insensitively and must be distinct; weights finite, >= 0).
func NewKindScorerWithWeights(weights map[string]float64) (*Scorer, error) {
	var a arena
	defer a.free()
	keys := sortedKeys(weights)
	ws := cArray[C.ctxpack_kind_weight](&a, len(keys))
	for i, k := range keys {
		ws[i] = C.ctxpack_kind_weight{kind: a.str(k), weight: C.double(weights[k])}
	}
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_kind_weights(firstOf(ws), C.size_t(len(ws)), o, e)
	})
}

// NewTagScorer scores by tag weights (TagScorer; tags are case-sensitive).
func NewTagScorer(weights map[string]float64) (*Scorer, error) {
	var a arena
	defer a.free()
	keys := sortedKeys(weights)
	ws := cArray[C.ctxpack_tag_weight](&a, len(keys))
	for i, k := range keys {
		ws[i] = C.ctxpack_tag_weight{tag: a.str(k), weight: C.double(weights[k])}
	}
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_tag(firstOf(ws), C.size_t(len(ws)), o, e)
	})
}

// WeightedScorer is a child of a composite scorer.
type WeightedScorer struct {
	Scorer *Scorer
	// Weight is the raw weight (finite, > 0); weights are normalised by their sum.
	Weight float64
}

// NewCompositeScorer is the weighted sum of its children's scores (CompositeScorer). The
// composite keeps its own reference to each child.
func NewCompositeScorer(children ...WeightedScorer) (*Scorer, error) {
	defer runtime.KeepAlive(children)
	var a arena
	defer a.free()
	cs := cArray[C.ctxpack_composite_child](&a, len(children))
	for i, c := range children {
		cs[i] = C.ctxpack_composite_child{scorer: c.Scorer.ptr(), weight: C.double(c.Weight)}
	}
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_composite(firstOf(cs), C.size_t(len(cs)), o, e)
	})
}

// NewScaledScorer min-max normalises the scores of inner (ScaledScorer).
func NewScaledScorer(inner *Scorer) (*Scorer, error) {
	defer runtime.KeepAlive(inner)
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_scaled(inner.ptr(), o, e)
	})
}

// DecayCurve is the curve of a decay scorer; build one with ExponentialDecay,
// WindowDecay or StepDecay.
type DecayCurve struct {
	kind     C.int32_t
	halfLife time.Duration
	maxAge   time.Duration
	windows  []DecayWindow
}

// DecayWindow is one step of a step curve: Score for ages below MaxAge.
type DecayWindow struct {
	MaxAge time.Duration
	Score  float64
}

// ExponentialDecay scores 2^(-age/halfLife).
func ExponentialDecay(halfLife time.Duration) DecayCurve {
	return DecayCurve{kind: C.CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL, halfLife: halfLife}
}

// WindowDecay scores 1 while age < maxAge, then 0.
func WindowDecay(maxAge time.Duration) DecayCurve {
	return DecayCurve{kind: C.CTXPACK_DECAY_CURVE_KIND_WINDOW, maxAge: maxAge}
}

// StepDecay scores the first window (youngest first) whose MaxAge exceeds the age, else
// the last window's score.
func StepDecay(windows ...DecayWindow) DecayCurve {
	return DecayCurve{kind: C.CTXPACK_DECAY_CURVE_KIND_STEP, windows: windows}
}

// DecayConfig configures NewDecayScorer.
type DecayConfig struct {
	Curve DecayCurve
	// Now is the fixed "now" of the clock; the zero time means the system clock, read
	// once per run.
	Now time.Time
	// NullTimestampScore is the score of items without a timestamp, in [0, 1]; nil
	// means 0.5.
	NullTimestampScore *float64
}

// NewDecayScorer scores freshness by age against a clock (DecayScorer).
func NewDecayScorer(cfg DecayConfig) (*Scorer, error) {
	var a arena
	defer a.free()
	c := (*C.ctxpack_decay_config)(a.alloc(unsafe.Sizeof(C.ctxpack_decay_config{})))
	C.ctxpack_decay_config_init(c, C.size_t(unsafe.Sizeof(*c)))
	c.curve = cfg.Curve.kind
	c.half_life_ns = C.int64_t(cfg.Curve.halfLife)
	c.max_age_ns = C.int64_t(cfg.Curve.maxAge)
	ws := cArray[C.ctxpack_decay_window](&a, len(cfg.Curve.windows))
	for i, w := range cfg.Curve.windows {
		ws[i] = C.ctxpack_decay_window{max_age_ns: C.int64_t(w.MaxAge), score: C.double(w.Score)}
	}
	c.windows, c.window_count = firstOf(ws), C.size_t(len(ws))
	if !cfg.Now.IsZero() {
		c.clock, c.fixed_now_ns = C.CTXPACK_CLOCK_KIND_FIXED, C.int64_t(cfg.Now.UnixNano())
	}
	if cfg.NullTimestampScore != nil {
		c.null_timestamp_score, c.has_null_timestamp_score = C.double(*cfg.NullTimestampScore), 1
	}
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_decay(c, o, e)
	})
}

// DefaultMetadataTrustScore is the conventional default of NewMetadataTrustScorer.
const DefaultMetadataTrustScore = C.CTXPACK_METADATA_TRUST_DEFAULT_SCORE

// NewMetadataTrustScorer scores the "cupel:trust" metadata value, clamped to [0, 1], or
// defaultScore when it is absent or unusable (MetadataTrustScorer).
func NewMetadataTrustScorer(defaultScore float64) (*Scorer, error) {
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_metadata_trust(C.double(defaultScore), o, e)
	})
}

// NewMetadataKeyScorer scores boost (finite, > 0) when metadata[key] == value, else 1
// (MetadataKeyScorer).
func NewMetadataKeyScorer(key, value string, boost float64) (*Scorer, error) {
	var a arena
	defer a.free()
	k, v := a.str(key), a.str(value)
	return newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_scorer_new_metadata_key(k, v, C.double(boost), o, e)
	})
}

// ScoreFunc is a custom scorer: it writes one score per item into scores (same length
// as items, pre-filled with NaN). Every score must be finite. Returning an error, or
// panicking, fails the run with StatusCallback and the error's (or panic's) text.
//
// The items are copies; items and scores must not be retained after the call. A
// pipeline may run on many goroutines at once, and then calls the function
// concurrently: it must be safe for concurrent use.
//
// Every call copies every item (tags and metadata included); ScoreViewFunc reads only
// the fields it uses.
type ScoreFunc func(items []Item, scores []float64) error

// ScoreViewFunc is ScoreFunc over views of the items: fields are read from the
// library's memory when asked, so a run copies nothing it does not use. The views and
// scores are valid only during the call (see ItemViews).
type ScoreViewFunc func(items ItemViews, scores []float64) error

// NewCustomScorer creates a scorer that calls fn once per run with every scoreable item
// (a batch scorer), copied into Items.
func NewCustomScorer(fn ScoreFunc) (*Scorer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "score function is nil"}
	}
	return NewCustomViewScorer(func(items ItemViews, scores []float64) error { return fn(items.Items(), scores) })
}

// NewCustomViewScorer creates a scorer that calls fn once per run with views of every
// scoreable item (a batch scorer).
func NewCustomViewScorer(fn ScoreViewFunc) (*Scorer, error) {
	if fn == nil {
		return nil, &Error{Status: StatusNullArgument, Message: "score function is nil"}
	}
	h := newCallbackHandle(fn)
	s, err := newScorer(func(o **C.ctxpack_scorer, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_go_scorer_new(C.uintptr_t(h), o, e)
	})
	if err != nil {
		dropCallbackHandle(h) // a failed constructor does not take user_data
	}
	return s, err
}

// Score scores every item against the whole list, in list order (the scorer contract:
// pinned and negative-token items are scored like any other here). The items are
// copied into a temporary list; ScoreList takes a list.
func (s *Scorer) Score(items []Item) ([]float64, error) {
	list, err := NewItemList(items...)
	if err != nil {
		return nil, err
	}
	defer list.Close()
	return s.ScoreList(list)
}

// ScoreList is Score over an item list: one score per item, in list order.
func (s *Scorer) ScoreList(list *ItemList) ([]float64, error) {
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(list)
	var n C.size_t
	if err := check(C.ctxpack_items_len(list.ptr(), &n)); err != nil {
		return nil, err
	}
	scores := make([]float64, int(n))
	var cerr *C.ctxpack_error
	status := C.ctxpack_scorer_score(s.ptr(), list.ptr(), (*C.double)(firstOf(scores)), n, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	return scores, nil
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// firstOf is the address of a slice's first element, or nil for an empty slice (the
// ABI accepts NULL for an array of length 0).
func firstOf[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}
