package ctxpack_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// listItems are varied items (kinds, tags, metadata, priorities, timestamps, a pinned
// item, a group) for comparing the calls over a []Item with the calls over an ItemList.
func listItems(n int) []ctxpack.Item {
	kinds := []string{"Message", "Document", "ToolOutput", "Memory"}
	items := make([]ctxpack.Item, n)
	for i := range items {
		items[i] = day(fmt.Sprintf("list item %d", i), int64(5+i*7%31), i%40)
		items[i].Kind = kinds[i%len(kinds)]
		items[i].Priority = ctxpack.Int64(int64(i % 9))
		items[i].Tags = []string{fmt.Sprintf("t%d", i%3), "shared"}
		if i%5 == 0 {
			items[i].Metadata = map[string]string{"cupel:trust": "0.7", "k": fmt.Sprint(i)}
		}
	}
	items[3].Pinned = true
	items[10].Group, items[11].Group = "call-1", "call-1"
	return items
}

// Each call over an ItemList answers exactly what the same call over the []Item does.
func TestListCallsEqualSliceCalls(t *testing.T) {
	items := listItems(60)
	list := must(ctxpack.NewItemList(items...))
	cleanup(t, list)
	budget := newBudget(t, 400, 300)
	chat := must(ctxpack.NewPresetPipeline("chat"))
	rag := must(ctxpack.NewPresetPipeline("rag"))
	cleanup(t, chat, rag)
	scores := make([]float64, len(items))
	for i := range scores {
		scores[i] = float64(i%13) / 12
	}

	same := func(name string, fromSlice, fromList interface{}, errSlice, errList error) {
		t.Helper()
		if errSlice != nil || errList != nil {
			t.Errorf("%s: errors %v / %v", name, errSlice, errList)
			return
		}
		if !reflect.DeepEqual(fromSlice, fromList) {
			t.Errorf("%s: over the list\n%+v\nover the slice\n%+v", name, fromList, fromSlice)
		}
	}

	dry, err1 := chat.DryRun(items, budget)
	dryList, err2 := chat.DryRunList(list, budget)
	same("DryRun", traced(dry), traced(dryList), err1, err2)
	if len(dryList.Indices) == 0 || len(dryList.Indices) == len(items) {
		t.Errorf("the dry run selected %d of %d items: the comparison is not telling", len(dryList.Indices), len(items))
	}

	// Run over a slice is the one-shot run over descriptors; it answers as the list run,
	// untraced and traced.
	for _, opts := range []*ctxpack.RunOptions{nil, {Trace: ctxpack.TraceItem}} {
		run, err1 := chat.Run(items, budget, opts)
		runList, err2 := chat.RunList(list, budget, opts)
		same("Run", traced(run), traced(runList), err1, err2)
	}

	marginal, err1 := chat.MarginalItems(items, budget, 60)
	marginalList, err2 := chat.MarginalItemsList(list, budget, 60)
	same("MarginalItems", marginal, marginalList, err1, err2)
	if len(marginalList) == 0 {
		t.Error("MarginalItems found nothing: the comparison is not telling")
	}

	type minBudget struct {
		budget int64
		found  bool
	}
	b1, f1, err1 := chat.MinBudgetFor(items, 7, 5000)
	b2, f2, err2 := chat.MinBudgetForList(list, 7, 5000)
	same("MinBudgetFor", minBudget{b1, f1}, minBudget{b2, f2}, err1, err2)

	variants := []ctxpack.SensitivityVariant{{Label: "chat", Pipeline: chat}, {Label: "rag", Pipeline: rag}}
	sens, err1 := ctxpack.CompareSensitivity(items, budget, variants...)
	sensList, err2 := ctxpack.CompareSensitivityList(list, budget, variants...)
	for _, s := range []*ctxpack.Sensitivity{&sens, &sensList} {
		for i := range s.Results {
			s.Results[i] = traced(s.Results[i])
		}
	}
	same("CompareSensitivity", sens, sensList, err1, err2)

	scorer := must(ctxpack.NewScaledScorer(must(ctxpack.NewPriorityScorer())))
	cleanup(t, scorer)
	sc, err1 := scorer.Score(items)
	scList, err2 := scorer.ScoreList(list)
	same("Score", sc, scList, err1, err2)
	if len(scList) != len(items) {
		t.Errorf("ScoreList returned %d scores for %d items", len(scList), len(items))
	}

	slicer := must(ctxpack.NewCountQuotaSlicer(must(ctxpack.NewGreedySlicer()), ctxpack.ScarcityDegrade,
		ctxpack.CountQuotaEntry{Kind: "Memory", RequireCount: 2, CapCount: 5}))
	cleanup(t, slicer)
	sl, err1 := slicer.Slice(items, scores, budget)
	slList, err2 := slicer.SliceList(list, scores, budget)
	same("Slice", sl, slList, err1, err2)
	slMax, err1 := slicer.SliceWithGroupValue(items, scores, budget, ctxpack.GroupValueMax)
	slMaxList, err2 := slicer.SliceListWithGroupValue(list, scores, budget, ctxpack.GroupValueMax)
	same("SliceWithGroupValue", slMax, slMaxList, err1, err2)

	placer := must(ctxpack.NewUShapedPlacer())
	cleanup(t, placer)
	pl, err1 := placer.Place(items, scores)
	plList, err2 := placer.PlaceList(list, scores)
	same("Place", pl, plList, err1, err2)
	plMean, err1 := placer.PlaceWithGroupValue(items, scores, ctxpack.GroupValueMean)
	plMeanList, err2 := placer.PlaceListWithGroupValue(list, scores, ctxpack.GroupValueMean)
	same("PlaceWithGroupValue", plMean, plMeanList, err1, err2)
}

