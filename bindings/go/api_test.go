package ctxpack_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

func TestVersion(t *testing.T) {
	if ctxpack.Version() != ctxpack.HeaderVersion {
		t.Errorf("library %s, header %s", ctxpack.Version(), ctxpack.HeaderVersion)
	}
	if ctxpack.VersionNumber() != ctxpack.HeaderVersionNumber {
		t.Errorf("library %d, header %d", ctxpack.VersionNumber(), ctxpack.HeaderVersionNumber)
	}
}

// Reserved slots shrink the room of every kind; slots that can never be honoured are
// refused when the budget is built.
func TestBudgetRejectsSlotsThatCannotFit(t *testing.T) {
	b, err := ctxpack.NewBudget(1000, 500, ctxpack.WithOutputReserve(100), ctxpack.WithReservedSlot("Memory", 50),
		ctxpack.WithSafetyMargin(10))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err = ctxpack.NewBudget(1000, 500, ctxpack.WithReservedSlot("Memory", 400), ctxpack.WithReservedSlot("Tool", 200))
	if !errors.Is(err, ctxpack.StatusInvalidBudget) || !strings.Contains(err.Error(), "must be <= target_tokens (500)") {
		t.Fatalf("got %v", err)
	}
}

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// Each built-in scorer, run alone over the same items (Scorer.Score).
func TestBuiltInScorers(t *testing.T) {
	now := jan2024.AddDate(0, 0, 10)
	items := []ctxpack.Item{
		{Content: "a", Tokens: 1, Kind: "SystemPrompt", Priority: ctxpack.Int64(1), Tags: []string{"x"},
			Timestamp: jan2024, Metadata: map[string]string{"cupel:trust": "0.9", "team": "red"}, FutureRelevanceHint: ctxpack.Float64(2)},
		{Content: "b", Tokens: 1, Kind: "Document", Priority: ctxpack.Int64(5), Tags: []string{"x", "y"},
			Timestamp: jan2024.AddDate(0, 0, 5), FutureRelevanceHint: ctxpack.Float64(0.25)},
		{Content: "c", Tokens: 1, Tags: []string{"z"}, Metadata: map[string]string{"team": "blue"}},
	}
	kindW := must(ctxpack.NewKindScorerWithWeights(map[string]float64{"Document": 1, "Message": 0.5}))
	cases := []struct {
		name   string
		scorer func() (*ctxpack.Scorer, error)
		want   []float64
	}{
		{"recency", ctxpack.NewRecencyScorer, []float64{0, 1, 0}},
		{"priority", ctxpack.NewPriorityScorer, []float64{0, 1, 0}},
		{"kind", ctxpack.NewKindScorer, []float64{1, 0.4, 0.2}},
		{"kind weights", func() (*ctxpack.Scorer, error) { return kindW, nil }, []float64{0, 1, 0.5}},
		// Matched weight over the total weight (1.5).
		{"tag", func() (*ctxpack.Scorer, error) { return ctxpack.NewTagScorer(map[string]float64{"x": 1, "z": 0.5}) }, []float64{2.0 / 3, 2.0 / 3, 1.0 / 3}},
		{"reflexive", ctxpack.NewReflexiveScorer, []float64{1, 0.25, 0}},
		{"metadata trust", func() (*ctxpack.Scorer, error) { return ctxpack.NewMetadataTrustScorer(0.3) }, []float64{0.9, 0.3, 0.3}},
		{"metadata key", func() (*ctxpack.Scorer, error) { return ctxpack.NewMetadataKeyScorer("team", "blue", 2) }, []float64{1, 1, 2}},
		{"scaled", func() (*ctxpack.Scorer, error) { return ctxpack.NewScaledScorer(kindW) }, []float64{0, 1, 0.5}},
		{"decay window", func() (*ctxpack.Scorer, error) {
			return ctxpack.NewDecayScorer(ctxpack.DecayConfig{Curve: ctxpack.WindowDecay(7 * 24 * time.Hour), Now: now})
		}, []float64{0, 1, 0.5}},
		{"decay exponential", func() (*ctxpack.Scorer, error) {
			return ctxpack.NewDecayScorer(ctxpack.DecayConfig{Curve: ctxpack.ExponentialDecay(5 * 24 * time.Hour), Now: now,
				NullTimestampScore: ctxpack.Float64(0.1)})
		}, []float64{0.25, 0.5, 0.1}},
		{"decay step", func() (*ctxpack.Scorer, error) {
			return ctxpack.NewDecayScorer(ctxpack.DecayConfig{Curve: ctxpack.StepDecay(
				ctxpack.DecayWindow{MaxAge: 6 * 24 * time.Hour, Score: 0.9},
				ctxpack.DecayWindow{MaxAge: 30 * 24 * time.Hour, Score: 0.4}), Now: now})
		}, []float64{0.4, 0.9, 0.5}},
	}
	for _, c := range cases {
		s, err := c.scorer()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, err := s.Score(items)
		if err != nil || !near(got, c.want) {
			t.Errorf("%s: scores %v (%v), want %v", c.name, got, err, c.want)
		}
		if s != kindW {
			s.Close()
		}
	}
	kindW.Close()
	// Frequency: the share of peers sharing a tag (a and b share x; c shares nothing).
	freq := must(ctxpack.NewFrequencyScorer())
	defer freq.Close()
	if got := must(freq.Score(items)); !near(got, []float64{0.5, 0.5, 0}) {
		t.Errorf("frequency: %v", got)
	}
}

