package ctxpack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// Item groups and library-counted items through the binding (docs/groups.md,
// docs/tokenizer.md). The group vectors of ../../tests/vectors/groups also run, in
// TestConformanceVectors.

const (
	callText   = "call get_weather(Oslo)"
	resultText = "result: 4 C, rain"
)

// toolChat is a tool call and its result (group "c1" when grouped) and two messages,
// scored by their hints: alone, the call is the densest item and its result the least.
func toolChat(grouped bool) []ctxpack.Item {
	g := ""
	if grouped {
		g = "c1"
	}
	return []ctxpack.Item{
		{Content: callText, Tokens: 10, FutureRelevanceHint: ctxpack.Float64(0.9), Group: g},
		{Content: resultText, Tokens: 50, FutureRelevanceHint: ctxpack.Float64(0.1), Group: g},
		{Content: "message A", Tokens: 20, FutureRelevanceHint: ctxpack.Float64(0.5)},
		{Content: "message B", Tokens: 20, FutureRelevanceHint: ctxpack.Float64(0.4)},
	}
}

func reflexive(t testing.TB) *ctxpack.Scorer {
	t.Helper()
	s := must(ctxpack.NewReflexiveScorer())
	cleanup(t, s)
	return s
}

func contains(indices []int, i int) bool {
	for _, x := range indices {
		if x == i {
			return true
		}
	}
	return false
}

func errorStatus(t *testing.T, err error, status ctxpack.Status, fragment string) {
	t.Helper()
	var e *ctxpack.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, fragment) {
		t.Fatalf("error %v, expected status %v with %q", err, status, fragment)
	}
}

func TestGroupAllOrNothing(t *testing.T) {
	p := newPipeline(t, reflexive(t))
	b := newBudget(t, 100, 60)
	plain := must(p.Run(toolChat(false), b, nil))
	if !contains(plain.Indices, 0) || contains(plain.Indices, 1) {
		t.Fatalf("without the group the call is kept alone: %v", plain.Indices)
	}
	grouped := must(p.Run(toolChat(true), b, &ctxpack.RunOptions{Trace: ctxpack.TraceItem}))
	if contains(grouped.Indices, 0) || contains(grouped.Indices, 1) {
		t.Fatalf("the group is split: %v", grouped.Indices)
	}
	r := grouped.Report
	if len(r.Excluded) != 2 {
		t.Fatalf("excluded %+v", r.Excluded)
	}
	lead, other := r.Excluded[0], r.Excluded[1]
	if lead.Reason == ctxpack.ExclusionGroupExcluded {
		lead, other = other, lead
	}
	if lead.Reason != ctxpack.ExclusionBudgetExceeded || other.Reason != ctxpack.ExclusionGroupExcluded || other.Name != "GroupExcluded" {
		t.Fatalf("reasons %+v and %+v", lead, other)
	}
	want := []string{callText, resultText}[lead.Index]
	if other.Group != "c1" || other.MemberIndex != lead.Index || other.MemberContent != want || other.MemberReason != "BudgetExceeded" {
		t.Fatalf("group exclusion fields %+v (lead %d)", other, lead.Index)
	}
	if len(r.Groups) != 1 {
		t.Fatalf("groups %+v", r.Groups)
	}
	g := r.Groups[0]
	if g.Key != "c1" || len(g.Members) != 2 || g.Members[0] != 0 || g.Members[1] != 1 || g.Tokens != 60 ||
		g.Decision != ctxpack.GroupExcluded || g.Stage != ctxpack.StageSlice || g.MemberIndex != lead.Index ||
		g.Value == nil || g.PinnedBy != nil || g.PartialSelection {
		t.Fatalf("group entry %+v", g)
	}
	if !strings.Contains(r.JSON, `"groups":[{"key":"c1","members":[0,1],"tokens":60`) {
		t.Fatalf("JSON lacks the group listing: %s", r.JSON)
	}

	// With room for all, the members are adjacent and in input order.
	all := must(p.Run(toolChat(true), newBudget(t, 100, 100), &ctxpack.RunOptions{Trace: ctxpack.TraceStage}))
	at := -1
	for k, i := range all.Indices {
		if i == 0 {
			at = k
		}
	}
	if len(all.Indices) != 4 || at < 0 || at+1 >= len(all.Indices) || all.Indices[at+1] != 1 {
		t.Fatalf("placed %v", all.Indices)
	}
	if g := all.Report.Groups; len(g) != 1 || g[0].Decision != ctxpack.GroupIncluded || g[0].Value == nil || *g[0].Value != 1.0 {
		t.Fatalf("groups %+v", g)
	}
}

func TestGroupKeyInvalidUTF8(t *testing.T) {
	_, err := ctxpack.NewItemList(ctxpack.Item{Content: "ok", Tokens: 1},
		ctxpack.Item{Content: "x", Tokens: 1, Group: "tool\xff"})
	errorStatus(t, err, ctxpack.StatusInvalidUTF8, "item 1: group is not valid UTF-8")
}

