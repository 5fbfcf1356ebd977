package ctxpack_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// allStatuses are the Status constants of the package, OK first.
var allStatuses = []ctxpack.Status{
	ctxpack.StatusOK, ctxpack.StatusEmptyContent, ctxpack.StatusEmptyKind, ctxpack.StatusEmptySource,
	ctxpack.StatusInvalidBudget, ctxpack.StatusPinnedExceedsBudget, ctxpack.StatusOverflow,
	ctxpack.StatusScorerConfig, ctxpack.StatusSlicerConfig, ctxpack.StatusPipelineConfig,
	ctxpack.StatusTableTooLarge, ctxpack.StatusCountRequirementUnmet, ctxpack.StatusCallback,
	ctxpack.StatusTokenOverflow, ctxpack.StatusInvalidPolicy, ctxpack.StatusInvalidArgument,
	ctxpack.StatusOutOfMemory, ctxpack.StatusUnsupported, ctxpack.StatusCancelled, ctxpack.StatusInvalidState,
	ctxpack.StatusInvalidRequest,
	ctxpack.StatusNullArgument, ctxpack.StatusInvalidUTF8, ctxpack.StatusWrongHandleType,
	ctxpack.StatusOutOfRange, ctxpack.StatusNoReport, ctxpack.StatusPanic,
}

// Every status the library can name has a Go constant with the same name, and no Go
// constant is unknown to the library.
func TestStatusesMatchLibrary(t *testing.T) {
	known := map[ctxpack.Status]bool{}
	for _, s := range allStatuses {
		known[s] = true
		if lib := ctxpack.LibraryStatusName(s); lib != s.String() {
			t.Errorf("status %d: Go name %s, library name %s", int32(s), s, lib)
		}
	}
	for v := int32(-5); v < 1000; v++ {
		s := ctxpack.Status(v)
		lib := ctxpack.LibraryStatusName(s)
		if lib != "CTXPACK_UNKNOWN_STATUS" && !known[s] {
			t.Errorf("the library knows status %d (%s); the Go binding does not", v, lib)
		}
	}
	if got := ctxpack.Status(77).String(); got != "CTXPACK_STATUS(77)" {
		t.Errorf("unknown status prints as %s", got)
	}
}

func TestErrorMatchesItsStatusOnly(t *testing.T) {
	for _, s := range allStatuses[1:] {
		var err error = &ctxpack.Error{Status: s, Message: "m"}
		for _, other := range allStatuses {
			if errors.Is(err, other) != (other == s) {
				t.Errorf("errors.Is(%s error, %s) = %v", s, other, !(other == s))
			}
		}
		if !strings.Contains(err.Error(), s.String()) || !strings.HasSuffix(err.Error(), ": m") {
			t.Errorf("error text %q", err.Error())
		}
	}
}

// statusCase produces one status through the Go API and the real library.
type statusCase struct {
	want    ctxpack.Status
	produce func(t *testing.T) error
}

// runItems runs a recency/greedy/chronological pipeline over items.
func runItems(t *testing.T, items []ctxpack.Item, max, target int64, opts ...ctxpack.PipelineOption) error {
	_, err := newPipeline(t, recency(t), opts...).Run(items, newBudget(t, max, target), nil)
	return err
}

func pushOne(item ctxpack.Item) error {
	l, err := ctxpack.NewItemList(item)
	if err == nil {
		l.Close()
	}
	return err
}

