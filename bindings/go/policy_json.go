package ctxpack

// Policy and budget JSON with reading options (docs/policy-json.md): lenient or strict
// reading with the warnings of a lenient read, host scorers registered under type names,
// and the JSON form of budgets.

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// JSONWarningKind says what a lenient read of policy or budget JSON did instead of
// failing.
type JSONWarningKind int32

const (
	// WarningUnknownProperty: a property this version does not know (or a wrongly-cased
	// name) was ignored.
	WarningUnknownProperty JSONWarningKind = C.CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY
	// WarningMissingScorerType: a scorer entry without "type" was read as "recency", as
	// .NET reads it.
	WarningMissingScorerType JSONWarningKind = C.CTXPACK_JSON_WARNING_KIND_MISSING_SCORER_TYPE
	// WarningRepeatedKind: a "kindWeights" or "reservedSlots" key repeated an earlier
	// kind with other letter case; the last value was kept under the first spelling.
	WarningRepeatedKind JSONWarningKind = C.CTXPACK_JSON_WARNING_KIND_REPEATED_KIND
	// WarningMissingBudgetField: a budget without "maxTokens" or "targetTokens" had it
	// read as 0.
	WarningMissingBudgetField JSONWarningKind = C.CTXPACK_JSON_WARNING_KIND_MISSING_BUDGET_FIELD
)

// JSONWarning is one warning of a lenient read.
type JSONWarning struct {
	Kind JSONWarningKind
	// Path is the JSON path concerned ("scorers[0].wieght"; "$" for the document).
	Path string
	// Message says what the reader did ("unknown property; ignored").
	Message string
	// Text is Path, ": " and Message: the line to show a user.
	Text string
}

// String returns the warning's Text.
func (w JSONWarning) String() string { return w.Text }

// JSONReadOptions says how NewPipelineFromPolicyJSONWith and NewBudgetFromJSON read
// their document. The zero value reads leniently, with the built-in scorer types only.
type JSONReadOptions struct {
	// Strict makes each case a lenient read reports as a warning an error instead
	// (StatusInvalidPolicy, or StatusInvalidBudget for a budget).
	Strict bool
	// Registry holds the host scorer types a policy may name (nil: only the built-in
	// types). Budgets ignore it.
	Registry *ScorerRegistry
}

// ScorerRegistry holds host scorers registered under type names, so that a policy entry
// {"type": "<name>", "weight": w} runs them. Names compare ASCII case-insensitively;
// registering a name again replaces the earlier scorer. A registry may be used from many
// goroutines at once, Register included.
type ScorerRegistry struct{ h *handle }

// NewScorerRegistry creates an empty registry.
func NewScorerRegistry() (*ScorerRegistry, error) {
	var ptr *C.ctxpack_scorer_registry
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_scorer_registry_new(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return &ScorerRegistry{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_scorer_registry_free((*C.ctxpack_scorer_registry)(p))
	})}, nil
}

func (r *ScorerRegistry) ptr() *C.ctxpack_scorer_registry {
	if r == nil {
		return nil
	}
	return (*C.ctxpack_scorer_registry)(r.h.pointer())
}

// Close releases the registry. Pipelines built from policies naming its scorers keep
// their own references to them.
func (r *ScorerRegistry) Close() error { return r.h.close() }

// Register registers scorer (any scorer: a custom one from NewCustomScorer, or a
// built-in one) under the type name name. The registry keeps its own reference, so the
// scorer may be closed afterwards. A blank name or the name of a built-in scorer type
// ("recency", ..., "metadataKey", any case) is StatusInvalidArgument.
func (r *ScorerRegistry) Register(name string, scorer *Scorer) error {
	defer runtime.KeepAlive(r)
	defer runtime.KeepAlive(scorer)
	var a arena
	defer a.free()
	var cerr *C.ctxpack_error
	return takeError(C.ctxpack_scorer_registry_add(r.ptr(), a.str(name), scorer.ptr(), &cerr), cerr)
}

// RegisterFunc registers a custom scorer calling fn (see NewCustomScorer) under the
// type name name.
func (r *ScorerRegistry) RegisterFunc(name string, fn ScoreFunc) error {
	s, err := NewCustomScorer(fn)
	if err != nil {
		return err
	}
	defer s.Close()
	return r.Register(name, s)
}

// RegisterViewFunc registers a custom scorer over item views (see NewCustomViewScorer)
// under the type name name.
func (r *ScorerRegistry) RegisterViewFunc(name string, fn ScoreViewFunc) error {
	s, err := NewCustomViewScorer(fn)
	if err != nil {
		return err
	}
	defer s.Close()
	return r.Register(name, s)
}