// The list calls see the list as it is when they start, and a closed list is a reported
// error, not a crash.
func TestListCallsFollowTheList(t *testing.T) {
	items := listItems(20)
	list := must(ctxpack.NewItemList(items[:10]...))
	cleanup(t, list)
	scorer := must(ctxpack.NewPriorityScorer())
	cleanup(t, scorer)
	if got := must(scorer.ScoreList(list)); len(got) != 10 {
		t.Fatalf("%d scores for 10 items", len(got))
	}
	if err := list.Push(items[10:]...); err != nil {
		t.Fatal(err)
	}
	got := must(scorer.ScoreList(list))
	if want := must(scorer.Score(items)); !reflect.DeepEqual(got, want) {
		t.Errorf("after Push: %v, want %v", got, want)
	}
	chat := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, chat)
	budget := newBudget(t, 100, 80)
	if _, _, err := chat.MinBudgetForList(list, -1, 100); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("a negative target: %v", err)
	}
	if _, _, err := chat.MinBudgetForList(list, 20, 100); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("a target past the list: %v", err)
	}

	list.Close()
	checks := map[string]error{}
	_, checks["DryRunList"] = chat.DryRunList(list, budget)
	_, checks["MarginalItemsList"] = chat.MarginalItemsList(list, budget, 10)
	_, _, checks["MinBudgetForList"] = chat.MinBudgetForList(list, 0, 100)
	_, checks["ScoreList"] = scorer.ScoreList(list)
	_, checks["PlaceList"] = must(ctxpack.NewChronologicalPlacer()).PlaceList(list, nil)
	for name, err := range checks {
		if !errors.Is(err, ctxpack.StatusNullArgument) {
			t.Errorf("%s over a closed list: %v, want StatusNullArgument", name, err)
		}
	}
}

