package ctxpack_test

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// byLength scores longer contents higher: 0.01 per byte.
func byLength(items []ctxpack.Item, scores []float64) error {
	for i, it := range items {
		scores[i] = float64(len(it.Content)) / 100
	}
	return nil
}

func TestCustomScorerSelects(t *testing.T) {
	s := must(ctxpack.NewCustomScorer(byLength))
	defer s.Close()
	items := []ctxpack.Item{day("short", 10, 0), day("a much longer one", 10, 1), day("middling", 10, 2)}
	res, err := newPipeline(t, s).Run(items, newBudget(t, 20, 20), &ctxpack.RunOptions{Trace: ctxpack.TraceStage})
	if err != nil {
		t.Fatal(err)
	}
	// The two longest fit, placed chronologically.
	if want := []int{1, 2}; !reflect.DeepEqual(res.Indices, want) {
		t.Fatalf("indices %v, want %v", res.Indices, want)
	}
	if want := []float64{0.17, 0.08}; !reflect.DeepEqual(res.Scores, want) {
		t.Errorf("scores %v, want %v", res.Scores, want)
	}
	if len(res.Report.Excluded) != 1 || res.Report.Excluded[0].Index != 0 || res.Report.Excluded[0].Reason != ctxpack.ExclusionBudgetExceeded {
		t.Errorf("excluded %+v", res.Report.Excluded)
	}
}

// Every item field reaches a Go callback unchanged (defaults filled in by the library).
func TestCustomScorerSeesEveryField(t *testing.T) {
	full := ctxpack.Item{
		Content: "full", Tokens: 7, Kind: "Document", Source: "rag",
		Priority: ctxpack.Int64(-3), Tags: []string{"x", "y", "x"},
		Metadata:            map[string]string{"cupel:trust": "0.5", "b": "é"},
		Timestamp:           time.Date(2024, 2, 29, 12, 30, 0, 123456789, time.UTC),
		FutureRelevanceHint: ctxpack.Float64(1.5), OriginalTokens: ctxpack.Int64(70),
	}
	bare := ctxpack.Item{Content: "bare", Tokens: 1}
	var seen []ctxpack.Item
	s := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		seen = items
		for i := range scores {
			scores[i] = 0.5
		}
		return nil
	}))
	defer s.Close()
	if _, err := newPipeline(t, s).Run([]ctxpack.Item{full, bare}, newBudget(t, 100, 100), nil); err != nil {
		t.Fatal(err)
	}
	bareWant := bare
	bareWant.Kind, bareWant.Source = "Message", "Chat"
	if want := []ctxpack.Item{full, bareWant}; !reflect.DeepEqual(seen, want) {
		t.Errorf("callback saw\n%+v\nwant\n%+v", seen, want)
	}
}

func runOnce(t *testing.T, s *ctxpack.Scorer) error {
	_, err := newPipeline(t, s).Run([]ctxpack.Item{day("a", 1, 0), day("b", 1, 1)}, newBudget(t, 10, 10), nil)
	return err
}

func TestCustomScorerError(t *testing.T) {
	s := must(ctxpack.NewCustomScorer(func([]ctxpack.Item, []float64) error {
		return errors.New("the embedding service is down")
	}))
	defer s.Close()
	// Many failures on one goroutine (and so mostly one thread) exercise the per-thread
	// message slot of shim.c.
	for i := 0; i < 50; i++ {
		err := runOnce(t, s)
		var e *ctxpack.Error
		if !errors.As(err, &e) || e.Status != ctxpack.StatusCallback || !strings.Contains(e.Message, "the embedding service is down") {
			t.Fatalf("got %v", err)
		}
	}
}

func TestCustomScorerPanic(t *testing.T) {
	calls := 0
	s := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		calls++
		if calls == 1 {
			var m map[string]int
			m["nil map"]++ // a runtime panic
		}
		return byLength(items, scores)
	}))
	defer s.Close()
	err := runOnce(t, s)
	var e *ctxpack.Error
	if !errors.As(err, &e) || e.Status != ctxpack.StatusCallback ||
		!strings.Contains(e.Message, "panic in Go callback") || !strings.Contains(e.Message, "nil map") {
		t.Fatalf("got %v", err)
	}
	// The panic did not unwind through the library: the same scorer runs again.
	if err := runOnce(t, s); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

func TestCustomScorerWrongCount(t *testing.T) {
	s := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		scores[0] = 1 // the second stays NaN
		return nil
	}))
	defer s.Close()
	if err := runOnce(t, s); !errors.Is(err, ctxpack.StatusCallback) || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("got %v", err)
	}
}

