package ctxpack_test

import (
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// must returns v, or panics with err (which fails the test) when setting up fails.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// closer is every handle type of the package.
type closer interface{ Close() error }

// cleanup closes handles when the test ends.
func cleanup(t testing.TB, handles ...closer) {
	t.Cleanup(func() {
		for _, h := range handles {
			h.Close()
		}
	})
}

var jan2024 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// day returns an item with a timestamp `d` days after 2024-01-01.
func day(content string, tokens int64, d int) ctxpack.Item {
	return ctxpack.Item{Content: content, Tokens: tokens, Timestamp: jan2024.AddDate(0, 0, d)}
}

// newPipeline builds a pipeline from a scorer and greedy/chronological defaults, closing
// the components (the pipeline keeps its own references).
func newPipeline(t testing.TB, scorer *ctxpack.Scorer, opts ...ctxpack.PipelineOption) *ctxpack.Pipeline {
	t.Helper()
	slicer := must(ctxpack.NewGreedySlicer())
	placer := must(ctxpack.NewChronologicalPlacer())
	defer slicer.Close()
	defer placer.Close()
	p := must(ctxpack.NewPipeline(scorer, slicer, placer, opts...))
	cleanup(t, p)
	return p
}

func newBudget(t testing.TB, max, target int64, opts ...ctxpack.BudgetOption) *ctxpack.Budget {
	t.Helper()
	b := must(ctxpack.NewBudget(max, target, opts...))
	cleanup(t, b)
	return b
}

func recency(t testing.TB) *ctxpack.Scorer {
	t.Helper()
	s := must(ctxpack.NewRecencyScorer())
	cleanup(t, s)
	return s
}
