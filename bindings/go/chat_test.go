package ctxpack_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// Published counts (tiktoken's tests and the OpenAI cookbook), as in tests/c/test_tokenizer.c.
func TestEncodingCountsPublishedExamples(t *testing.T) {
	cl := must(ctxpack.EncodingByName("cl100k_base"))
	o := must(ctxpack.EncodingByName("O200K_BASE"))
	if cl.Name() != "cl100k_base" || o.Name() != "o200k_base" {
		t.Fatalf("names %q %q", cl.Name(), o.Name())
	}
	cases := []struct {
		e    *ctxpack.Encoding
		text string
		want int64
	}{
		{cl, "hello world", 2},
		{cl, "tiktoken is great!", 6},
		{cl, "antidisestablishmentarianism", 6},
		{o, "antidisestablishmentarianism", 6},
		{o, "2 + 2 = 4", 7},
		{cl, "お誕生日おめでとう", 9},
		{o, "お誕生日おめでとう", 8},
		{cl, "", 0},
	}
	for _, c := range cases {
		if got := must(c.e.Count(c.text)); got != c.want {
			t.Errorf("%s.Count(%q) = %d, want %d", c.e.Name(), c.text, got, c.want)
		}
	}
}

func TestEncodingLimitAndTruncate(t *testing.T) {
	o := must(ctxpack.EncodingByName("o200k_base"))
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200) + "終わり🦀"
	full := must(o.Count(text))
	if full < 1000 {
		t.Fatalf("count %d", full)
	}
	n, over, err := o.CountWithLimit(text, full)
	if err != nil || n != full || over {
		t.Errorf("at the limit: %d %v %v", n, over, err)
	}
	n, over, err = o.CountWithLimit(text, 10)
	if err != nil || n != 11 || !over {
		t.Errorf("over the limit: %d %v %v", n, over, err)
	}
	for _, max := range []int64{0, 1, 7, 100, full - 1, full, full + 5} {
		prefix, tokens, err := o.Truncate(text, max)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, prefix) || tokens > max || must(o.Count(prefix)) != tokens {
			t.Errorf("Truncate(%d): %d tokens, %d bytes", max, tokens, len(prefix))
		}
		if max >= full && prefix != text {
			t.Errorf("Truncate(%d) of a text that fits cut it", max)
		}
	}
	if p, _, _ := o.Truncate(text, 0); p != "" {
		t.Errorf("Truncate(0) = %q", p)
	}
}

func TestEncodingErrors(t *testing.T) {
	_, err := ctxpack.EncodingByName("p50k_base")
	if !errors.Is(err, ctxpack.StatusInvalidArgument) || !strings.Contains(err.Error(), "o200k_base, cl100k_base") {
		t.Errorf("unknown name: %v", err)
	}
	o := must(ctxpack.EncodingByName("o200k_base"))
	if _, err := o.Count("ok \xc3\x28"); !errors.Is(err, ctxpack.StatusInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if _, _, err := o.CountWithLimit("x", -1); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("negative limit: %v", err)
	}
	if _, _, err := o.Truncate("x", -1); !errors.Is(err, ctxpack.StatusInvalidArgument) {
		t.Errorf("negative max: %v", err)
	}
}

func sampleRequest(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "data", name+"-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// messagesOf returns the "messages" array of a request body, each message as its bytes.
func messagesOf(t testing.TB, body string) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return req.Messages
}

// callsAndResults returns the tool call ids and the ids the tool results answer, sorted.
func callsAndResults(t testing.TB, format ctxpack.ChatFormat, messages []json.RawMessage) (calls, results []string) {
	t.Helper()
	for _, raw := range messages {
		var m struct {
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if format == ctxpack.ChatOpenAI {
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
			if m.ToolCallID != "" {
				results = append(results, m.ToolCallID)
			}
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string content
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				calls = append(calls, b.ID)
			case "tool_result":
				results = append(results, b.ToolUseID)
			}
		}
	}
	sort.Strings(calls)
	sort.Strings(results)
	return calls, results
}