// Two members worth 0.5 each against one item worth 0.8 with room for 20 tokens: the
// group wins by its sum and loses by its best member.
func TestGroupValueOption(t *testing.T) {
	items := []ctxpack.Item{
		{Content: "member one", Tokens: 10, FutureRelevanceHint: ctxpack.Float64(0.5), Group: "g"},
		{Content: "member two", Tokens: 10, FutureRelevanceHint: ctxpack.Float64(0.5), Group: "g"},
		{Content: "single", Tokens: 20, FutureRelevanceHint: ctxpack.Float64(0.8)},
	}
	b := newBudget(t, 20, 20)
	knapsack := must(ctxpack.NewKnapsackSlicer(1, 0))
	placer := must(ctxpack.NewChronologicalPlacer())
	cleanup(t, knapsack, placer)
	for _, c := range []struct {
		value ctxpack.GroupValue
		want  []int
	}{{ctxpack.GroupValueSum, []int{0, 1}}, {ctxpack.GroupValueMax, []int{2}}} {
		p := must(ctxpack.NewPipeline(reflexive(t), knapsack, placer, ctxpack.WithGroupValue(c.value)))
		cleanup(t, p)
		got := must(p.Run(items, b, nil)).Indices
		if len(got) != len(c.want) || !contains(got, c.want[0]) {
			t.Fatalf("group value %d: selected %v, expected %v", c.value, got, c.want)
		}
		sel := must(knapsack.SliceWithGroupValue(items, []float64{0.5, 0.5, 0.8}, b, c.value)).Selected
		if len(sel) != len(c.want) || !contains(sel, c.want[0]) {
			t.Fatalf("group value %d, slicer alone: selected %v, expected %v", c.value, sel, c.want)
		}
	}
	_, err := ctxpack.NewPipeline(reflexive(t), knapsack, placer, ctxpack.WithGroupValue(7))
	errorStatus(t, err, ctxpack.StatusInvalidArgument, "options.group_value is 7")

	// Placing alone: a group dated days 1 and 3 goes at its earliest member, members together.
	dated := []ctxpack.Item{day("early", 1, 1), day("between", 1, 2), day("late", 1, 3)}
	dated[0].Group, dated[2].Group = "g", "g"
	for _, v := range []ctxpack.GroupValue{ctxpack.GroupValueSum, ctxpack.GroupValueMean} {
		order := must(placer.PlaceWithGroupValue(dated, []float64{0.1, 0.2, 0.3}, v))
		if len(order) != 3 || order[0] != 0 || order[1] != 2 || order[2] != 1 {
			t.Fatalf("group value %d: order %v", v, order)
		}
	}
}

// A pinned, undated system prompt is placed last by the chronological placer, first with
// WithPinnedFirst.
func TestPinnedFirst(t *testing.T) {
	items := []ctxpack.Item{{Content: "You are a helpful assistant.", Tokens: 5, Pinned: true}, day("hi", 2, 1), day("hello!", 2, 2)}
	b := newBudget(t, 100, 100)
	spec := must(newPipeline(t, recency(t)).Run(items, b, nil)).Indices
	first := must(newPipeline(t, recency(t), ctxpack.WithPinnedFirst(true)).Run(items, b, nil)).Indices
	if len(spec) != 3 || spec[2] != 0 {
		t.Fatalf("default placement %v", spec)
	}
	if len(first) != 3 || first[0] != 0 || first[1] != 1 || first[2] != 2 {
		t.Fatalf("pinned-first placement %v", first)
	}
	// Policy JSON carries the same option.
	p := must(ctxpack.NewPipelineFromPolicyJSON(`{"scorers": [{"type": "recency", "weight": 1}],
		"slicerType": "greedy", "placerType": "chronological", "pinnedFirst": true}`))
	cleanup(t, p)
	if got := must(p.Run(items, b, nil)).Indices; len(got) != 3 || got[0] != 0 {
		t.Fatalf("policy JSON pinnedFirst: %v", got)
	}
}

// Items counted by the library: with a target of 0 each is excluded with its own count.
// The counts are the ones OpenAI documents for cl100k_base.
func TestEncodingCountedItems(t *testing.T) {
	items := []ctxpack.Item{
		{Content: "hello world", Encoding: "cl100k_base"},
		{Content: "tiktoken is great!", Encoding: "CL100K_BASE"},
	}
	res := must(newPipeline(t, recency(t)).Run(items, newBudget(t, 100, 0), &ctxpack.RunOptions{Trace: ctxpack.TraceStage}))
	want := map[int]int64{0: 2, 1: 6}
	if res.Report.TotalTokensConsidered != 8 || len(res.Report.Excluded) != 2 {
		t.Fatalf("report %+v", res.Report)
	}
	for _, e := range res.Report.Excluded {
		if e.Reason != ctxpack.ExclusionBudgetExceeded || e.ItemTokens != want[e.Index] {
			t.Fatalf("excluded %+v, expected %d tokens", e, want[e.Index])
		}
	}
	_, err := ctxpack.NewItemList(ctxpack.Item{Content: "x", Encoding: "p50k_base"})
	errorStatus(t, err, ctxpack.StatusInvalidArgument, `unknown encoding "p50k_base"`)
	_, err = ctxpack.NewItemList(ctxpack.Item{Content: "x", Tokens: 3, Encoding: "o200k_base"})
	errorStatus(t, err, ctxpack.StatusInvalidArgument, "desc.tokens is 3 but desc.encoding is set")
}

// A custom slicer that returns half a group has the group dropped.
func TestCustomSlicerHalfAGroup(t *testing.T) {
	half := must(ctxpack.NewCustomSlicer(func(items []ctxpack.Item, _ []float64, _, _ int64) ([]int, error) {
		for i, it := range items {
			if it.Content == callText {
				return []int{i}, nil
			}
		}
		return nil, nil
	}))
	placer := must(ctxpack.NewChronologicalPlacer())
	p := must(ctxpack.NewPipeline(reflexive(t), half, placer))
	cleanup(t, half, placer, p)
	res := must(p.Run(toolChat(true), newBudget(t, 100, 100), &ctxpack.RunOptions{Trace: ctxpack.TraceItem}))
	if len(res.Indices) != 0 {
		t.Fatalf("placed %v", res.Indices)
	}
	if g := res.Report.Groups; len(g) != 1 || !g[0].PartialSelection || g[0].Decision != ctxpack.GroupExcluded {
		t.Fatalf("groups %+v", g)
	}
}
