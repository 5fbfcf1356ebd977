package ctxpack_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// numberedWords is "w1 w2 … wn": n distinct words.
func numberedWords(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i+1)
	}
	return strings.Join(words, " ")
}

// toolRequest is an OpenAI request whose tool message (messages[2]) has output as its
// content, between a question, the call, an answer and a follow-up.
func toolRequest(t testing.TB, output string) string {
	t.Helper()
	content, err := json.Marshal(output)
	if err != nil {
		t.Fatal(err)
	}
	return `{"model": "m", "messages": [{"role": "user", "content": "check the logs"},` +
		`{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", ` +
		`"function": {"name": "logs", "arguments": "{}"}}]},` +
		`{"role": "tool", "tool_call_id": "c1", "content": ` + string(content) + `},` +
		`{"role": "assistant", "content": "the logs are fine"},` +
		`{"role": "user", "content": "thanks, and now?"}]}`
}

// shortenBudget is a budget with room for the request with a short tool output plus 60
// tokens: too small for a 400-word output, enough for its 20+10-token head and tail.
func shortenBudget(t *testing.T, pipeline *ctxpack.Pipeline) (*ctxpack.Budget, int64) {
	t.Helper()
	roomy := newBudget(t, 1000000, 1000000)
	small := must(ctxpack.TrimOpenAI(toolRequest(t, "ok"), roomy, pipeline, nil)).InputTokens
	whole := must(ctxpack.TrimOpenAI(toolRequest(t, numberedWords(400)), roomy, pipeline, nil)).InputTokens
	max := small + 60
	if whole <= max+200 {
		t.Fatalf("the long output does not overflow the budget: %d tokens, budget %d", whole, max)
	}
	return newBudget(t, max, max), max
}

// toolContent returns the content string of messages[i] of a request body.
func toolContent(t *testing.T, body string, i int) string {
	t.Helper()
	var m struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(messagesOf(t, body)[i], &m); err != nil {
		t.Fatal(err)
	}
	return m.Content
}

// A long tool output that does not fit is dropped with its call; with Shorten the pair is
// kept and the output sent as its head (the encoding's 20-token prefix), the marker and a
// tail of at most 10 tokens, every other message unchanged.
func TestTrimChatShortensALongToolOutput(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget, max := shortenBudget(t, pipeline)
	original := numberedWords(400)
	request := toolRequest(t, original)
	input := messagesOf(t, request)

	plain := must(ctxpack.TrimOpenAI(request, budget, pipeline, nil))
	if !reflect.DeepEqual(plain.Kept, []int{0, 3, 4}) || !reflect.DeepEqual(plain.Dropped, []int{1, 2}) ||
		len(plain.Shortened) != 0 {
		t.Fatalf("without Shorten: kept %v, dropped %v, shortened %v", plain.Kept, plain.Dropped, plain.Shortened)
	}

	r := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{
		Shorten: &ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10}}))
	if !reflect.DeepEqual(r.Kept, []int{0, 1, 2, 3, 4}) || len(r.Dropped) != 0 || !reflect.DeepEqual(r.Shortened, []int{2}) {
		t.Fatalf("with Shorten: kept %v, dropped %v, shortened %v", r.Kept, r.Dropped, r.Shortened)
	}
	if r.Tokens > max || r.Tokens >= r.InputTokens {
		t.Errorf("tokens %d of %d, budget %d", r.Tokens, r.InputTokens, max)
	}
	out := messagesOf(t, r.JSON)
	if len(out) != len(input) {
		t.Fatalf("%d messages out of %d", len(out), len(input))
	}
	for i := range input {
		if i != 2 && string(out[i]) != string(input[i]) {
			t.Errorf("messages[%d] changed: %s", i, out[i])
		}
	}
	text := toolContent(t, r.JSON, 2)
	if !strings.HasPrefix(text, "w1 w2 w3 w4 w5 ") || !strings.HasSuffix(text, " w399 w400") ||
		!strings.Contains(text, "tokens omitted") || len(text) >= len(original) {
		t.Fatalf("shortened content %q", text)
	}
	// The head is the encoding's 20-token prefix, the tail a suffix of at most 10 tokens,
	// and the marker counts the tokens between them.
	enc := must(ctxpack.EncodingByName("o200k_base"))
	head, _, err := enc.Truncate(original, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, head) {
		t.Fatalf("content %q does not start with the 20-token prefix %q", text, head)
	}
	rest := strings.TrimPrefix(text, head)
	open, closing := "\n[… ", " tokens omitted …]\n"
	end := strings.Index(rest, closing)
	if !strings.HasPrefix(rest, open) || end < 0 {
		t.Fatalf("no default marker after the head: %q", rest)
	}
	omitted := must(strconv.ParseInt(rest[len(open):end], 10, 64))
	tail := rest[end+len(closing):]
	tailTokens := must(enc.Count(tail))
	if tail == "" || !strings.HasSuffix(original, tail) || tailTokens > 10 {
		t.Fatalf("tail %q (%d tokens)", tail, tailTokens)
	}
	if want := must(enc.Count(original)) - must(enc.Count(head)) - tailTokens; omitted != want {
		t.Errorf("marker says %d tokens omitted, the encoding %d", omitted, want)
	}
	// The tool message is the input's with its content replaced, nothing else.
	var got, want map[string]any
	if err := json.Unmarshal(out[2], &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(input[2], &want); err != nil {
		t.Fatal(err)
	}
	got["content"] = original
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tool message %v, want %v with the content cut", got, want)
	}

	// With room for everything nothing is shortened: the request comes back unchanged.
	roomy := newBudget(t, 1000000, 1000000)
	whole := must(ctxpack.TrimOpenAI(request, roomy, pipeline, &ctxpack.ChatOptions{
		Shorten: &ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10}}))
	if whole.JSON != request || len(whole.Shortened) != 0 {
		t.Errorf("everything fits: shortened %v", whole.Shortened)
	}
	// Both counts 0 is off, as a nil Shorten is.
	off := must(ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Shorten: &ctxpack.ChatShorten{}}))
	if off.JSON != plain.JSON || len(off.Shortened) != 0 {
		t.Errorf("zero Shorten: kept %v, shortened %v", off.Kept, off.Shortened)
	}
}

