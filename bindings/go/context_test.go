package ctxpack_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// longKnapsack is a pipeline and inputs whose run takes over a second unless cancelled:
// 1 000 items against a 400 000-token target with one-token buckets (a DP of 4*10^8
// cells).
func longKnapsack(t *testing.T) (*ctxpack.Pipeline, *ctxpack.ItemList, *ctxpack.Budget) {
	t.Helper()
	scorer := must(ctxpack.NewPriorityScorer())
	slicer := must(ctxpack.NewKnapsackSlicer(1, 0))
	placer := must(ctxpack.NewChronologicalPlacer())
	defer scorer.Close()
	defer slicer.Close()
	defer placer.Close()
	p := must(ctxpack.NewPipeline(scorer, slicer, placer))
	cleanup(t, p)
	items := make([]ctxpack.Item, 1000)
	for i := range items {
		prio := int64(i % 7)
		items[i] = ctxpack.Item{Content: fmt.Sprintf("item %d", i), Tokens: 100 + int64(i*37%900), Priority: &prio}
	}
	list := must(ctxpack.NewItemList(items...))
	cleanup(t, list)
	return p, list, newBudget(t, 400000, 400000)
}

func TestRunContextCancelledBeforeTheRun(t *testing.T) {
	p := newPipeline(t, recency(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.RunContext(ctx, []ctxpack.Item{day("a", 1, 1)}, newBudget(t, 10, 10), nil)
	if !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want StatusCancelled and context.Canceled, got %v", err)
	}
	var ce *ctxpack.CancelledError
	if !errors.As(err, &ce) || ce.Err.Message != "cancelled: the run was cancelled before it started" {
		t.Fatalf("want the library's message, got %#v", err)
	}
}

func TestRunContextDeadlineStopsALongKnapsackRun(t *testing.T) {
	p, list, budget := longKnapsack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.RunListContext(ctx, list, budget, nil)
	returned := time.Now()
	deadline, _ := ctx.Deadline()
	if !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want StatusCancelled and context.DeadlineExceeded, got %v", err)
	}
	if late := returned.Sub(deadline); late > time.Second {
		t.Fatalf("the run returned %v after the deadline", late)
	}
}

func TestRunContextThatIsNeverDoneChangesNothing(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 10, 10)
	items := []ctxpack.Item{day("a", 4, 1), day("b", 4, 3), day("c", 4, 2)}
	want := must(p.Run(items, b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		got := must(p.RunContext(c, items, b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage}))
		if !reflect.DeepEqual(got.Indices, want.Indices) || !reflect.DeepEqual(got.Report.Excluded, want.Report.Excluded) {
			t.Fatalf("got %v, want %v", got.Indices, want.Indices)
		}
	}
}

func TestTracedResultReadsEachPartOnDemandAndEqualsTheEagerReport(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 10, 10)
	list := must(ctxpack.NewItemList(day("a", 4, 1), day("b", 4, 3), day("c", 4, 2), day("a", 4, 5)))
	cleanup(t, list)
	eager := must(p.RunList(list, b, &ctxpack.RunOptions{Trace: ctxpack.TraceItem}))
	lazy := must(p.RunListTraced(list, b, ctxpack.TraceItem))
	defer lazy.Close()
	if !reflect.DeepEqual(lazy.Indices, eager.Indices) || !reflect.DeepEqual(lazy.Scores, eager.Scores) {
		t.Fatalf("selection %v, want %v", lazy.Indices, eager.Indices)
	}
	sum := must(lazy.Summary())
	if sum.TotalCandidates != 4 || sum.IncludedCount != len(eager.Report.Included) || sum.ExcludedCount != len(eager.Report.Excluded) {
		t.Fatalf("summary %+v", sum)
	}
	if got := must(lazy.Excluded()); !reflect.DeepEqual(got, eager.Report.Excluded) {
		t.Fatalf("excluded %+v, want %+v", got, eager.Report.Excluded)
	}
	if got := must(lazy.Included()); !reflect.DeepEqual(got, eager.Report.Included) {
		t.Fatalf("included %+v", got)
	}
	if got := must(lazy.Events()); len(got) != len(eager.Report.Events) {
		t.Fatalf("%d events, want %d", len(got), len(eager.Report.Events))
	}
	if got := must(lazy.Analytics()); !reflect.DeepEqual(got, eager.Report.Analytics) {
		t.Fatalf("analytics %+v, want %+v", got, eager.Report.Analytics)
	}
	js := must(lazy.JSON())
	if js == "" || js[0] != '{' {
		t.Fatalf("json %q", js)
	}
	full := must(lazy.Report())
	if !reflect.DeepEqual(full.Excluded, eager.Report.Excluded) || !reflect.DeepEqual(full.Included, eager.Report.Included) || full.JSON == "" {
		t.Fatal("Report() differs from the eager report")
	}
	// After Close: what was read stays, what was not is an error.
	lazy.Close()
	lazy.Close()
	if got, err := lazy.JSON(); err != nil || got != js {
		t.Fatalf("json after close: %v", err)
	}
	if _, err := lazy.Report(); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Fatalf("Report after Close: want StatusNullArgument, got %v", err)
	}
}

