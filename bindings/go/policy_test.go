package ctxpack_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

func TestPresets(t *testing.T) {
	want := []string{"Chat", "CodeReview", "Rag", "DocumentQa", "ToolUse", "LongRunning", "Debugging"}
	if got := ctxpack.Presets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("presets %v", got)
	}
	items := []ctxpack.Item{day("a", 10, 0), day("b", 10, 1)}
	for _, name := range append(want, "code-review", "TOOL USE") {
		p, err := ctxpack.NewPresetPipeline(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := p.Run(items, newBudget(t, 100, 100), nil); err != nil {
			t.Errorf("%s: run: %v", name, err)
		}
		p.Close()
	}
	if _, err := ctxpack.NewPresetPipeline("Poetry"); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestPolicyJSONRoundTrip(t *testing.T) {
	kind := must(ctxpack.NewKindScorer())
	scorer := must(ctxpack.NewCompositeScorer(
		ctxpack.WeightedScorer{Scorer: recency(t), Weight: 2},
		ctxpack.WeightedScorer{Scorer: kind, Weight: 1}))
	cleanup(t, kind, scorer)
	original := newPipeline(t, scorer, ctxpack.WithOverflowStrategy(ctxpack.OverflowTruncate))
	text := must(original.PolicyJSON(false))
	for _, want := range []string{`"recency"`, `"kind"`, `"truncate"`} {
		if !strings.Contains(strings.ToLower(text), strings.ToLower(want)) {
			t.Errorf("policy JSON lacks %s: %s", want, text)
		}
	}
	pretty := must(original.PolicyJSON(true))
	if !strings.Contains(pretty, "\n  ") {
		t.Errorf("pretty JSON is not indented: %s", pretty)
	}
	rebuilt := must(ctxpack.NewPipelineFromPolicyJSON(text))
	defer rebuilt.Close()
	if again := must(rebuilt.PolicyJSON(false)); again != text {
		t.Errorf("round trip changed the policy:\n%s\n%s", text, again)
	}
	items := []ctxpack.Item{day("a", 30, 0), {Content: "m", Tokens: 30, Kind: "Memory"}, day("b", 30, 2)}
	budget := newBudget(t, 70, 70)
	a, b := must(original.Run(items, budget, nil)), must(rebuilt.Run(items, budget, nil))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("rebuilt pipeline selects %v, original %v", b.Indices, a.Indices)
	}
}

func TestPolicyJSONErrors(t *testing.T) {
	_, err := ctxpack.NewPipelineFromPolicyJSON(`{"scorers": [{"type": "recency", "weight": -1}]}`)
	var e *ctxpack.Error
	if !errors.As(err, &e) || e.Status != ctxpack.StatusInvalidPolicy || !strings.Contains(e.Message, "scorers[0].weight") {
		t.Errorf("bad weight: %v", err)
	}
	// A value a component rejects keeps the component's status.
	_, err = ctxpack.NewPipelineFromPolicyJSON(`{"scorers": [{"type": "kind", "weight": 1, "kindWeights": {"Message": -1}}]}`)
	if !errors.Is(err, ctxpack.StatusScorerConfig) {
		t.Errorf("negative kind weight: %v", err)
	}
	custom := must(ctxpack.NewCustomScorer(byLength))
	cleanup(t, custom)
	_, err = newPipeline(t, custom).PolicyJSON(false)
	if !errors.Is(err, ctxpack.StatusInvalidPolicy) || !strings.Contains(err.Error(), "custom") {
		t.Errorf("custom scorer: %v", err)
	}
}