// Names returns the registered names, in registration order.
func (r *ScorerRegistry) Names() []string {
	defer runtime.KeepAlive(r)
	var n C.size_t
	if check(C.ctxpack_scorer_registry_count(r.ptr(), &n)) != nil {
		return nil
	}
	names := make([]string, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var s C.ctxpack_str
		if check(C.ctxpack_scorer_registry_name(r.ptr(), i, &s)) == nil {
			names = append(names, goString(s))
		}
	}
	return names
}

// readOptions builds the C options of opts in a.
func readOptions(a *arena, opts JSONReadOptions) *C.ctxpack_json_read_options {
	defer runtime.KeepAlive(opts)
	o := (*C.ctxpack_json_read_options)(a.alloc(unsafe.Sizeof(C.ctxpack_json_read_options{})))
	C.ctxpack_json_read_options_init(o, C.size_t(unsafe.Sizeof(*o)))
	o.strict = flag(opts.Strict)
	o.registry = opts.Registry.ptr()
	return o
}

// takeWarnings copies and frees a warnings handle (nil: none).
func takeWarnings(w *C.ctxpack_json_warnings) ([]JSONWarning, error) {
	if w == nil {
		return nil, nil
	}
	defer C.ctxpack_json_warnings_free(w)
	var n C.size_t
	if err := check(C.ctxpack_json_warnings_count(w, &n)); err != nil {
		return nil, err
	}
	out := make([]JSONWarning, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var e C.ctxpack_json_warning
		C.ctxpack_json_warning_init(&e, C.size_t(unsafe.Sizeof(e)))
		var cerr *C.ctxpack_error
		if err := takeError(C.ctxpack_json_warnings_entry(w, i, &e, &cerr), cerr); err != nil {
			return nil, err
		}
		out = append(out, JSONWarning{
			Kind: JSONWarningKind(e.kind), Path: goString(e.path),
			Message: goString(e.message), Text: goString(e.text),
		})
	}
	return out, nil
}

// NewPipelineFromPolicyJSONWith builds a pipeline from a policy in its JSON form, read
// with opts, and returns the warnings of a lenient read (none when the document is
// clean). Errors are those of NewPipelineFromPolicyJSON; in strict mode each warning case
// is a StatusInvalidPolicy error instead. An unknown scorer type's message lists the
// built-in and then the registered names.
func NewPipelineFromPolicyJSONWith(json string, opts JSONReadOptions) (*Pipeline, []JSONWarning, error) {
	defer runtime.KeepAlive(opts)
	var a arena
	defer a.free()
	s, o := a.str(json), readOptions(&a, opts)
	var w *C.ctxpack_json_warnings
	p, err := newPipeline(func(out **C.ctxpack_pipeline, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_pipeline_new_policy_json_with(s, o, out, &w, e)
	})
	warnings, werr := takeWarnings(w)
	if err != nil {
		return nil, nil, err
	}
	if werr != nil {
		p.Close()
		return nil, nil, werr
	}
	return p, warnings, nil
}

// NewBudgetFromJSON reads a budget in the JSON form of the .NET library ("maxTokens",
// "targetTokens", "outputReserve", "reservedSlots", "estimationSafetyMarginPercent"),
// with opts (its Registry is not used), and returns the warnings of a lenient read.
// Every failure is StatusInvalidBudget, with a message starting with the JSON path.
func NewBudgetFromJSON(json string, opts JSONReadOptions) (*Budget, []JSONWarning, error) {
	var a arena
	defer a.free()
	s, o := a.str(json), readOptions(&a, JSONReadOptions{Strict: opts.Strict})
	var ptr *C.ctxpack_budget
	var w *C.ctxpack_json_warnings
	var cerr *C.ctxpack_error
	status := C.ctxpack_budget_new_json(s, o, &ptr, &w, &cerr)
	warnings, werr := takeWarnings(w)
	if err := takeError(status, cerr); err != nil {
		return nil, nil, err
	}
	b := &Budget{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_budget_free((*C.ctxpack_budget)(p))
	})}
	if werr != nil {
		b.Close()
		return nil, nil, werr
	}
	return b, warnings, nil
}

// JSON writes the budget in the JSON form of the .NET library, byte for byte what .NET
// writes: compact, or indented by two spaces when pretty.
func (b *Budget) JSON(pretty bool) (string, error) {
	defer runtime.KeepAlive(b)
	var str *C.ctxpack_string
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_budget_json(b.ptr(), flag(pretty), &str, &cerr), cerr); err != nil {
		return "", err
	}
	return takeString(str)
}

// takeString copies and frees a string the library created.
func takeString(str *C.ctxpack_string) (string, error) {
	defer C.ctxpack_string_free(str)
	var s C.ctxpack_str
	if err := check(C.ctxpack_string_value(str, &s)); err != nil {
		return "", err
	}
	return goString(s), nil
}
