package ctxpack_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// runnerItems is n dated items, every seventh repeating the content before it (so
// deduplication has work), with priorities.
func runnerItems(n, seed int) []ctxpack.Item {
	items := make([]ctxpack.Item, n)
	for i := range items {
		c := i
		if i%7 == 6 {
			c = i - 1
		}
		items[i] = day(fmt.Sprintf("turn %d/%d", seed, c), int64(3+(i*5+seed)%23), i%40)
		p := int64((i + seed) % 9)
		items[i].Priority = &p
	}
	return items
}

// A Runner answers every run as Pipeline.Run does, across sizes, traced and untraced
// runs and a failing run, and after Close.
func TestRunnerRunsAsPipelineRun(t *testing.T) {
	p := newPipeline(t, recency(t))
	r := ctxpack.NewRunner()
	defer r.Close()
	for round, n := range []int{30, 30, 200, 10, 200, 0, 200} {
		items := runnerItems(n, round)
		var total int64
		for _, it := range items {
			total += it.Tokens
		}
		b := newBudget(t, total+1, total/2)
		for _, opts := range []*ctxpack.RunOptions{nil, {Trace: ctxpack.TraceItem}} {
			want := must(p.Run(items, b, opts))
			got, err := r.Run(p, items, b, opts)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if !reflect.DeepEqual(got.Indices, want.Indices) || !reflect.DeepEqual(got.Scores, want.Scores) ||
				!reflect.DeepEqual(got.Reasons, want.Reasons) || !reflect.DeepEqual(got.Forms, want.Forms) {
				t.Fatalf("round %d, n %d: runner %v, pipeline %v", round, n, got.Indices, want.Indices)
			}
			if (got.Report == nil) != (want.Report == nil) {
				t.Fatalf("round %d: report presence differs", round)
			}
			if n > 1 && (len(got.Indices) < 2 || len(got.Indices) >= n) {
				t.Fatalf("round %d: %d of %d placed, the comparison is not telling", round, len(got.Indices), n)
			}
		}
		if round == 3 {
			// A failing run leaves the Runner usable.
			bad := []ctxpack.Item{{Content: "ok", Tokens: 1}, {Content: "", Tokens: 1}}
			if _, err := r.Run(p, bad, b, nil); err == nil {
				t.Fatal("an empty content was accepted")
			}
			r.Close()
		}
	}
}

// Results copied out of a Runner stay as they were after later runs.
func TestRunnerResultsOutliveLaterRuns(t *testing.T) {
	p := newPipeline(t, recency(t))
	r := ctxpack.NewRunner()
	defer r.Close()
	b := newBudget(t, 10_000, 300)
	first := must(r.Run(p, runnerItems(80, 1), b, nil))
	kept := append([]int(nil), first.Indices...)
	must(r.Run(p, runnerItems(80, 2), b, nil))
	if !reflect.DeepEqual(first.Indices, kept) {
		t.Fatal("a later run changed an earlier result")
	}
}

// Goroutines sharing one Runner are serialised: every answer is Pipeline.Run's.
func TestRunnerSharedByGoroutines(t *testing.T) {
	p := newPipeline(t, recency(t))
	r := ctxpack.NewRunner()
	defer r.Close()
	b := newBudget(t, 10_000, 400)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				items := runnerItems(20+g*10, g)
				want := must(p.Run(items, b, nil))
				got, err := r.Run(p, items, b, nil)
				if err != nil || !reflect.DeepEqual(got.Indices, want.Indices) {
					errs <- fmt.Errorf("goroutine %d, run %d: %v %v / %v", g, i, err, got.Indices, want.Indices)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Pipeline.ReleaseMemory frees what the pipeline keeps between one-shot runs: runs
// before and after it answer the same (traced runs too), it may be called again with
// nothing kept, and a closed or nil pipeline is StatusNullArgument.
func TestReleaseMemoryBetweenOneShotRuns(t *testing.T) {
	p := must(ctxpack.NewPresetPipeline("chat"))
	defer p.Close()
	items := runnerItems(300, 3)
	var total int64
	for _, it := range items {
		total += it.Tokens
	}
	b := newBudget(t, total, total/2)
	if err := p.ReleaseMemory(); err != nil { // nothing kept yet
		t.Fatal(err)
	}
	normalise := func(r ctxpack.Result) ctxpack.Result {
		if r.Report != nil {
			for i := range r.Report.Events {
				r.Report.Events[i].DurationMS = 0
			}
			r.Report.JSON = ""
		}
		return r
	}
	for _, opts := range []*ctxpack.RunOptions{nil, {Trace: ctxpack.TraceItem}} {
		first := normalise(must(p.Run(items, b, opts)))
		if len(first.Indices) < 2 || len(first.Indices) >= len(items) {
			t.Fatalf("%d of %d placed, the comparison is not telling", len(first.Indices), len(items))
		}
		for step, release := range []bool{false, true, false, true, true, false} {
			if release {
				if err := p.ReleaseMemory(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if got := normalise(must(p.Run(items, b, opts))); !reflect.DeepEqual(got, first) {
				t.Fatalf("step %d (release %v): the run differs from the first", step, release)
			}
			if got := normalise(must(p.RunContext(context.Background(), items, b, opts))); !reflect.DeepEqual(got, first) {
				t.Fatalf("step %d (release %v): RunContext differs from the first run", step, release)
			}
		}
	}
	p.Close()
	if err := p.ReleaseMemory(); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("a closed pipeline: got %v", err)
	}
	var none *ctxpack.Pipeline
	if err := none.ReleaseMemory(); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("a nil pipeline: got %v", err)
	}
}
