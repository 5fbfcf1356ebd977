package ctxpack_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// messages returns n messages of 20 tokens, one a day.
func messages(n int) []ctxpack.Item {
	items := make([]ctxpack.Item, n)
	for i := range items {
		items[i] = day(fmt.Sprintf("message %d", i), 20, i)
	}
	return items
}

func wantStatus(t *testing.T, err error, status ctxpack.Status, fragment string) {
	t.Helper()
	var e *ctxpack.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, fragment) {
		t.Fatalf("want %v containing %q, got %v", status, fragment, err)
	}
}

func TestPrefixHoldKeepsTheWindowAndAppends(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 100)
	// No options: Hold with the defaults; no previous state: the turn anchors.
	t1, err := p.RunPrefix(messages(4), b, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer t1.State.Close()
	if t1.Reuse.Outcome != ctxpack.TurnAnchored || t1.Reuse.Turn != 1 || t1.Reuse.Difference != nil {
		t.Fatalf("turn 1: %+v", t1.Reuse)
	}
	info := must(t1.State.Info())
	// Four messages of 20 tokens fit the low watermark (80 % of 100).
	if info != (ctxpack.PrefixStateInfo{Turn: 1, Entries: 4, Tokens: 80}) {
		t.Fatalf("state: %+v", info)
	}
	t2, err := p.RunPrefix(messages(5), b, nil, nil, t1.State)
	if err != nil {
		t.Fatal(err)
	}
	defer t2.State.Close()
	r := t2.Reuse
	if r.Outcome != ctxpack.TurnHeld || r.KeptEntries != 4 || r.KeptTokens != 80 || r.CachedTokens != 80 || r.Difference != nil {
		t.Fatalf("turn 2: %+v", r)
	}
	if fmt.Sprint(t2.Result.Indices) != fmt.Sprint(append(append([]int{}, t1.Result.Indices...), 4)) {
		t.Fatalf("turn 2 indices %v after %v", t2.Result.Indices, t1.Result.Indices)
	}
	if !strings.Contains(r.JSON, `"outcome":"held"`) {
		t.Fatalf("JSON: %s", r.JSON)
	}
}

func TestPrefixMeasureReportsAnEditAndAppliesTheCacheRule(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 60)
	opts := &ctxpack.PrefixOptions{Mode: ctxpack.PrefixMeasure, CacheRule: "blocks:32"}
	t1 := must(p.RunPrefix(messages(6), b, nil, opts, nil))
	defer t1.State.Close()
	t2 := must(p.RunPrefix(messages(6), b, nil, opts, t1.State))
	defer t2.State.Close()
	// The three most recent messages (60 tokens) again; one whole 32-token block cached.
	if r := t2.Reuse; r.Outcome != ctxpack.TurnMeasured || r.KeptEntries != 3 || r.KeptTokens != 60 || r.CachedTokens != 32 || r.Difference != nil {
		t.Fatalf("%+v", r)
	}
	edited := messages(6)
	edited[3].Content += "!" // the oldest message of the window
	t3 := must(p.RunPrefix(edited, b, nil, opts, t2.State))
	defer t3.State.Close()
	d := t3.Reuse.Difference
	if d == nil || d.Reason != ctxpack.DifferenceEdited || d.Index != 0 || d.Item != 3 || d.PreviousPosition != 3 {
		t.Fatalf("%+v", d)
	}
}

func TestPrefixStateFormsRoundTripAndDamageIsRefused(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 100)
	run := must(p.RunPrefix(messages(3), b, nil, nil, nil))
	defer run.State.Close()
	data := must(run.State.Bytes())
	if !bytes.HasPrefix(data, []byte("CXPS")) {
		t.Fatalf("bytes %x", data)
	}
	back := must(ctxpack.ReadPrefixState(data))
	defer back.Close()
	if again := must(back.Bytes()); !bytes.Equal(again, data) {
		t.Fatal("binary form does not round trip")
	}
	text := must(run.State.JSON())
	fromJSON := must(ctxpack.ReadPrefixStateJSON(text))
	defer fromJSON.Close()
	if again := must(fromJSON.Bytes()); !bytes.Equal(again, data) {
		t.Fatal("JSON form does not round trip")
	}
	for cut := 0; cut < len(data); cut++ {
		if _, err := ctxpack.ReadPrefixState(data[:cut]); err == nil {
			t.Fatalf("%d bytes read", cut)
		}
	}
	flipped := append([]byte{}, data...)
	flipped[len(flipped)-5] ^= 1
	_, err := ctxpack.ReadPrefixState(flipped)
	wantStatus(t, err, ctxpack.StatusInvalidState, "checksum mismatch")
	_, err = ctxpack.ReadPrefixStateJSON(`{"format":1}`)
	wantStatus(t, err, ctxpack.StatusInvalidState, "invalid prefix state")
}

func TestPrefixConversationKeysAndOptionErrors(t *testing.T) {
	p := newPipeline(t, recency(t))
	b := newBudget(t, 100, 100)
	one := &ctxpack.PrefixOptions{Conversation: []byte("conv\x00one")}
	t1 := must(p.RunPrefix(messages(3), b, nil, one, nil))
	defer t1.State.Close()
	t2 := must(p.RunPrefix(messages(3), b, nil, one, t1.State))
	t2.State.Close()
	if t2.Reuse.Outcome != ctxpack.TurnHeld {
		t.Fatalf("%+v", t2.Reuse)
	}
	two := &ctxpack.PrefixOptions{Conversation: []byte("conv\x00two")}
	_, err := p.RunPrefix(messages(3), b, nil, two, t1.State)
	wantStatus(t, err, ctxpack.StatusInvalidState, "another conversation")
	_, err = p.RunPrefix(messages(3), b, nil, &ctxpack.PrefixOptions{Mode: 7}, nil)
	wantStatus(t, err, ctxpack.StatusInvalidArgument, "prefix_options.mode is 7")
	_, err = p.RunPrefix(messages(3), b, nil, &ctxpack.PrefixOptions{CacheRule: "gemini"}, nil)
	wantStatus(t, err, ctxpack.StatusInvalidArgument, "cache_rule is 'gemini'")
	bad := &ctxpack.PrefixOptions{Thresholds: &ctxpack.PrefixThresholds{MaxValueLoss: 1.5, LowWatermark: 0.8}}
	_, err = p.RunPrefix(messages(3), b, nil, bad, nil)
	wantStatus(t, err, ctxpack.StatusInvalidArgument, "max_value_loss must be in [0, 1], got 1.5")
	// A closed state is refused, not taken for a first turn.
	closed := must(p.RunPrefix(messages(3), b, nil, nil, nil))
	closed.State.Close()
	_, err = p.RunPrefix(messages(3), b, nil, nil, closed.State)
	wantStatus(t, err, ctxpack.StatusNullArgument, "closed")
	_, err = closed.State.Bytes()
	wantStatus(t, err, ctxpack.StatusNullArgument, "")
}
