package ctxpack_test

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// A library object must stay alive until the binding's last C call that uses it, even
// when the caller drops its last reference as soon as the call starts. Each operation
// below builds its pipelines, components and budget inside a helper that returns only
// the copied-out answer and never closes them, so only the binding keeps them reachable
// during the call; goroutines force collections meanwhile, so a finalizer that ran too
// early would free a handle the binding is still passing to the library (seen as
// StatusWrongHandleType, a crash, or a use-after-free report under -asan).
//
// Every operation's answer is compared with the same operation run before the stress.
func TestHandlesOutliveEveryCallUnderGC(t *testing.T) {
	const workers, runsEach, collectors = 4, 200, 2

	items := gcStressItems(240)
	list := must(ctxpack.NewItemList(items...))
	cleanup(t, list)
	ops := gcStressOps(items, list)

	want := make([]interface{}, len(ops))
	for i, op := range ops {
		v, err := op.run()
		if err != nil {
			t.Fatalf("%s before the stress: %v", op.name, err)
		}
		want[i] = v
	}

	stop := make(chan struct{})
	var gcs sync.WaitGroup
	var collections atomic.Int64
	for c := 0; c < collectors; c++ {
		gcs.Add(1)
		go func() {
			defer gcs.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.GC()
					collections.Add(1)
				}
			}
		}()
	}

	runs := make([]atomic.Int64, len(ops))
	failures := make([]atomic.Int64, len(ops))
	firstErr := make([]atomic.Value, len(ops))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < runsEach; r++ {
				k := (w*runsEach + r) % len(ops)
				got, err := ops[k].run()
				runs[k].Add(1)
				if err == nil && !reflect.DeepEqual(got, want[k]) {
					err = fmt.Errorf("answer differs from the run before the stress: %v, want %v", got, want[k])
				}
				if err != nil {
					failures[k].Add(1)
					firstErr[k].CompareAndSwap(nil, err.Error())
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	gcs.Wait()

	var failed, total int64
	for k, op := range ops {
		failed += failures[k].Load()
		total += runs[k].Load()
		if n := failures[k].Load(); n > 0 {
			t.Errorf("%s: %d of %d runs failed; the first: %v", op.name, n, runs[k].Load(), firstErr[k].Load())
		}
	}
	t.Logf("%d of %d operations failed, %d forced collections", failed, total, collections.Load())
	if collections.Load() < 10 {
		t.Errorf("only %d collections ran during the operations; the test proves nothing", collections.Load())
	}
}

type gcStressOp struct {
	name string
	run  func() (interface{}, error)
}

func gcStressItems(n int) []ctxpack.Item {
	kinds := []string{"Message", "Document", "ToolOutput", "Memory"}
	items := make([]ctxpack.Item, n)
	for i := range items {
		items[i] = day(fmt.Sprintf("gc stress item %d", i), int64(3+i%23), i%50)
		items[i].Kind = kinds[i%len(kinds)]
		items[i].Priority = ctxpack.Int64(int64(i % 7))
		items[i].Tags = []string{fmt.Sprintf("t%d", i%5)}
	}
	return items
}

// traced drops what differs between two identical runs (durations, and the JSON, which
// holds them).
func traced(r ctxpack.Result) ctxpack.Result {
	if r.Report != nil {
		for i := range r.Report.Events {
			r.Report.Events[i].DurationMS = 0
		}
		r.Report.JSON = ""
	}
	return r
}

// quotaPipeline builds a pipeline with a quota slicer (so the report's analytics read the
// pipeline) from components that become unreachable once it exists.
func quotaPipeline() (*ctxpack.Pipeline, error) {
	scorer, err := ctxpack.NewCompositeScorer(
		ctxpack.WeightedScorer{Scorer: must(ctxpack.NewPriorityScorer()), Weight: 1},
		ctxpack.WeightedScorer{Scorer: must(ctxpack.NewRecencyScorer()), Weight: 2},
	)
	if err != nil {
		return nil, err
	}
	slicer, err := ctxpack.NewQuotaSlicer(must(ctxpack.NewGreedySlicer()),
		ctxpack.QuotaEntry{Kind: "Document", Require: 10, Cap: 40},
		ctxpack.QuotaEntry{Kind: "Message", Require: 0, Cap: 50})
	if err != nil {
		return nil, err
	}
	return ctxpack.NewPipeline(scorer, slicer, must(ctxpack.NewUShapedPlacer()),
		ctxpack.WithOverflowStrategy(ctxpack.OverflowTruncate))
}

func gcStressBudget() (*ctxpack.Budget, error) {
	return ctxpack.NewBudget(1200, 900, ctxpack.WithOutputReserve(40))
}

// gcStressOps are the operations of the test: every call of the package that passes a
// handle to the library, each over objects nothing else references.
func gcStressOps(items []ctxpack.Item, list *ctxpack.ItemList) []gcStressOp {
	scores := make([]float64, len(items))
	for i := range scores {
		scores[i] = float64(i%11) / 10
	}
	opts := &ctxpack.RunOptions{Trace: ctxpack.TraceItem}
	return []gcStressOp{
		{"Pipeline.RunList", func() (interface{}, error) {
			p, err := quotaPipeline()
			if err != nil {
				return nil, err
			}
			r, err := p.RunList(list, must(gcStressBudget()), opts)
			return traced(r), err
		}},
		{"Pipeline.Run", func() (interface{}, error) {
			p, err := ctxpack.NewPresetPipeline("chat")
			if err != nil {
				return nil, err
			}
			r, err := p.Run(items, must(gcStressBudget()), opts)
			return traced(r), err
		}},
		{"Pipeline.DryRun", func() (interface{}, error) {
			p, err := quotaPipeline()
			if err != nil {
				return nil, err
			}
			r, err := p.DryRun(items, must(gcStressBudget()))
			return traced(r), err
		}},
		{"CompareSensitivity", func() (interface{}, error) {
			s, err := ctxpack.CompareSensitivity(items, must(gcStressBudget()),
				ctxpack.SensitivityVariant{Label: "quota", Pipeline: must(quotaPipeline())},
				ctxpack.SensitivityVariant{Label: "rag", Pipeline: must(ctxpack.NewPresetPipeline("rag"))})
			for i := range s.Results {
				s.Results[i] = traced(s.Results[i])
			}
			return s, err
		}},
		{"Pipeline.MarginalItems", func() (interface{}, error) {
			return must(ctxpack.NewPresetPipeline("chat")).MarginalItems(items, must(gcStressBudget()), 200)
		}},
		{"Pipeline.MinBudgetFor", func() (interface{}, error) {
			b, found, err := must(ctxpack.NewPresetPipeline("chat")).MinBudgetFor(items, 7, 5000)
			return [2]interface{}{b, found}, err
		}},
		{"Pipeline.PolicyJSON", func() (interface{}, error) {
			return must(quotaPipeline()).PolicyJSON(true)
		}},
		{"Scorer.Score", func() (interface{}, error) {
			return must(ctxpack.NewScaledScorer(must(ctxpack.NewPriorityScorer()))).Score(items)
		}},
		{"Slicer.Slice", func() (interface{}, error) {
			s := must(ctxpack.NewCountQuotaSlicer(must(ctxpack.NewGreedySlicer()), ctxpack.ScarcityDegrade,
				ctxpack.CountQuotaEntry{Kind: "Memory", RequireCount: 2, CapCount: 10}))
			return s.Slice(items, scores, must(gcStressBudget()))
		}},
		{"Placer.Place", func() (interface{}, error) {
			return must(ctxpack.NewUShapedPlacer()).Place(items, scores)
		}},
		// The list calls, each over a list nothing but the call references.
		{"Pipeline.DryRunList", func() (interface{}, error) {
			r, err := must(quotaPipeline()).DryRunList(must(ctxpack.NewItemList(items...)), must(gcStressBudget()))
			return traced(r), err
		}},
		{"CompareSensitivityList", func() (interface{}, error) {
			s, err := ctxpack.CompareSensitivityList(must(ctxpack.NewItemList(items...)), must(gcStressBudget()),
				ctxpack.SensitivityVariant{Label: "quota", Pipeline: must(quotaPipeline())},
				ctxpack.SensitivityVariant{Label: "rag", Pipeline: must(ctxpack.NewPresetPipeline("rag"))})
			for i := range s.Results {
				s.Results[i] = traced(s.Results[i])
			}
			return s, err
		}},
		{"Pipeline.MarginalItemsList", func() (interface{}, error) {
			return must(ctxpack.NewPresetPipeline("chat")).MarginalItemsList(must(ctxpack.NewItemList(items...)), must(gcStressBudget()), 200)
		}},
		{"Pipeline.MinBudgetForList", func() (interface{}, error) {
			b, found, err := must(ctxpack.NewPresetPipeline("chat")).MinBudgetForList(must(ctxpack.NewItemList(items...)), 7, 5000)
			return [2]interface{}{b, found}, err
		}},
		{"Scorer.ScoreList", func() (interface{}, error) {
			return must(ctxpack.NewScaledScorer(must(ctxpack.NewPriorityScorer()))).ScoreList(must(ctxpack.NewItemList(items...)))
		}},
		{"Slicer.SliceList", func() (interface{}, error) {
			s := must(ctxpack.NewCountQuotaSlicer(must(ctxpack.NewGreedySlicer()), ctxpack.ScarcityDegrade,
				ctxpack.CountQuotaEntry{Kind: "Memory", RequireCount: 2, CapCount: 10}))
			return s.SliceList(must(ctxpack.NewItemList(items...)), scores, must(gcStressBudget()))
		}},
		{"Placer.PlaceList", func() (interface{}, error) {
			return must(ctxpack.NewUShapedPlacer()).PlaceList(must(ctxpack.NewItemList(items...)), scores)
		}},
		{"view scorer", func() (interface{}, error) {
			s := must(ctxpack.NewCustomViewScorer(func(vs ctxpack.ItemViews, out []float64) error {
				for i := range out {
					out[i] = float64(vs.At(i).Tokens())
				}
				return nil
			}))
			return must(ctxpack.NewPipeline(s, must(ctxpack.NewGreedySlicer()), must(ctxpack.NewChronologicalPlacer()))).
				RunList(must(ctxpack.NewItemList(items...)), must(gcStressBudget()), nil)
		}},
		{"ItemList.Len", func() (interface{}, error) {
			return must(ctxpack.NewItemList(items[:50]...)).Len()
		}},
	}
}