func TestNilCustomFunctions(t *testing.T) {
	live := ctxpack.LiveCallbacks()
	_, e1 := ctxpack.NewCustomScorer(nil)
	_, e2 := ctxpack.NewCustomSlicer(nil)
	_, e3 := ctxpack.NewCustomPlacer(nil)
	for _, err := range []error{e1, e2, e3} {
		if !errors.Is(err, ctxpack.StatusNullArgument) {
			t.Errorf("got %v", err)
		}
	}
	if ctxpack.LiveCallbacks() != live {
		t.Error("a rejected function left a handle behind")
	}
}

// destroy runs when the last reference goes: not when the scorer is closed while a
// pipeline holds it, but when the pipeline is closed too.
func TestCustomScorerDestroyedWithLastReference(t *testing.T) {
	live := ctxpack.LiveCallbacks()
	s := must(ctxpack.NewCustomScorer(byLength))
	p := newPipeline(t, s)
	s.Close()
	s.Close() // idempotent
	if got := ctxpack.LiveCallbacks(); got != live+1 {
		t.Fatalf("live callbacks %d after closing the scorer, want %d", got, live+1)
	}
	if _, err := p.Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if got := ctxpack.LiveCallbacks(); got != live {
		t.Fatalf("live callbacks %d after closing the pipeline, want %d", got, live)
	}
}

// Handles that are never closed are released by their finalizers.
func TestFinalizersRelease(t *testing.T) {
	live := ctxpack.LiveCallbacks()
	func() {
		for i := 0; i < 20; i++ {
			s := must(ctxpack.NewCustomScorer(byLength))
			_ = newPipelineNoCleanup(s)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for ctxpack.LiveCallbacks() != live && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := ctxpack.LiveCallbacks(); got != live {
		t.Fatalf("live callbacks %d, want %d: finalizers did not release the handles", got, live)
	}
}

func newPipelineNoCleanup(s *ctxpack.Scorer) *ctxpack.Pipeline {
	slicer := must(ctxpack.NewGreedySlicer())
	placer := must(ctxpack.NewChronologicalPlacer())
	return must(ctxpack.NewPipeline(s, slicer, placer))
}

func TestCustomSlicerAndPlacer(t *testing.T) {
	// The slicer takes every other candidate (in score order) that fits.
	slicer := must(ctxpack.NewCustomSlicer(func(items []ctxpack.Item, scores []float64, target, max int64) ([]int, error) {
		if target != 100 || max != 100 {
			return nil, errors.New("unexpected budget")
		}
		for i := 1; i < len(scores); i++ {
			if scores[i] > scores[i-1] {
				return nil, errors.New("candidates are not sorted by score")
			}
		}
		var picked []int
		for i := 0; i < len(items); i += 2 {
			picked = append(picked, i)
		}
		return picked, nil
	}))
	// The placer reverses the input order.
	placer := must(ctxpack.NewCustomPlacer(func(items []ctxpack.Item, scores []float64) ([]int, error) {
		order := make([]int, len(items))
		for i := range order {
			order[i] = len(items) - 1 - i
		}
		return order, nil
	}))
	scorer := recency(t)
	p := must(ctxpack.NewPipeline(scorer, slicer, placer))
	cleanup(t, slicer, placer, p)
	items := []ctxpack.Item{day("d0", 1, 0), day("d1", 1, 1), day("d2", 1, 2), day("d3", 1, 3)}
	res, err := p.Run(items, newBudget(t, 100, 100), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by recency: d3 d2 d1 d0; every other: d3 d1; merged in sort order, reversed.
	if want := []int{1, 3}; !reflect.DeepEqual(res.Indices, want) {
		t.Fatalf("indices %v, want %v", res.Indices, want)
	}
}

func TestCustomPlacerInvalidOrder(t *testing.T) {
	placer := must(ctxpack.NewCustomPlacer(func(items []ctxpack.Item, _ []float64) ([]int, error) {
		return make([]int, len(items)), nil // all zeros: not a permutation
	}))
	slicer := must(ctxpack.NewGreedySlicer())
	p := must(ctxpack.NewPipeline(recency(t), slicer, placer))
	cleanup(t, slicer, placer, p)
	_, err := p.Run([]ctxpack.Item{day("a", 1, 0), day("b", 1, 1)}, newBudget(t, 10, 10), nil)
	if !errors.Is(err, ctxpack.StatusCallback) {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}