func TestTracedResultIsSafeForConcurrentUseAndClose(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 10, 10)
	list := must(ctxpack.NewItemList(day("a", 4, 1), day("b", 4, 3), day("c", 4, 2)))
	cleanup(t, list)
	for round := 0; round < 20; round++ {
		r := must(p.RunListTraced(list, b, ctxpack.TraceStage))
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				var err error
				switch g {
				case 0:
					_, err = r.Excluded()
				case 1:
					_, err = r.JSON()
				case 2:
					_, err = r.Analytics()
				case 3:
					err = r.Close()
				}
				if err != nil && !errors.Is(err, ctxpack.StatusNullArgument) {
					t.Error(err)
				}
			}(g)
		}
		wg.Wait()
	}
}

func TestRunListTracedContextCancelled(t *testing.T) {
	p, list, budget := longKnapsack(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	r, err := p.RunListTracedContext(ctx, list, budget, ctxpack.TraceStage)
	if r != nil || !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want a cancelled run, got %v, %v", r, err)
	}
}

func TestRunPrefixContextCancelledBeforeTheRunKeepsNoState(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 100)
	first := must(p.RunPrefix(messages(4), b, nil, nil, nil))
	defer first.State.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, err := p.RunPrefixContext(ctx, messages(5), b, nil, nil, first.State)
	if !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want StatusCancelled and context.Canceled, got %v", err)
	}
	if run.State != nil {
		t.Fatal("a cancelled prefix run returned a state")
	}
	// The previous state is untouched: the next turn continues from it.
	next := must(p.RunPrefixListContext(context.Background(), must(ctxpack.NewItemList(messages(5)...)), b, nil, nil, first.State))
	defer next.State.Close()
	if next.Reuse.Turn != 2 {
		t.Fatalf("the turn after a cancelled one is %d, want 2", next.Reuse.Turn)
	}
}

func TestRunPrefixContextDeadlineStopsALongKnapsackRun(t *testing.T) {
	p, list, budget := longKnapsack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.RunPrefixListContext(ctx, list, budget, nil, &ctxpack.PrefixOptions{Mode: ctxpack.PrefixMeasure}, nil)
	returned := time.Now()
	deadline, _ := ctx.Deadline()
	if !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want StatusCancelled and context.DeadlineExceeded, got %v", err)
	}
	if late := returned.Sub(deadline); late > time.Second {
		t.Fatalf("the prefix run returned %v after the deadline", late)
	}
}

func TestRunPrefixContextThatIsNeverDoneChangesNothing(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 60)
	want := must(p.RunPrefix(messages(6), b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage}, nil, nil))
	defer want.State.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		got := must(p.RunPrefixContext(c, messages(6), b, &ctxpack.RunOptions{Trace: ctxpack.TraceStage}, nil, nil))
		got.State.Close()
		if !reflect.DeepEqual(got.Result.Indices, want.Result.Indices) || got.Reuse.JSON != want.Reuse.JSON {
			t.Fatalf("got %v / %s, want %v / %s", got.Result.Indices, got.Reuse.JSON, want.Result.Indices, want.Reuse.JSON)
		}
	}
}

func TestTrimChatContextIsCancellable(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget := newBudget(t, 100000, 100000)
	request := sampleRequest(t, "openai")

	// A context that is never done changes nothing.
	plain := must(ctxpack.TrimOpenAI(request, budget, pipeline, nil))
	live := must(ctxpack.TrimChatContext(context.Background(), ctxpack.ChatOpenAI, request, budget, pipeline, nil))
	if plain.JSON != live.JSON {
		t.Errorf("a live context changed the output")
	}

	// Done before the call: no result, an error matching both the status and ctx.Err().
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := ctxpack.TrimChatContext(ctx, ctxpack.ChatOpenAI, request, budget, pipeline, nil)
	if res != nil || !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the trim: %v, %v", res, err)
	}

	// Cancelled from inside the run: a batch scorer cancels the context, the run stops at
	// its next check. The context's watcher goroutine cancels the library's token
	// asynchronously, so the scorer gives it time to run before returning.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	scorer := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		cancel()
		time.Sleep(200 * time.Millisecond)
		for i := range scores {
			scores[i] = 0.5
		}
		return nil
	}))
	slicer := must(ctxpack.NewGreedySlicer())
	placer := must(ctxpack.NewChronologicalPlacer())
	custom := must(ctxpack.NewPipeline(scorer, slicer, placer))
	cleanup(t, scorer, slicer, placer, custom)
	res, err = ctxpack.TrimChatContext(ctx, ctxpack.ChatAnthropic, sampleRequest(t, "anthropic"), budget, custom, nil)
	if res != nil || !errors.Is(err, ctxpack.StatusCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled by the scorer: %v, %v", res, err)
	}
}