func TestBuiltInSlicersAndPlacers(t *testing.T) {
	items := []ctxpack.Item{
		{Content: "m1", Tokens: 40, Kind: "Message"},
		{Content: "d1", Tokens: 50, Kind: "Document"},
		{Content: "m2", Tokens: 30, Kind: "Message"},
		{Content: "t1", Tokens: 20, Kind: "ToolOutput"},
	}
	scores := []float64{0.9, 0.8, 0.7, 0.1}
	budget := newBudget(t, 100, 100)
	greedy := must(ctxpack.NewGreedySlicer())
	defer greedy.Close()
	slicers := map[string]func() (*ctxpack.Slicer, error){
		"greedy": ctxpack.NewGreedySlicer,
		"knapsack": func() (*ctxpack.Slicer, error) {
			return ctxpack.NewKnapsackSlicer(10, 0)
		},
		"quota": func() (*ctxpack.Slicer, error) {
			return ctxpack.NewQuotaSlicer(greedy, ctxpack.QuotaEntry{Kind: "Message", Require: 0, Cap: 40})
		},
		"count quota": func() (*ctxpack.Slicer, error) {
			return ctxpack.NewCountQuotaSlicer(greedy, ctxpack.ScarcityDegrade,
				ctxpack.CountQuotaEntry{Kind: "ToolOutput", RequireCount: 1, CapCount: 1},
				ctxpack.CountQuotaEntry{Kind: "Memory", RequireCount: 1, CapCount: 2})
		},
		"count-constrained knapsack": func() (*ctxpack.Slicer, error) {
			return ctxpack.NewCountConstrainedKnapsackSlicer(10, 0, ctxpack.ScarcityDegrade,
				ctxpack.CountQuotaEntry{Kind: "Message", RequireCount: 0, CapCount: 1})
		},
	}
	// Densities: m2 .0233, m1 .0225, d1 .016, t1 .005 (spec 04).
	want := map[string][]string{
		"greedy":   {"m2", "m1", "t1"}, // by density; d1 no longer fits
		"knapsack": {"d1", "m1"},       // value 1.7 (ties with m1 m2 t1)
		// Shares of the 100 tokens by mass: Document 35, Message min(50, cap 40), ToolOutput 14.
		"quota":                      {"m2"},
		"count quota":                {"t1", "m2", "m1"}, // t1 committed first, then greedy
		"count-constrained knapsack": {"d1", "m1"},       // at most one Message
	}
	for name, build := range slicers {
		s, err := build()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		res, err := s.Slice(items, scores, budget)
		s.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got []string
		for _, i := range res.Selected {
			got = append(got, items[i].Content)
		}
		if !sameSet(got, want[name]) {
			t.Errorf("%s selected %v, want %v", name, got, want[name])
		}
		if name == "count quota" {
			wantShort := []ctxpack.Shortfall{{Kind: "Memory", RequiredCount: 1, SatisfiedCount: 0}}
			if !reflect.DeepEqual(res.Shortfalls, wantShort) {
				t.Errorf("shortfalls %+v", res.Shortfalls)
			}
		}
	}

	chrono := must(ctxpack.NewChronologicalPlacer())
	ushaped := must(ctxpack.NewUShapedPlacer())
	defer chrono.Close()
	defer ushaped.Close()
	timed := []ctxpack.Item{day("c", 1, 3), day("a", 1, 1), {Content: "none", Tokens: 1}, day("b", 1, 2)}
	if got := must(chrono.Place(timed, []float64{1, 1, 1, 1})); !reflect.DeepEqual(got, []int{1, 3, 0, 2}) {
		t.Errorf("chronological: %v", got)
	}
	if got := must(ushaped.Place(timed, []float64{0.1, 0.9, 0.5, 0.7})); !reflect.DeepEqual(got, []int{1, 2, 0, 3}) {
		t.Errorf("u-shaped: %v", got)
	}
}

