package ctxpack_test

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// One pipeline (with a Go scorer called back concurrently), one item list and one budget
// shared by many goroutines; every result must equal a sequential run. Run with -race
// (run.sh does).
func TestConcurrentRuns(t *testing.T) {
	const goroutines, runsEach, n = 16, 20, 120
	items := make([]ctxpack.Item, n)
	for i := range items {
		items[i] = day(fmt.Sprintf("item %d %s", i, string(make([]byte, i%13))), int64(5+i%17), i%40)
		items[i].Kind = []string{"Message", "Document", "ToolOutput"}[i%3]
		if i%25 == 0 {
			items[i].Pinned = true
		}
	}
	var calls atomic.Int64
	custom := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		calls.Add(1)
		return byLength(items, scores)
	}))
	kind := must(ctxpack.NewKindScorer())
	scorer := must(ctxpack.NewCompositeScorer(
		ctxpack.WeightedScorer{Scorer: custom, Weight: 1},
		ctxpack.WeightedScorer{Scorer: kind, Weight: 1},
		ctxpack.WeightedScorer{Scorer: recency(t), Weight: 2},
	))
	cleanup(t, custom, kind, scorer)
	p := newPipeline(t, scorer, ctxpack.WithOverflowStrategy(ctxpack.OverflowTruncate))
	list := must(ctxpack.NewItemList(items...))
	cleanup(t, list)
	budget := newBudget(t, 800, 600, ctxpack.WithOutputReserve(50))
	opts := &ctxpack.RunOptions{Trace: ctxpack.TraceItem}

	// Durations are wall-clock; everything else must be identical.
	normalise := func(r ctxpack.Result) ctxpack.Result {
		for i := range r.Report.Events {
			r.Report.Events[i].DurationMS = 0
		}
		r.Report.JSON = ""
		return r
	}
	reference := normalise(must(p.RunList(list, budget, opts)))
	if len(reference.Indices) == 0 || len(reference.Report.Excluded) == 0 {
		t.Fatalf("the reference run selects %d and excludes %d items; the test needs both",
			len(reference.Indices), len(reference.Report.Excluded))
	}

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*runsEach)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < runsEach; r++ {
				var res ctxpack.Result
				var err error
				if (g+r)%2 == 0 {
					res, err = p.RunList(list, budget, opts)
				} else {
					res, err = p.Run(items, budget, opts) // its own temporary list
				}
				if err != nil {
					errs <- err
					continue
				}
				if !reflect.DeepEqual(normalise(res), reference) {
					errs <- fmt.Errorf("goroutine %d run %d differs from the sequential run", g, r)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := calls.Load(), int64(1+goroutines*runsEach); got != want {
		t.Errorf("the Go scorer ran %d times, want %d", got, want)
	}
}
