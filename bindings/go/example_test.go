package ctxpack_test

import (
	"fmt"
	"log"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// The quickstart of examples/quickstart.c, in Go: a short chat scored by recency and
// kind, sliced greedily into the budget, placed chronologically. Its output is compared
// with the C program's by TestQuickstartMatchesC.
func Example() {
	start := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	chat := []ctxpack.Item{
		{Content: "You are a concise travel assistant.", Kind: "SystemPrompt", Tokens: 12, Pinned: true},
		{Content: "User: I want to visit Lisbon in May.", Kind: "Message", Tokens: 14},
		{Content: "Assistant: Great choice! May is mild and sunny, ideal for walking tours.", Kind: "Message", Tokens: 40},
		{Content: "Tool: flights to LIS from 89 EUR", Kind: "ToolOutput", Tokens: 25},
		{Content: "Memory: the user prefers trains to planes.", Kind: "Memory", Tokens: 10},
		{Content: "User: and how do I get there by train?", Kind: "Message", Tokens: 12},
	}
	for i := range chat {
		chat[i].Timestamp = start.Add(time.Duration(i) * time.Minute)
	}

	// Recency and kind (2:1), greedy slicing, chronological placement. The pipeline
	// keeps what it needs, so the components can be closed right away.
	recency, err := ctxpack.NewRecencyScorer()
	if err != nil {
		log.Fatal(err)
	}
	defer recency.Close()
	kind, err := ctxpack.NewKindScorer()
	if err != nil {
		log.Fatal(err)
	}
	defer kind.Close()
	scorer, err := ctxpack.NewCompositeScorer(
		ctxpack.WeightedScorer{Scorer: recency, Weight: 2},
		ctxpack.WeightedScorer{Scorer: kind, Weight: 1},
	)
	if err != nil {
		log.Fatal(err)
	}
	defer scorer.Close()
	slicer, err := ctxpack.NewGreedySlicer()
	if err != nil {
		log.Fatal(err)
	}
	defer slicer.Close()
	placer, err := ctxpack.NewChronologicalPlacer()
	if err != nil {
		log.Fatal(err)
	}
	defer placer.Close()
	pipeline, err := ctxpack.NewPipeline(scorer, slicer, placer)
	if err != nil {
		log.Fatal(err)
	}
	defer pipeline.Close()

	// A 100-token window: aim for 70 and keep 20 for the model's answer.
	budget, err := ctxpack.NewBudget(100, 70, ctxpack.WithOutputReserve(20))
	if err != nil {
		log.Fatal(err)
	}
	defer budget.Close()

	result, err := pipeline.Run(chat, budget, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ctxpack %s selected %d of %d items:\n", ctxpack.Version(), len(result.Indices), len(chat))
	for k, i := range result.Indices {
		fmt.Printf("  [%d] %.3f  %s\n", i, result.Scores[k], chat[i].Content)
	}
	// Output:
	// ctxpack 0.1.0 selected 4 of 6 items:
	//   [0] 1.000  You are a concise travel assistant.
	//   [3] 0.533  Tool: flights to LIS from 89 EUR
	//   [4] 0.767  Memory: the user prefers trains to planes.
	//   [5] 0.733  User: and how do I get there by train?
}
