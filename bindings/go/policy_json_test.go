package ctxpack_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

const policyWithTypo = `{"scorers": [{"type": "recency", "weight": 1, "wieght": 2}], "futureOption": true}`

func TestPolicyJSONLenientReadReturnsWarnings(t *testing.T) {
	p, warnings, err := ctxpack.NewPipelineFromPolicyJSONWith(policyWithTypo, ctxpack.JSONReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := []ctxpack.JSONWarning{
		{Kind: ctxpack.WarningUnknownProperty, Path: "futureOption", Message: "unknown property; ignored",
			Text: "futureOption: unknown property; ignored"},
		{Kind: ctxpack.WarningUnknownProperty, Path: "scorers[0].wieght", Message: "unknown property; ignored",
			Text: "scorers[0].wieght: unknown property; ignored"},
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings %+v\nwant %+v", warnings, want)
	}
	if warnings[1].String() != warnings[1].Text {
		t.Errorf("String() %q", warnings[1].String())
	}
	if _, err := p.Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil); err != nil {
		t.Fatal(err)
	}
	// A clean document has no warning, and the plain reader accepts the typo too.
	_, warnings, err = ctxpack.NewPipelineFromPolicyJSONWith(`{"scorers": [{"type": "recency", "weight": 1}]}`, ctxpack.JSONReadOptions{Strict: true})
	if err != nil || len(warnings) != 0 {
		t.Errorf("clean strict read: %v, %v", warnings, err)
	}
	plain := must(ctxpack.NewPipelineFromPolicyJSON(policyWithTypo))
	plain.Close()
}

func TestPolicyJSONStrictReadFails(t *testing.T) {
	p, warnings, err := ctxpack.NewPipelineFromPolicyJSONWith(policyWithTypo, ctxpack.JSONReadOptions{Strict: true})
	var e *ctxpack.Error
	if !errors.As(err, &e) || e.Status != ctxpack.StatusInvalidPolicy || !strings.Contains(e.Message, "futureOption: unknown property") {
		t.Fatalf("strict read: %v", err)
	}
	if p != nil || warnings != nil {
		t.Errorf("a failed read returned %v, %v", p, warnings)
	}
}