var statusCases = []statusCase{
	{ctxpack.StatusEmptyContent, func(t *testing.T) error { return pushOne(ctxpack.Item{Tokens: 1}) }},
	{ctxpack.StatusEmptyKind, func(t *testing.T) error { return pushOne(ctxpack.Item{Content: "a", Kind: "  "}) }},
	{ctxpack.StatusEmptySource, func(t *testing.T) error { return pushOne(ctxpack.Item{Content: "a", Source: "\t"}) }},
	{ctxpack.StatusInvalidBudget, func(t *testing.T) error { _, err := ctxpack.NewBudget(10, 20); return err }},
	{ctxpack.StatusPinnedExceedsBudget, func(t *testing.T) error {
		return runItems(t, []ctxpack.Item{{Content: "p", Tokens: 90, Pinned: true}}, 50, 50)
	}},
	{ctxpack.StatusOverflow, func(t *testing.T) error {
		// Pinned tokens above the target but within the window overflow under Throw.
		return runItems(t, []ctxpack.Item{{Content: "p", Tokens: 80, Pinned: true}}, 100, 50)
	}},
	{ctxpack.StatusScorerConfig, func(t *testing.T) error { _, err := ctxpack.NewMetadataKeyScorer("k", "v", 0); return err }},
	{ctxpack.StatusSlicerConfig, func(t *testing.T) error {
		_, err := ctxpack.NewKnapsackSlicer(-1, 0)
		return err
	}},
	{ctxpack.StatusPipelineConfig, func(t *testing.T) error { _, err := ctxpack.NewPipeline(nil, nil, nil); return err }},
	{ctxpack.StatusTableTooLarge, func(t *testing.T) error {
		slicer := must(ctxpack.NewKnapsackSlicer(1, 1))
		placer := must(ctxpack.NewChronologicalPlacer())
		p := must(ctxpack.NewPipeline(recency(t), slicer, placer))
		cleanup(t, slicer, placer, p)
		_, err := p.Run([]ctxpack.Item{day("a", 10, 0), day("b", 10, 1)}, newBudget(t, 1000, 1000), nil)
		return err
	}},
	{ctxpack.StatusCountRequirementUnmet, func(t *testing.T) error {
		inner := must(ctxpack.NewGreedySlicer())
		slicer := must(ctxpack.NewCountQuotaSlicer(inner, ctxpack.ScarcityThrow,
			ctxpack.CountQuotaEntry{Kind: "Memory", RequireCount: 2, CapCount: 2}))
		placer := must(ctxpack.NewChronologicalPlacer())
		p := must(ctxpack.NewPipeline(recency(t), slicer, placer))
		cleanup(t, inner, slicer, placer, p)
		_, err := p.Run([]ctxpack.Item{day("a", 10, 0)}, newBudget(t, 1000, 1000), nil)
		return err
	}},
	{ctxpack.StatusCallback, func(t *testing.T) error {
		s := must(ctxpack.NewCustomScorer(func(items []ctxpack.Item, scores []float64) error {
			return nil // leaves the NaN pre-fill: a non-finite score
		}))
		cleanup(t, s)
		_, err := newPipeline(t, s).Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil)
		return err
	}},
	{ctxpack.StatusTokenOverflow, func(t *testing.T) error {
		// Pinned tokens summed past int64.
		items := []ctxpack.Item{{Content: "a", Tokens: math.MaxInt64, Pinned: true}, {Content: "b", Tokens: 1, Pinned: true}}
		return runItems(t, items, math.MaxInt64, math.MaxInt64, ctxpack.WithOverflowStrategy(ctxpack.OverflowProceed))
	}},
	{ctxpack.StatusInvalidPolicy, func(t *testing.T) error {
		_, err := ctxpack.NewPipelineFromPolicyJSON(`{"scorers": [{"type": "recency", "weight": -1}]}`)
		return err
	}},
	{ctxpack.StatusInvalidArgument, func(t *testing.T) error {
		_, err := ctxpack.NewPipeline(recency(t), nil, nil, ctxpack.WithOverflowStrategy(7))
		return err
	}},
	{ctxpack.StatusOutOfMemory, func(t *testing.T) error {
		// No table limit and a budget of 10^12 tokens: the knapsack's DP row alone needs
		// 4 TB, which is an error, not an abort.
		slicer := must(ctxpack.NewKnapsackSlicer(1, math.MaxUint64))
		placer := must(ctxpack.NewChronologicalPlacer())
		scorer := must(ctxpack.NewReflexiveScorer())
		p := must(ctxpack.NewPipeline(scorer, slicer, placer))
		cleanup(t, slicer, placer, scorer, p)
		const budget = 1_000_000_000_000
		items := []ctxpack.Item{
			{Content: "a", Tokens: 600_000_000_000, FutureRelevanceHint: ctxpack.Float64(0.9)},
			{Content: "b", Tokens: 600_000_000_000, FutureRelevanceHint: ctxpack.Float64(0.8)},
		}
		_, err := p.Run(items, newBudget(t, budget, budget), nil)
		return err
	}},
	{ctxpack.StatusNullArgument, func(t *testing.T) error {
		// A closed handle is passed as NULL: a reported error, not a use after free.
		b := must(ctxpack.NewBudget(10, 10))
		b.Close()
		_, err := newPipeline(t, recency(t)).Run(nil, b, nil)
		return err
	}},
	{ctxpack.StatusInvalidUTF8, func(t *testing.T) error { return pushOne(ctxpack.Item{Content: "caf\xe9", Tokens: 1}) }},
	{ctxpack.StatusCancelled, func(t *testing.T) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newPipeline(t, recency(t)).RunContext(ctx, []ctxpack.Item{{Content: "a", Tokens: 1}}, newBudget(t, 10, 10), nil)
		return err
	}},
}

// TestStatusesFromTheLibrary produces every status through real calls and checks the
// typed error: errors.Is with the sentinel, errors.As to *Error, a message. With the
// build tag ctxpack_testhooks (run.sh) the hooks cover the statuses the typed API
// cannot reach, and the test demands that every status was produced.
func TestStatusesFromTheLibrary(t *testing.T) {
	produced := map[ctxpack.Status]bool{}
	for _, c := range append(statusCases, hookStatusCases...) {
		c := c
		t.Run(c.want.String(), func(t *testing.T) {
			err := c.produce(t)
			var e *ctxpack.Error
			switch {
			case err == nil:
				t.Fatalf("no error; expected %s", c.want)
			case !errors.Is(err, c.want):
				t.Fatalf("got %v; expected %s", err, c.want)
			case !errors.As(err, &e) || e.Status != c.want:
				t.Fatalf("%v is not a *ctxpack.Error with status %s", err, c.want)
			case e.Message == "" && !messageless[c.want]:
				t.Fatalf("%s without a message", c.want)
			}
			t.Logf("%v", err)
			produced[c.want] = true
		})
	}
	for _, s := range allStatuses[1:] {
		if !produced[s] {
			if hooksEnabled {
				t.Errorf("status %s was never produced", s.String())
			} else {
				t.Logf("status %s needs the test hooks (run.sh: -tags ctxpack_testhooks)", s.String())
			}
		}
	}
}

func TestStatusPrintsAsAStatus(t *testing.T) {
	s := ctxpack.StatusOverflow
	for _, c := range []struct{ got, want string }{
		{fmt.Sprint(s), "CTXPACK_OVERFLOW"},
		{fmt.Sprintf("%v|%s|%+v", s, s, s), "CTXPACK_OVERFLOW|CTXPACK_OVERFLOW|CTXPACK_OVERFLOW"},
		{fmt.Sprintf("%d", s), "6"},
		{fmt.Sprintf("%q", s), `"CTXPACK_OVERFLOW"`},
		{fmt.Sprint(ctxpack.Status(77)), "CTXPACK_STATUS(77)"},
		// As an error it keeps the package prefix.
		{s.Error(), "ctxpack: CTXPACK_OVERFLOW"},
		{fmt.Sprint(error(&ctxpack.Error{Status: s, Message: "m"})), "ctxpack: CTXPACK_OVERFLOW: m"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