func TestTrimChatSamplesKeepEveryCallWithItsResults(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	for _, tc := range []struct {
		name   string
		format ctxpack.ChatFormat
	}{{"openai", ctxpack.ChatOpenAI}, {"anthropic", ctxpack.ChatAnthropic}} {
		request := sampleRequest(t, tc.name)
		input := messagesOf(t, request)
		calls, results := callsAndResults(t, tc.format, input)
		if len(calls) < 4 || !reflect.DeepEqual(calls, results) {
			t.Fatalf("%s sample: calls %v, results %v", tc.name, calls, results)
		}
		droppedSome := false
		for _, max := range []int64{100000, 6000, 3000, 2000, 1500} {
			budget := newBudget(t, max, max)
			r, err := ctxpack.TrimChat(tc.format, request, budget, pipeline, &ctxpack.ChatOptions{Trace: ctxpack.TraceItem})
			if err != nil {
				t.Fatalf("%s at %d: %v", tc.name, max, err)
			}
			out := messagesOf(t, r.JSON)
			calls, results := callsAndResults(t, tc.format, out)
			if !reflect.DeepEqual(calls, results) {
				t.Errorf("%s at %d: calls %v, results %v", tc.name, max, calls, results)
			}
			// The output's messages are the input's kept ones, byte for byte.
			if len(out) != len(r.Kept) || len(r.Kept)+len(r.Dropped) != len(input) {
				t.Fatalf("%s at %d: %d messages out, kept %v, dropped %v", tc.name, max, len(out), r.Kept, r.Dropped)
			}
			for i, k := range r.Kept {
				if string(out[i]) != string(input[k]) {
					t.Errorf("%s at %d: message %d differs from messages[%d]", tc.name, max, i, k)
				}
			}
			if r.Tokens > max || r.Tokens > r.InputTokens || (len(r.Dropped) == 0) != (r.JSON == request) {
				t.Errorf("%s at %d: tokens %d of %d, dropped %v", tc.name, max, r.Tokens, r.InputTokens, r.Dropped)
			}
			droppedSome = droppedSome || len(r.Dropped) > 0
			// The provider rules that adjust a selection or pin a message are Anthropic's.
			if tc.format == ctxpack.ChatOpenAI && (len(r.Adjustments) != 0 || len(r.RulePins) != 0) {
				t.Errorf("%s at %d: adjustments %v, rule pins %v", tc.name, max, r.Adjustments, r.RulePins)
			}
			// The report names every item; the excluded ones are dropped messages.
			rep := r.Selection.Report
			if rep == nil || rep.TotalCandidates != len(r.ItemPaths) {
				t.Fatalf("%s at %d: report %v, %d items", tc.name, max, rep, len(r.ItemPaths))
			}
			dropped := map[string]bool{}
			for _, d := range r.Dropped {
				dropped[fmt.Sprintf("messages[%d]", d)] = true
			}
			for _, e := range rep.Excluded {
				if !dropped[r.ItemPaths[e.Index]] {
					t.Errorf("%s at %d: excluded %s is not a dropped message", tc.name, max, r.ItemPaths[e.Index])
				}
			}
			for _, i := range r.Selection.Indices {
				if dropped[r.ItemPaths[i]] {
					t.Errorf("%s at %d: selected %s was dropped", tc.name, max, r.ItemPaths[i])
				}
			}
		}
		if !droppedSome {
			t.Errorf("%s: no budget dropped anything", tc.name)
		}
	}
}

