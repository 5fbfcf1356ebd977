package ctxpack_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// reflexiveGreedy is reflexive + greedy + chronological with opts.
func reflexiveGreedy(t *testing.T, opts ...ctxpack.PipelineOption) *ctxpack.Pipeline {
	t.Helper()
	sc, err := ctxpack.NewReflexiveScorer()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sl, err := ctxpack.NewGreedySlicer()
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	pl, err := ctxpack.NewChronologicalPlacer()
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	p, err := ctxpack.NewPipeline(sc, sl, pl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Greedy takes the 10-token question first (density 0.05 against 0.009), leaving 40 of
// 50: the 100-token log does not fit, its 20-token summary does.
func logAndQuestion() []ctxpack.Item {
	return []ctxpack.Item{
		{Content: "<100 tokens of test log>", Tokens: 100, FutureRelevanceHint: ctxpack.Float64(0.9),
			Variants: []ctxpack.Variant{{Content: "3 tests fail: rounding off by one cent", Tokens: 20, Quality: 0.5}}},
		{Content: "why did the build fail?", Tokens: 10, FutureRelevanceHint: ctxpack.Float64(0.5)},
	}
}

func TestVariantsALongItemIsPlacedAsItsSummary(t *testing.T) {
	p := reflexiveGreedy(t)
	defer p.Close()
	b, err := ctxpack.NewBudget(50, 50)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := p.Run(logAndQuestion(), b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Indices, []int{0, 1}) || !reflect.DeepEqual(r.Forms, []int{1, 0}) {
		t.Fatalf("indices %v forms %v", r.Indices, r.Forms)
	}
	if r.Reasons[0] != ctxpack.InclusionDowngraded || r.Reasons[0].String() != "Downgraded" || r.Reasons[1] != ctxpack.InclusionScored {
		t.Fatalf("reasons %v", r.Reasons)
	}
	e := r.Report.Included[0]
	want := ctxpack.IncludedEntry{Index: 0, Score: 0.9, Reason: ctxpack.InclusionDowngraded, Form: 1,
		FullTokens: 100, ChosenTokens: 20, AvailableTokens: 20, Cause: ctxpack.DowngradeBudgetExceeded}
	if e != want {
		t.Fatalf("entry %+v, want %+v", e, want)
	}
	if e.Cause.String() != "BudgetExceeded" {
		t.Fatalf("cause %s", e.Cause)
	}
	if r.Report.Included[1].Form != 0 || r.Report.Included[1].Cause != ctxpack.DowngradeNone {
		t.Fatalf("plain entry %+v", r.Report.Included[1])
	}
	if !strings.Contains(r.Report.JSON, `"reason":"Downgraded","form":1,"full_tokens":100`) {
		t.Fatalf("json %s", r.Report.JSON)
	}

	// Without variants the log is dropped instead.
	off := reflexiveGreedy(t, ctxpack.WithoutVariants())
	defer off.Close()
	r, err = off.Run(logAndQuestion(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Indices, []int{1}) || !reflect.DeepEqual(r.Forms, []int{0}) {
		t.Fatalf("without variants: indices %v forms %v", r.Indices, r.Forms)
	}
}

func TestVariantsNotCheaperThanTheItemArePruned(t *testing.T) {
	p := reflexiveGreedy(t)
	defer p.Close()
	b, _ := ctxpack.NewBudget(500, 500)
	defer b.Close()
	items := []ctxpack.Item{{Content: "the item", Tokens: 100, FutureRelevanceHint: ctxpack.Float64(0.5),
		Variants: []ctxpack.Variant{{"longer", 150, 0.9}, {"summary", 20, 0.5}, {"same length, less", 100, 0.7}}}}
	r, err := p.Run(items, b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage})
	if err != nil {
		t.Fatal(err)
	}
	want := []ctxpack.PrunedForm{{Index: 0, Form: 1, DominatedBy: 0}, {Index: 0, Form: 3, DominatedBy: 0}}
	if !reflect.DeepEqual(r.Report.PrunedForms, want) {
		t.Fatalf("pruned %+v", r.Report.PrunedForms)
	}
	if !reflect.DeepEqual(r.Forms, []int{0}) {
		t.Fatalf("forms %v", r.Forms)
	}
}

func TestVariantsInvalidOnesAreRejected(t *testing.T) {
	cases := []struct {
		v      ctxpack.Variant
		status ctxpack.Status
		msg    string
	}{
		{ctxpack.Variant{"stub", 2, math.NaN()}, ctxpack.StatusInvalidArgument, "form 1: quality must be in (0, 1], got NaN"},
		{ctxpack.Variant{"stub", 2, 0}, ctxpack.StatusInvalidArgument, "quality must be in (0, 1], got 0"},
		{ctxpack.Variant{"stub", 2, 1.5}, ctxpack.StatusInvalidArgument, "quality must be in (0, 1], got 1.5"},
		{ctxpack.Variant{"", 2, 0.5}, ctxpack.StatusInvalidArgument, "form 1: content must not be empty"},
		{ctxpack.Variant{"stub", -1, 0.5}, ctxpack.StatusInvalidArgument, "tokens must be >= 0, got -1"},
		{ctxpack.Variant{"ok\xff", 2, 0.5}, ctxpack.StatusInvalidUTF8, "variants[0].content is not valid UTF-8"},
	}
	for _, c := range cases {
		items := []ctxpack.Item{{Content: "fine", Tokens: 5}, {Content: "log", Tokens: 100, Variants: []ctxpack.Variant{c.v}}}
		_, err := ctxpack.NewItemList(items...)
		if !errors.Is(err, c.status) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "item 1:") {
			t.Errorf("%+v: got %v", c.v, err)
		}
	}
}
