package ctxpack_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// The cost of a report (issue 20, item 3), at 2 000 items with kinds, tags and
// priorities, through one item list:
//
//	go test -run XXX -bench RunTraced -benchtime 200x
//
// Untraced is RunList without a trace; Eager is RunList traced (every report part,
// the JSON and the analytics copied); Lazy is RunListTraced with nothing read;
// LazyJSON reads the JSON only.
func benchInputs(b *testing.B) (*ctxpack.Pipeline, *ctxpack.ItemList, *ctxpack.Budget) {
	p := must(ctxpack.NewPresetPipeline("Chat"))
	b.Cleanup(func() { p.Close() })
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
	list := must(ctxpack.NewItemList(items...))
	b.Cleanup(func() { list.Close() })
	budget := must(ctxpack.NewBudget(100000, 50000))
	b.Cleanup(func() { budget.Close() })
	return p, list, budget
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