func TestTrimChatOptions(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget := newBudget(t, 100000, 100000)
	request := `{"messages": [{"role": "user", "content": "Look up order 7."},` +
		`{"role": "assistant", "content": "It shipped."}, {"role": "user", "content": "Thanks."}]}`
	zero := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Overheads: &ctxpack.ChatOverheads{}}))
	ten := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Overheads: &ctxpack.ChatOverheads{PerMessage: 10, PerRequest: 1}}))
	if ten.InputTokens-zero.InputTokens != 31 {
		t.Errorf("overheads: %d vs %d", ten.InputTokens, zero.InputTokens)
	}
	// The texts are counted by the encoding: with no overheads, the sum of the roles' and
	// contents' counts.
	o := must(ctxpack.EncodingByName("o200k_base"))
	var want int64
	for _, s := range []string{"user", "Look up order 7.", "assistant", "It shipped.", "user", "Thanks."} {
		want += must(o.Count(s))
	}
	if zero.InputTokens != want {
		t.Errorf("counted %d, the encoding gives %d", zero.InputTokens, want)
	}
	def := must(ctxpack.TrimOpenAI(request, budget, pipeline, nil))
	named := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Encoding: "o200k_base"}))
	if def.InputTokens != named.InputTokens || def.Selection.Report != nil {
		t.Errorf("default %d, o200k_base %d", def.InputTokens, named.InputTokens)
	}
	// Unpinned, a tight budget may drop the last turn; pinned, it never does.
	tight := newBudget(t, 12, 12)
	pinned := must(ctxpack.TrimOpenAI(request, tight, pipeline, nil))
	if pinned.Kept[len(pinned.Kept)-1] != 2 {
		t.Errorf("pinned: kept %v", pinned.Kept)
	}
	if _, err := ctxpack.TrimOpenAI(request, tight, pipeline, &ctxpack.ChatOptions{UnpinLastTurn: true}); err != nil {
		t.Errorf("unpinned: %v", err)
	}
}

// agentTurn is an Anthropic request after first (more messages, or ""): the task, a tool
// call with a long result, a short answer and the next question.
func agentTurn(first string) string {
	return `{"messages": [` + first + `{"role": "user", "content": "ten words about the task we are working on today"},` +
		`{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}]},` +
		`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "` +
		strings.TrimSpace(strings.Repeat("result ", 20)) + `"}]},` +
		`{"role": "assistant", "content": "short answer"},` +
		`{"role": "user", "content": "next question"}]}`
}

// When the selection would start an Anthropic request with the assistant's tool call, a
// user message is pinned for a second run rather than losing the leading units, as in
// tests/c/test_chat.c.
func TestTrimChatPinsAUserMessageRatherThanLosingTheLeadingUnits(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	roomy := newBudget(t, 1000000, 1000000)
	// Two user messages in a row are one turn to Anthropic: repeating the first message
	// measures its tokens.
	all := must(ctxpack.TrimAnthropic(agentTurn(""), roomy, pipeline, nil)).InputTokens
	first := must(ctxpack.TrimAnthropic(agentTurn(`{"role": "user", "content": "ten words about the task we are working on today"},`),
		roomy, pipeline, nil)).InputTokens - all
	if all <= 0 || first <= 0 {
		t.Fatalf("all %d, first %d", all, first)
	}
	// Room for everything but the first message, which the pipeline leaves out: the
	// selection would start with the tool call. Pinning the first message and running
	// again keeps it, the answer and the question; dropping would keep the question alone.
	r := must(ctxpack.TrimAnthropic(agentTurn(""), newBudget(t, all-first, all-first), pipeline, nil))
	if !reflect.DeepEqual(r.Kept, []int{0, 3, 4}) {
		t.Errorf("kept %v, want [0 3 4]", r.Kept)
	}
	if len(r.Adjustments) != 0 {
		t.Errorf("adjustments %v", r.Adjustments)
	}
	if len(r.RulePins) != 1 || r.RulePins[0].Path != "messages[0]" ||
		!strings.Contains(r.RulePins[0].Reason, "starts with a user message") {
		t.Errorf("rule pins %+v", r.RulePins)
	}
	// With room for everything, nothing is pinned.
	if full := must(ctxpack.TrimAnthropic(agentTurn(""), roomy, pipeline, nil)); len(full.RulePins) != 0 {
		t.Errorf("everything fits: rule pins %+v", full.RulePins)
	}
}