// A view callback reads, field by field, exactly what the copying callback receives.
func TestViewsReadWhatItemsCopy(t *testing.T) {
	full := ctxpack.Item{
		Content: "full", Tokens: 7, Kind: "Document", Source: "rag",
		Priority: ctxpack.Int64(-3), Tags: []string{"x", "y", "x"},
		Metadata:            map[string]string{"cupel:trust": "0.5", "b": "é", "a": ""},
		Timestamp:           time.Date(2024, 2, 29, 12, 30, 0, 123456789, time.UTC),
		FutureRelevanceHint: ctxpack.Float64(1.5), OriginalTokens: ctxpack.Int64(70), Pinned: false,
	}
	bare := ctxpack.Item{Content: "bare", Tokens: 1}
	type seenItem struct {
		Content             string
		ContentLen          int
		Tokens              int64
		Kind, Source        string
		Priority            int64
		HasPriority         bool
		Tags                []string
		TagByIndex          []string
		HasX, HasZ          bool
		Metadata            map[string]string
		Trust               string
		HasTrust            bool
		Timestamp           time.Time
		HasTimestamp        bool
		Hint                float64
		HasHint             bool
		Original            int64
		HasOriginal         bool
		Pinned, IsDocument  bool
		Copy                ctxpack.Item
		MetadataSortedByKey bool
	}
	var seen []seenItem
	s := must(ctxpack.NewCustomViewScorer(func(items ctxpack.ItemViews, scores []float64) error {
		for i := 0; i < items.Len(); i++ {
			v := items.At(i)
			var x seenItem
			x.Content, x.ContentLen, x.Tokens, x.Kind, x.Source = v.Content(), v.ContentLen(), v.Tokens(), v.Kind(), v.Source()
			x.Priority, x.HasPriority = v.Priority()
			x.Tags = v.Tags()
			for k := 0; k < v.TagCount(); k++ {
				x.TagByIndex = append(x.TagByIndex, v.Tag(k))
			}
			x.HasX, x.HasZ = v.HasTag("x"), v.HasTag("z")
			x.MetadataSortedByKey = true
			prev := ""
			for k := 0; k < v.MetadataCount(); k++ {
				key, value := v.MetadataAt(k)
				if x.Metadata == nil {
					x.Metadata = map[string]string{}
				}
				x.Metadata[key] = value
				if k > 0 && key <= prev {
					x.MetadataSortedByKey = false
				}
				prev = key
			}
			x.Trust, x.HasTrust = v.Metadata("cupel:trust")
			x.Timestamp, x.HasTimestamp = v.Timestamp()
			x.Hint, x.HasHint = v.FutureRelevanceHint()
			x.Original, x.HasOriginal = v.OriginalTokens()
			x.Pinned, x.IsDocument = v.Pinned(), v.IsKind("Document")
			x.Copy = v.Item()
			seen = append(seen, x)
			scores[i] = 0.5
		}
		return nil
	}))
	cleanup(t, s)
	if _, err := newPipeline(t, s).Run([]ctxpack.Item{full, bare}, newBudget(t, 100, 100), nil); err != nil {
		t.Fatal(err)
	}
	bareCopy := bare
	bareCopy.Kind, bareCopy.Source = "Message", "Chat"
	want := []seenItem{{
		Content: "full", ContentLen: 4, Tokens: 7, Kind: "Document", Source: "rag", Priority: -3, HasPriority: true,
		Tags: []string{"x", "y", "x"}, TagByIndex: []string{"x", "y", "x"}, HasX: true,
		Metadata: full.Metadata, Trust: "0.5", HasTrust: true, Timestamp: full.Timestamp, HasTimestamp: true,
		Hint: 1.5, HasHint: true, Original: 70, HasOriginal: true, IsDocument: true, Copy: full, MetadataSortedByKey: true,
	}, {
		Content: "bare", ContentLen: 4, Tokens: 1, Kind: "Message", Source: "Chat", Copy: bareCopy, MetadataSortedByKey: true,
	}}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("the views read\n%+v\nwant\n%+v", seen, want)
	}
}

// A view kept past its callback panics on use instead of reading the library's freed
// memory.
func TestViewsExpireWithTheirCallback(t *testing.T) {
	var kept ctxpack.ItemViews
	var keptItem ctxpack.ItemView
	s := must(ctxpack.NewCustomViewScorer(func(items ctxpack.ItemViews, scores []float64) error {
		kept, keptItem = items, items.At(0)
		for i := range scores {
			scores[i] = 1
		}
		return nil
	}))
	cleanup(t, s)
	if _, err := newPipeline(t, s).Run([]ctxpack.Item{day("a", 1, 0), day("b", 1, 1)}, newBudget(t, 10, 10), nil); err != nil {
		t.Fatal(err)
	}
	if kept.Len() != 2 {
		t.Fatalf("the callback saw %d items", kept.Len())
	}
	uses := map[string]func(){
		"ItemViews.At":     func() { kept.At(1) },
		"ItemViews.Items":  func() { kept.Items() },
		"ItemView.Content": func() { keptItem.Content() },
		"ItemView.Tokens":  func() { keptItem.Tokens() },
		"ItemView.HasTag":  func() { keptItem.HasTag("x") },
	}
	for name, use := range uses {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s after the callback returned did not panic", name)
				}
			}()
			use()
		}()
	}
}