// The .NET reading rules a lenient read follows, each with its warning.
func TestPolicyJSONDotNetRules(t *testing.T) {
	doc := `{"scorers": [{"weight": 1}, {"type": "kind", "weight": 1, "kindWeights": {"Message": 1, "message": 2}}]}`
	p, warnings, err := ctxpack.NewPipelineFromPolicyJSONWith(doc, ctxpack.JSONReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kinds := []ctxpack.JSONWarningKind{}
	paths := []string{}
	for _, w := range warnings {
		kinds, paths = append(kinds, w.Kind), append(paths, w.Path)
	}
	if want := []ctxpack.JSONWarningKind{ctxpack.WarningMissingScorerType, ctxpack.WarningRepeatedKind}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v (%v)", kinds, want, warnings)
	}
	if want := []string{"scorers[0].type", "scorers[1].kindWeights.message"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	// The missing type read as recency, the repeated kind keeping the last value.
	text := must(p.PolicyJSON(false))
	if !strings.Contains(text, `{"type":"recency","weight":1}`) || !strings.Contains(text, `"kindWeights":{"Message":2}`) {
		t.Errorf("policy read as %s", text)
	}
	if _, _, err := ctxpack.NewPipelineFromPolicyJSONWith(doc, ctxpack.JSONReadOptions{Strict: true}); !errors.Is(err, ctxpack.StatusInvalidPolicy) ||
		!strings.Contains(err.Error(), "scorers[0].type: is required") {
		t.Errorf("strict: %v", err)
	}
}

func TestScorerRegistryRunsHostScorer(t *testing.T) {
	reg := must(ctxpack.NewScorerRegistry())
	defer reg.Close()
	var calls atomic.Int32
	err := reg.RegisterFunc("semanticSimilarity", func(items []ctxpack.Item, scores []float64) error {
		calls.Add(1)
		return byLength(items, scores)
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh := must(ctxpack.NewRecencyScorer())
	if err := reg.Register("freshness", fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Close() // the registry keeps its own reference
	if got, want := reg.Names(), []string{"semanticSimilarity", "freshness"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	// The names compare case-insensitively.
	doc := `{"scorers": [{"type": "SEMANTICSIMILARITY", "weight": 1}]}`
	p, warnings, err := ctxpack.NewPipelineFromPolicyJSONWith(doc, ctxpack.JSONReadOptions{Strict: true, Registry: reg})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("read: %v, %v", warnings, err)
	}
	defer p.Close()
	items := []ctxpack.Item{day("short", 10, 2), day("a much longer one", 10, 0), day("middling", 10, 1)}
	res := must(p.Run(items, newBudget(t, 20, 20), nil))
	if calls.Load() == 0 {
		t.Fatal("the host scorer was not called")
	}
	// The two longest contents fit, placed chronologically, with the host's scores.
	if want := []int{1, 2}; !reflect.DeepEqual(res.Indices, want) {
		t.Errorf("indices %v, want %v", res.Indices, want)
	}
	if want := []float64{0.17, 0.08}; !reflect.DeepEqual(res.Scores, want) {
		t.Errorf("scores %v, want %v", res.Scores, want)
	}
	// Without the registry the name is unknown; an unknown name lists the registered ones.
	if _, _, err := ctxpack.NewPipelineFromPolicyJSONWith(doc, ctxpack.JSONReadOptions{}); !errors.Is(err, ctxpack.StatusInvalidPolicy) ||
		strings.Contains(err.Error(), "registered:") {
		t.Errorf("without the registry: %v", err)
	}
	_, _, err = ctxpack.NewPipelineFromPolicyJSONWith(`{"scorers": [{"type": "vibes", "weight": 1}]}`, ctxpack.JSONReadOptions{Registry: reg})
	if !errors.Is(err, ctxpack.StatusInvalidPolicy) || !strings.Contains(err.Error(), `"vibes"`) ||
		!strings.Contains(err.Error(), "registered: semanticSimilarity, freshness") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestScorerRegistryRejectsBadNames(t *testing.T) {
	reg := must(ctxpack.NewScorerRegistry())
	defer reg.Close()
	s := recency(t)
	for _, name := range []string{"", "  ", "recency", "MetadataKey"} {
		if err := reg.Register(name, s); !errors.Is(err, ctxpack.StatusInvalidArgument) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if err := reg.Register("x", nil); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("nil scorer: %v", err)
	}
	if err := reg.RegisterFunc("x", nil); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("nil function: %v", err)
	}
	if n := reg.Names(); len(n) != 0 {
		t.Errorf("names %v", n)
	}
}

// A registered view scorer scores what the copying one does.
func TestScorerRegistryRunsHostViewScorer(t *testing.T) {
	reg := must(ctxpack.NewScorerRegistry())
	defer reg.Close()
	if err := reg.RegisterViewFunc("x", nil); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("nil function: %v", err)
	}
	err := reg.RegisterViewFunc("byLength", func(items ctxpack.ItemViews, scores []float64) error {
		for i := range scores {
			scores[i] = float64(items.At(i).ContentLen()) / 100
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ctxpack.NewPipelineFromPolicyJSONWith(`{"scorers": [{"type": "byLength", "weight": 1}]}`, ctxpack.JSONReadOptions{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	items := []ctxpack.Item{day("short", 10, 2), day("a much longer one", 10, 0), day("middling", 10, 1)}
	res := must(p.Run(items, newBudget(t, 20, 20), nil))
	if want := []float64{0.17, 0.08}; !reflect.DeepEqual(res.Indices, []int{1, 2}) || !reflect.DeepEqual(res.Scores, want) {
		t.Errorf("indices %v scores %v, want [1 2] %v", res.Indices, res.Scores, want)
	}
}

// The host scorer lives while the registry or a pipeline built from a policy naming it
// holds it, and is destroyed when the last of them goes.
func TestRegisteredScorerLifetime(t *testing.T) {
	live := ctxpack.LiveCallbacks()
	reg := must(ctxpack.NewScorerRegistry())
	if err := reg.RegisterFunc("host", byLength); err != nil {
		t.Fatal(err)
	}
	p, _, err := ctxpack.NewPipelineFromPolicyJSONWith(`{"scorers": [{"type": "host", "weight": 1}]}`, ctxpack.JSONReadOptions{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
	if got := ctxpack.LiveCallbacks(); got != live+1 {
		t.Fatalf("live callbacks %d after closing the registry, want %d", got, live+1)
	}
	if _, err := p.Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if got := ctxpack.LiveCallbacks(); got != live {
		t.Fatalf("live callbacks %d after closing the pipeline, want %d", got, live)
	}
}

// The three budgets of .NET's round-trip tests, as .NET writes them.
const (
	dotnetBudget         = `{"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,"reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10}`
	dotnetBudgetIndented = "{\n  \"maxTokens\": 8000,\n  \"targetTokens\": 6000,\n  \"outputReserve\": 1000,\n" +
		"  \"reservedSlots\": {\n    \"Message\": 100,\n    \"SystemPrompt\": 200\n  },\n" +
		"  \"estimationSafetyMarginPercent\": 10\n}"
)

func TestBudgetJSONRoundTrip(t *testing.T) {
	b := newBudget(t, 8000, 6000, ctxpack.WithOutputReserve(1000), ctxpack.WithReservedSlot("Message", 100),
		ctxpack.WithReservedSlot("SystemPrompt", 200), ctxpack.WithSafetyMargin(10))
	if got := must(b.JSON(false)); got != dotnetBudget {
		t.Errorf("compact:\n%s\nwant\n%s", got, dotnetBudget)
	}
	if got := must(b.JSON(true)); got != dotnetBudgetIndented {
		t.Errorf("indented:\n%s\nwant\n%s", got, dotnetBudgetIndented)
	}
	for _, text := range []string{dotnetBudget, dotnetBudgetIndented} {
		read, warnings, err := ctxpack.NewBudgetFromJSON(text, ctxpack.JSONReadOptions{Strict: true})
		if err != nil || len(warnings) != 0 {
			t.Fatalf("read: %v, %v", warnings, err)
		}
		if got := must(read.JSON(false)); got != dotnetBudget {
			t.Errorf("round trip: %s", got)
		}
		if got := must(read.JSON(true)); got != dotnetBudgetIndented {
			t.Errorf("round trip indented: %s", got)
		}
		read.Close()
	}
	// A budget read from JSON runs like one built in Go.
	read, _, err := ctxpack.NewBudgetFromJSON(`{"maxTokens": 20, "targetTokens": 20}`, ctxpack.JSONReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	items := []ctxpack.Item{day("a", 10, 0), day("b", 10, 1), day("c", 10, 2)}
	p := newPipeline(t, recency(t))
	if got, want := must(p.Run(items, read, nil)), must(p.Run(items, newBudget(t, 20, 20), nil)); !reflect.DeepEqual(got, want) {
		t.Errorf("JSON budget selects %v, Go budget %v", got.Indices, want.Indices)
	}
}

func TestBudgetJSONWarningsAndErrors(t *testing.T) {
	b, warnings, err := ctxpack.NewBudgetFromJSON(`{"maxTokens": 100, "reservedSlots": {"Memory": 5, "memory": 0}, "x": 1}`, ctxpack.JSONReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var texts []string
	for _, w := range warnings {
		texts = append(texts, w.Text)
	}
	kinds := map[ctxpack.JSONWarningKind]bool{}
	for _, w := range warnings {
		kinds[w.Kind] = true
	}
	if len(warnings) != 3 || !kinds[ctxpack.WarningUnknownProperty] || !kinds[ctxpack.WarningMissingBudgetField] || !kinds[ctxpack.WarningRepeatedKind] {
		t.Errorf("warnings %q", texts)
	}
	if got, want := must(b.JSON(false)), `{"maxTokens":100,"targetTokens":0,"outputReserve":0,"reservedSlots":{"Memory":0},"estimationSafetyMarginPercent":0}`; got != want {
		t.Errorf("read as %s, want %s", got, want)
	}
	for doc, want := range map[string]string{
		`{"maxTokens": 1000, "targetTokens": 2000}`:      "targetTokens: 2000 cannot exceed maxTokens (1000)",
		`{"maxTokens": 10, "targetTokens": 5, "x": 1}`:   "x: unknown property",
		`{"maxTokens": 10}`:                              "targetTokens: is required",
		`{"scorers": [{"type": "recency", "weight": 1}]`: "$: malformed JSON",
	} {
		_, _, err := ctxpack.NewBudgetFromJSON(doc, ctxpack.JSONReadOptions{Strict: true})
		if !errors.Is(err, ctxpack.StatusInvalidBudget) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// The calls of policy_json.go under forced collections, over registries, pipelines and
// budgets nothing else references (see TestHandlesOutliveEveryCallUnderGC): a registry
// or budget finalized while the binding still passes its pointer to the library would
// show as a wrong answer, a crash, or a use-after-free report under -asan.
func TestPolicyJSONHandlesOutliveCallsUnderGC(t *testing.T) {
	items := gcStressItems(120)
	doc := `{"scorers": [{"type": "host", "weight": 1}, {"type": "recency", "weight": 1}], "placerType": "uShaped"}`
	registry := func() *ctxpack.ScorerRegistry {
		r := must(ctxpack.NewScorerRegistry())
		if err := r.RegisterFunc("host", byLength); err != nil {
			panic(err)
		}
		return r
	}
	ops := []gcStressOp{
		{"NewPipelineFromPolicyJSONWith", func() (interface{}, error) {
			p, _, err := ctxpack.NewPipelineFromPolicyJSONWith(doc, ctxpack.JSONReadOptions{Registry: registry()})
			if err != nil {
				return nil, err
			}
			r, err := p.Run(items, must(gcStressBudget()), nil)
			return r.Indices, err
		}},
		{"ScorerRegistry.Names", func() (interface{}, error) {
			return registry().Names(), nil
		}},
		{"NewBudgetFromJSON/Budget.JSON", func() (interface{}, error) {
			b, w, err := ctxpack.NewBudgetFromJSON(`{"maxTokens": 900, "targetTokens": 800, "x": 1}`, ctxpack.JSONReadOptions{})
			if err != nil {
				return nil, err
			}
			text, err := b.JSON(false)
			return [2]interface{}{text, len(w)}, err
		}},
	}
	want := make([]interface{}, len(ops))
	for i, op := range ops {
		want[i] = must(op.run())
	}
	stop := make(chan struct{})
	var collector sync.WaitGroup
	collector.Add(1)
	go func() {
		defer collector.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	var workers sync.WaitGroup
	var failures atomic.Int64
	for w := 0; w < 4; w++ {
		workers.Add(1)
		go func(w int) {
			defer workers.Done()
			for r := 0; r < 60; r++ {
				k := (w + r) % len(ops)
				got, err := ops[k].run()
				if err == nil && !reflect.DeepEqual(got, want[k]) {
					err = fmt.Errorf("answer %v, want %v", got, want[k])
				}
				if err != nil && failures.Add(1) == 1 {
					t.Errorf("%s: %v", ops[k].name, err)
				}
			}
		}(w)
	}
	workers.Wait()
	close(stop)
	collector.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d operations failed", n)
	}
}