func TestTrimChatErrors(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget := newBudget(t, 1000, 1000)
	cases := []struct {
		format  ctxpack.ChatFormat
		request string
		opts    *ctxpack.ChatOptions
		status  ctxpack.Status
		message string
	}{
		{ctxpack.ChatOpenAI, `{"messages": [`, nil, ctxpack.StatusInvalidRequest, "$: malformed JSON"},
		{ctxpack.ChatOpenAI, `{"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": "r"}]}`,
			nil, ctxpack.StatusInvalidRequest, "messages[1].tool_call_id"},
		{ctxpack.ChatAnthropic, sampleRequest(t, "openai"), nil, ctxpack.StatusInvalidRequest, "messages[0].role"},
		{ctxpack.ChatFormat(7), `{}`, nil, ctxpack.StatusInvalidArgument, "format is 7"},
		{ctxpack.ChatOpenAI, "{\"messages\": \"\xff\"}", nil, ctxpack.StatusInvalidUTF8, "request"},
		{ctxpack.ChatOpenAI, `{"messages": [{"role": "user", "content": "hi"}]}`, &ctxpack.ChatOptions{Encoding: "gpt2"},
			ctxpack.StatusInvalidArgument, "options.encoding"},
		{ctxpack.ChatOpenAI, `{"messages": [{"role": "user", "content": "hi"}]}`, &ctxpack.ChatOptions{Overheads: &ctxpack.ChatOverheads{Media: -1}},
			ctxpack.StatusInvalidArgument, "options.overhead_media must be >= 0"},
		{ctxpack.ChatOpenAI, sampleRequest(t, "openai"), nil, ctxpack.StatusPinnedExceedsBudget, "pinned tokens"},
	}
	small := newBudget(t, 50, 50)
	for _, c := range cases {
		b := budget
		if c.status == ctxpack.StatusPinnedExceedsBudget {
			b = small
		}
		r, err := ctxpack.TrimChat(c.format, c.request, b, pipeline, c.opts)
		var e *ctxpack.Error
		if r != nil || !errors.As(err, &e) || e.Status != c.status || !strings.Contains(e.Message, c.message) {
			t.Errorf("%.40q: %v, want %v containing %q", c.request, err, c.status, c.message)
		}
	}
	// A closed pipeline is a reported error, not a crash.
	closed := must(ctxpack.NewPresetPipeline("chat"))
	closed.Close()
	if _, err := ctxpack.TrimOpenAI(`{}`, budget, closed, nil); !errors.Is(err, ctxpack.StatusNullArgument) {
		t.Errorf("closed pipeline: %v", err)
	}
}

// A chat trim can carry a prefix state across turns: the same request trimmed again with
// the first turn's state gives the same request and reuses all of it; a state of another
// conversation is refused; a previous state without Prefix is an argument error; without
// Prefix the result has no reuse report and no state.
func TestTrimChatPrefixStateAcrossTurns(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget := newBudget(t, 6000, 4000)
	request := sampleRequest(t, "openai")
	prefix := &ctxpack.PrefixOptions{Conversation: []byte("conversation-1"), CacheRule: "openai"}
	first := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Prefix: prefix}))
	if first.Reuse == nil || first.State == nil {
		t.Fatal("a trim with Prefix has a reuse report and a state")
	}
	defer first.State.Close()
	if first.Reuse.Turn != 1 || first.Reuse.PreviousEntries != 0 || len(first.JSON) >= len(request) {
		t.Fatalf("first turn: %+v (%d of %d bytes)", *first.Reuse, len(first.JSON), len(request))
	}
	second := must(ctxpack.TrimOpenAI(request, budget, pipeline,
		&ctxpack.ChatOptions{Prefix: prefix, PreviousState: first.State}))
	defer second.State.Close()
	r := second.Reuse
	if second.JSON != first.JSON || r.Turn != 2 || r.Difference != nil ||
		r.KeptEntries != r.WindowEntries || r.KeptTokens != first.Reuse.WindowTokens {
		t.Fatalf("second turn: %+v", *r)
	}
	if !strings.Contains(r.JSON, `"kept_entries"`) {
		t.Errorf("reuse JSON %s", r.JSON)
	}
	other := &ctxpack.PrefixOptions{Conversation: []byte("conversation-2")}
	_, err := ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Prefix: other, PreviousState: first.State})
	wantStatus(t, err, ctxpack.StatusInvalidState, "conversation")
	_, err = ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{PreviousState: first.State})
	wantStatus(t, err, ctxpack.StatusInvalidArgument, "previous_state")
	plain := must(ctxpack.TrimOpenAI(request, budget, pipeline, nil))
	if plain.Reuse != nil || plain.State != nil || plain.JSON != first.JSON {
		t.Errorf("without Prefix: reuse %v, state %v", plain.Reuse, plain.State)
	}
}