func sameSet(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestReport(t *testing.T) {
	items := []ctxpack.Item{
		{Content: "sys", Tokens: 10, Kind: "SystemPrompt", Pinned: true},
		day("old", 30, 0), day("dup", 10, 1), day("dup", 10, 2), day("new", 30, 3),
		{Content: "neg", Tokens: -1}, {Content: "zero", Tokens: 0},
	}
	res, err := newPipeline(t, recency(t)).Run(items, newBudget(t, 100, 60), &ctxpack.RunOptions{Trace: ctxpack.TraceItem})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.TotalCandidates != len(items) || r.TotalTokensConsidered != 89 {
		t.Errorf("summary %d %d", r.TotalCandidates, r.TotalTokensConsidered)
	}
	if len(r.Included) != len(res.Indices) {
		t.Fatalf("included %d, selected %d", len(r.Included), len(res.Indices))
	}
	for k, e := range r.Included {
		if e.Index != res.Indices[k] || e.Score != res.Scores[k] || e.Reason != res.Reasons[k] {
			t.Errorf("included[%d] %+v differs from the result", k, e)
		}
	}
	reasons := map[string]ctxpack.ExcludedEntry{}
	for _, e := range r.Excluded {
		reasons[items[e.Index].Content] = e
	}
	if e := reasons["neg"]; e.Reason != ctxpack.ExclusionNegativeTokens || e.Name != "NegativeTokens" || e.Tokens != -1 {
		t.Errorf("neg: %+v", e)
	}
	if e := reasons["dup"]; e.Reason != ctxpack.ExclusionDeduplicated || e.DeduplicatedAgainst != "dup" || e.Index != 2 {
		t.Errorf("dup: %+v", e)
	}
	if e := reasons["old"]; e.Reason != ctxpack.ExclusionBudgetExceeded || e.ItemTokens != 30 {
		t.Errorf("old: %+v", e)
	}
	stages := map[ctxpack.PipelineStage]bool{}
	itemEvents := 0
	for _, ev := range r.Events {
		stages[ev.Stage] = true
		if ev.ItemIndex != nil {
			itemEvents++
		}
	}
	if len(stages) != 5 || itemEvents == 0 {
		t.Errorf("events: stages %v, %d item events", stages, itemEvents)
	}
	var wire map[string]interface{}
	if err := json.Unmarshal([]byte(r.JSON), &wire); err != nil || !strings.Contains(r.JSON, "NegativeTokens") {
		t.Errorf("JSON %q: %v", r.JSON, err)
	}
	// Untraced runs carry no report.
	if res := must(newPipeline(t, recency(t)).Run(items, newBudget(t, 100, 60), nil)); res.Report != nil {
		t.Error("an untraced run has a report")
	}
}

func TestOverflowProceed(t *testing.T) {
	items := []ctxpack.Item{{Content: "p", Tokens: 80, Pinned: true}, day("a", 10, 0)}
	p := newPipeline(t, recency(t), ctxpack.WithOverflowStrategy(ctxpack.OverflowProceed))
	res := must(p.Run(items, newBudget(t, 100, 50), nil))
	if res.Overflow == nil || res.Overflow.TokensOverBudget != 30 || !reflect.DeepEqual(res.Overflow.Items, []int{0}) {
		t.Fatalf("overflow %+v", res.Overflow)
	}
	truncate := newPipeline(t, recency(t), ctxpack.WithOverflowStrategy(ctxpack.OverflowTruncate))
	if res := must(truncate.Run(items, newBudget(t, 100, 50), nil)); res.Overflow != nil {
		t.Errorf("truncate reported %+v", res.Overflow)
	}
}

func TestBudgetOptions(t *testing.T) {
	b := newBudget(t, 1000, 500, ctxpack.WithOutputReserve(100), ctxpack.WithReservedSlot("Memory", 50), ctxpack.WithSafetyMargin(10))
	items := []ctxpack.Item{day("a", 300, 0), day("b", 150, 1)}
	// Effective target: min(500, 1000-100) - 50 reserved = 450, less the 10% margin = 405.
	// b (the more recent) takes 150; a (300) would fit 450 but not 405.
	res := must(newPipeline(t, recency(t)).Run(items, b, nil))
	if !reflect.DeepEqual(res.Indices, []int{1}) {
		t.Errorf("indices %v", res.Indices)
	}
	if _, err := ctxpack.NewBudget(100, 50, ctxpack.WithReservedSlot("Memory", 1), ctxpack.WithReservedSlot("memory", 1)); !errors.Is(err, ctxpack.StatusInvalidBudget) {
		t.Errorf("duplicate slot kinds: %v", err)
	}
}

func TestItemList(t *testing.T) {
	list := must(ctxpack.NewItemList(day("a", 1, 0)))
	defer list.Close()
	err := list.Push(day("b", 1, 1), ctxpack.Item{Content: "", Tokens: 1}, day("c", 1, 2))
	if !errors.Is(err, ctxpack.StatusEmptyContent) || !strings.Contains(err.Error(), "item 1:") {
		t.Errorf("push: %v", err)
	}
	if n := must(list.Len()); n != 1 {
		t.Errorf("a failed push appended: len %d", n)
	}
	if err := list.Push(day("b", 1, 1)); err != nil {
		t.Fatal(err)
	}
	res := must(newPipeline(t, recency(t)).RunList(list, newBudget(t, 10, 10), nil))
	if !reflect.DeepEqual(res.Indices, []int{0, 1}) {
		t.Errorf("indices %v", res.Indices)
	}
	if err := list.Clear(); err != nil || must(list.Len()) != 0 {
		t.Errorf("clear: %v", err)
	}
	list.Close()
	if _, err := list.Len(); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("closed list: %v", err)
	}
}

func TestCloseIsSafeFromManyGoroutinesAtOnce(t *testing.T) {
	for round := 0; round < 50; round++ {
		p := must(ctxpack.NewPresetPipeline("Chat"))
		b := must(ctxpack.NewBudget(10, 10))
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Close(); err != nil {
					t.Error(err)
				}
				b.Close()
			}()
		}
		wg.Wait()
		if _, err := p.Run([]ctxpack.Item{{Content: "a", Tokens: 1}}, b, nil); !errors.Is(err, ctxpack.StatusNullArgument) {
			t.Fatalf("a closed pipeline: got %v", err)
		}
	}
}