func TestDryRunAndAnalytics(t *testing.T) {
	items := []ctxpack.Item{
		{Content: "sys", Tokens: 10, Kind: "SystemPrompt", Pinned: true},
		day("t1", 20, 1), day("t2", 20, 2), day("m", 20, 3),
	}
	items[1].Kind, items[2].Kind = "ToolOutput", "ToolOutput"
	inner := must(ctxpack.NewGreedySlicer())
	slicer := must(ctxpack.NewCountQuotaSlicer(inner, ctxpack.ScarcityDegrade,
		ctxpack.CountQuotaEntry{Kind: "ToolOutput", RequireCount: 1, CapCount: 2}))
	placer := must(ctxpack.NewChronologicalPlacer())
	p := must(ctxpack.NewPipeline(recency(t), slicer, placer))
	cleanup(t, inner, slicer, placer, p)
	budget := newBudget(t, 100, 60)

	dry := must(p.DryRun(items, budget))
	traced := must(p.Run(items, budget, &ctxpack.RunOptions{Trace: ctxpack.TraceItem}))
	if dry.Report == nil || !reflect.DeepEqual(dry.Indices, traced.Indices) || dry.Report.JSON == "" {
		t.Fatalf("dry run %+v, traced run %+v", dry, traced)
	}
	// sys (10) + m (20) + t2 (20) = 50 of max 100; kinds SystemPrompt, Message, ToolOutput; 2 of 3 timestamped.
	an := dry.Report.Analytics
	if !reflect.DeepEqual(dry.Indices, []int{2, 3, 0}) || an.BudgetUtilization != 0.5 || an.KindDiversity != 3 || an.TimestampCoverage != 2.0/3 {
		t.Errorf("indices %v, analytics %+v", dry.Indices, an)
	}
	wantQuota := []ctxpack.KindQuotaUtilization{{Kind: "ToolOutput", Mode: ctxpack.QuotaCount, Require: 1, Cap: 2, Actual: 1, Utilization: 0.5}}
	if !reflect.DeepEqual(an.QuotaUtilization, wantQuota) {
		t.Errorf("quota utilization %+v", an.QuotaUtilization)
	}
}

func TestBudgetSimulation(t *testing.T) {
	items := []ctxpack.Item{day("old", 30, 0), day("mid", 30, 1), day("new", 30, 2)}
	p := newPipeline(t, recency(t))
	// Under 90 tokens all three fit; 30 fewer and the oldest (lowest score) drops out.
	if got := must(p.MarginalItems(items, newBudget(t, 90, 90), 30)); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("marginal items %v", got)
	}
	b, found, err := p.MinBudgetFor(items, 0, 200)
	if err != nil || !found || b != 90 {
		t.Errorf("min budget for the oldest: %d %v %v", b, found, err)
	}
	if _, found, err := p.MinBudgetFor(items, 0, 80); err != nil || found {
		t.Errorf("min budget under a low ceiling: %v %v", found, err)
	}
	if _, _, err := p.MinBudgetFor(items, 7, 200); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("target out of range: %v", err)
	}
}

func TestSensitivity(t *testing.T) {
	items := []ctxpack.Item{day("old", 30, 0), day("new", 30, 1)}
	items[0].Priority, items[1].Priority = ctxpack.Int64(9), ctxpack.Int64(1)
	byRecency := newPipeline(t, recency(t))
	priority := must(ctxpack.NewPriorityScorer())
	cleanup(t, priority)
	byPriority := newPipeline(t, priority)
	s, err := ctxpack.CompareSensitivity(items, newBudget(t, 30, 30),
		ctxpack.SensitivityVariant{Label: "recency", Pipeline: byRecency},
		ctxpack.SensitivityVariant{Label: "priority", Pipeline: byPriority})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Labels, []string{"recency", "priority"}) ||
		!reflect.DeepEqual(s.Results[0].Indices, []int{1}) || !reflect.DeepEqual(s.Results[1].Indices, []int{0}) {
		t.Fatalf("variants %v %v %v", s.Labels, s.Results[0].Indices, s.Results[1].Indices)
	}
	want := []ctxpack.Swing{
		{Index: 0, Statuses: []ctxpack.ItemStatus{ctxpack.ItemExcluded, ctxpack.ItemIncluded}},
		{Index: 1, Statuses: []ctxpack.ItemStatus{ctxpack.ItemIncluded, ctxpack.ItemExcluded}},
	}
	if !reflect.DeepEqual(s.Swings, want) {
		t.Errorf("swings %+v", s.Swings)
	}
	if _, err := ctxpack.CompareSensitivity(items, newBudget(t, 30, 30), ctxpack.SensitivityVariant{Label: "one", Pipeline: byRecency}); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("one variant: %v", err)
	}
}