// An index outside the views panics inside the callback, which fails the run with
// StatusCallback (the panic does not cross into the library).
func TestViewIndexOutOfRangeFailsTheRun(t *testing.T) {
	s := must(ctxpack.NewCustomViewScorer(func(items ctxpack.ItemViews, scores []float64) error {
		items.At(items.Len())
		return nil
	}))
	cleanup(t, s)
	_, err := newPipeline(t, s).Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil)
	if !errors.Is(err, ctxpack.StatusCallback) {
		t.Errorf("got %v, want StatusCallback", err)
	}
}

// The view slicer and placer see the same items as the copying ones, and their answers
// are used the same way.
func TestViewSlicerAndPlacerMatchCopyingOnes(t *testing.T) {
	items := listItems(30)
	budget := newBudget(t, 200, 150)
	scorer := recency(t)
	// Smallest first until the target is reached; reverse placement order.
	slice := func(tokens func(int) int64, n int, target int64) []int {
		var out []int
		var used int64
		for i := 0; i < n; i++ {
			if used+tokens(i) <= target {
				out = append(out, i)
				used += tokens(i)
			}
		}
		return out
	}
	reverse := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = n - 1 - i
		}
		return out
	}
	copying := must(ctxpack.NewPipeline(scorer,
		must(ctxpack.NewCustomSlicer(func(its []ctxpack.Item, _ []float64, target, _ int64) ([]int, error) {
			return slice(func(i int) int64 { return its[i].Tokens }, len(its), target), nil
		})),
		must(ctxpack.NewCustomPlacer(func(its []ctxpack.Item, _ []float64) ([]int, error) { return reverse(len(its)), nil }))))
	viewing := must(ctxpack.NewPipeline(scorer,
		must(ctxpack.NewCustomViewSlicer(func(vs ctxpack.ItemViews, _ []float64, target, _ int64) ([]int, error) {
			return slice(func(i int) int64 { return vs.At(i).Tokens() }, vs.Len(), target), nil
		})),
		must(ctxpack.NewCustomViewPlacer(func(vs ctxpack.ItemViews, _ []float64) ([]int, error) { return reverse(vs.Len()), nil }))))
	cleanup(t, copying, viewing)
	want := must(copying.Run(items, budget, nil))
	got := must(viewing.Run(items, budget, nil))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("view pipeline %+v, copying pipeline %+v", got, want)
	}
	if len(got.Indices) == 0 || len(got.Indices) == len(items) {
		t.Errorf("%d of %d selected: the comparison is not telling", len(got.Indices), len(items))
	}
}

// A view scorer that reads a few fields costs a constant number of Go allocations per
// run, whatever the number of items (the copying scorer allocates per item).
func TestViewScorerAllocatesNothingPerItem(t *testing.T) {
	s := must(ctxpack.NewCustomViewScorer(func(items ctxpack.ItemViews, scores []float64) error {
		for i := 0; i < items.Len(); i++ {
			v := items.At(i)
			score := float64(v.Tokens()) / 100
			if v.HasTag("shared") && v.IsKind("Memory") {
				score++
			}
			if p, ok := v.Priority(); ok {
				score += float64(p)
			}
			scores[i] = score
		}
		return nil
	}))
	cleanup(t, s)
	p := newPipeline(t, s)
	budget := newBudget(t, 100000, 100000)
	allocs := func(n int) float64 {
		list := must(ctxpack.NewItemList(listItems(n)...))
		defer list.Close()
		return testing.AllocsPerRun(20, func() { must(p.RunList(list, budget, nil)) })
	}
	small, large := allocs(20), allocs(2000)
	t.Logf("Go allocations per run: %.0f at 20 items, %.0f at 2000", small, large)
	if large-small > 20 {
		t.Errorf("%.0f Go allocations per run at 2000 items against %.0f at 20: the views allocate per item", large, small)
	}
}