// A custom marker is what separates head and tail, with {omitted} filled in.
func TestTrimChatShortenCustomMarker(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget, _ := shortenBudget(t, pipeline)
	original := numberedWords(400)
	r := must(ctxpack.TrimOpenAI(toolRequest(t, original), budget, pipeline, &ctxpack.ChatOptions{
		Shorten: &ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: 0.5, Marker: " <<{omitted} cut>> "}}))
	if !reflect.DeepEqual(r.Shortened, []int{2}) {
		t.Fatalf("shortened %v, kept %v", r.Shortened, r.Kept)
	}
	text := toolContent(t, r.JSON, 2)
	start, end := strings.Index(text, " <<"), strings.Index(text, " cut>> ")
	if start < 0 || end < start || strings.Contains(text, "tokens omitted") || !strings.HasSuffix(text, " w400") {
		t.Fatalf("content %q", text)
	}
	if n, err := strconv.Atoi(text[start+3 : end]); err != nil || n <= 0 {
		t.Errorf("marker %q: %v", text[start:end+7], err)
	}
	if !strings.HasPrefix(original, text[:start]) || !strings.HasSuffix(original, text[end+7:]) {
		t.Errorf("head %q, tail %q", text[:start], text[end+7:])
	}
}

// A quality outside (0, 1], a negative count, and Shorten with Prefix are argument errors.
func TestTrimChatShortenErrors(t *testing.T) {
	pipeline := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, pipeline)
	budget := newBudget(t, 100000, 100000)
	request := toolRequest(t, numberedWords(400))
	cases := []struct {
		shorten *ctxpack.ChatShorten
		prefix  *ctxpack.PrefixOptions
		message string
	}{
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: 1.5}, nil, "shorten_quality"},
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: math.NaN()}, nil, "shorten_quality"},
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: -0.25}, nil, "shorten_quality"},
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: math.Inf(1)}, nil, "shorten_quality"},
		{&ctxpack.ChatShorten{HeadTokens: -1, TailTokens: 10}, nil, "Shorten.HeadTokens"},
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: -3}, nil, "Shorten.HeadTokens and Shorten.TailTokens"},
		{&ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10}, &ctxpack.PrefixOptions{}, "prefix"},
	}
	for _, c := range cases {
		r, err := ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{Shorten: c.shorten, Prefix: c.prefix})
		var e *ctxpack.Error
		if r != nil || !errors.As(err, &e) || e.Status != ctxpack.StatusInvalidArgument || !strings.Contains(e.Message, c.message) {
			t.Errorf("%+v (prefix %v): %v, want StatusInvalidArgument containing %q", *c.shorten, c.prefix != nil, err, c.message)
		}
	}
	// The bounds themselves are valid.
	for _, q := range []float64{1, 0.001} {
		if _, err := ctxpack.TrimOpenAI(request, budget, pipeline, &ctxpack.ChatOptions{
			Shorten: &ctxpack.ChatShorten{HeadTokens: 20, TailTokens: 10, Quality: q}}); err != nil {
			t.Errorf("quality %v: %v", q, err)
		}
	}
}
