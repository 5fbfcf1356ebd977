package ctxpack_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// The cost of a report (issue 20, item 3) and of copying items (issue 20, item 4), at
// 2 000 items with kinds, tags and priorities:
//
//	go test -run XXX -bench 'RunTraced|RunItems|Callback' -benchtime 200x -benchmem
//
// The report benchmarks run through one item list:
//
//	go test -run XXX -bench RunTraced -benchtime 200x
//
// Untraced is RunList without a trace; Eager is RunList traced (every report part,
// the JSON and the analytics copied); Lazy is RunListTraced with nothing read;
// LazyJSON reads the JSON only.
func benchInputs(b *testing.B) (*ctxpack.Pipeline, *ctxpack.ItemList, *ctxpack.Budget) {
	p := must(ctxpack.NewPresetPipeline("Chat"))
	b.Cleanup(func() { p.Close() })
	list := must(ctxpack.NewItemList(benchItems()...))
	b.Cleanup(func() { list.Close() })
	budget := must(ctxpack.NewBudget(100000, 50000))
	b.Cleanup(func() { budget.Close() })
	return p, list, budget
}

func benchItems() []ctxpack.Item {
	kinds := []string{"Message", "Document", "ToolOutput", "Memory", "SystemPrompt"}
	items := make([]ctxpack.Item, 2000)
	for i := range items {
		prio := int64(i % 10)
		items[i] = ctxpack.Item{
			Content:   fmt.Sprintf("item %d with some content", i),
			Tokens:    20 + int64(i*37%400),
			Kind:      kinds[i%len(kinds)],
			Tags:      []string{fmt.Sprintf("t%d", i%13), fmt.Sprintf("u%d", i%7)},
			Priority:  &prio,
			Timestamp: time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC),
		}
	}
	return items
}

func BenchmarkRunTracedUntraced(b *testing.B) {
	p, list, budget := benchInputs(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.RunList(list, budget, nil))
	}
}

func BenchmarkRunTracedEager(b *testing.B) {
	p, list, budget := benchInputs(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.RunList(list, budget, &ctxpack.RunOptions{Trace: ctxpack.TraceItem}))
	}
}

func BenchmarkRunTracedLazy(b *testing.B) {
	p, list, budget := benchInputs(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.RunListTraced(list, budget, ctxpack.TraceItem)).Close()
	}
}

func BenchmarkRunTracedLazyJSON(b *testing.B) {
	p, list, budget := benchInputs(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := must(p.RunListTraced(list, budget, ctxpack.TraceItem))
		must(r.JSON())
		r.Close()
	}
}

// Run over a []Item (the items copied into a temporary list) against RunList over the
// list built once (BenchmarkRunTracedUntraced).
func BenchmarkRunItems(b *testing.B) {
	p, _, budget := benchInputs(b)
	items := benchItems()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.Run(items, budget, nil))
	}
}

// A custom batch scorer at 2 000 items reading the tokens, a tag and the kind: through
// the copying callback (every item rebuilt, tags and all) and through views.
func benchScorerPipeline(b *testing.B, s *ctxpack.Scorer) *ctxpack.Pipeline {
	b.Cleanup(func() { s.Close() })
	slicer := must(ctxpack.NewGreedySlicer())
	placer := must(ctxpack.NewChronologicalPlacer())
	defer slicer.Close()
	defer placer.Close()
	p := must(ctxpack.NewPipeline(s, slicer, placer))
	b.Cleanup(func() { p.Close() })
	return p
}

func BenchmarkCallbackCopyingScorer(b *testing.B) {
	_, list, budget := benchInputs(b)
	p := benchScorerPipeline(b, must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
		for i, it := range items {
			scores[i] = float64(it.Tokens)
			if it.Kind == "Memory" {
				for _, t := range it.Tags {
					if t == "t1" {
						scores[i]++
						break
					}
				}
			}
		}
		return nil
	})))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.RunList(list, budget, nil))
	}
}

func BenchmarkCallbackViewScorer(b *testing.B) {
	_, list, budget := benchInputs(b)
	p := benchScorerPipeline(b, must(ctxpack.NewCustomViewScorer(func(items ctxpack.ItemViews, scores []float64) error {
		for i := range scores {
			v := items.At(i)
			scores[i] = float64(v.Tokens())
			if v.IsKind("Memory") && v.HasTag("t1") {
				scores[i]++
			}
		}
		return nil
	})))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		must(p.RunList(list, budget, nil))
	}
}
