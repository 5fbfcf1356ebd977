package ctxpack

// Chat requests in, chat requests out (docs/chat.md): an OpenAI Chat Completions or
// Anthropic Messages request body trimmed to a budget in one call, tool calls kept with
// their results.

/*
#include "ctxpack.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"unsafe"
)

// ChatFormat is the format of a chat request.
type ChatFormat int32

const (
	// ChatOpenAI is an OpenAI Chat Completions request body.
	ChatOpenAI ChatFormat = C.CTXPACK_CHAT_FORMAT_OPENAI
	// ChatAnthropic is an Anthropic Messages request body.
	ChatAnthropic ChatFormat = C.CTXPACK_CHAT_FORMAT_ANTHROPIC
)

// ChatOverheads are the tokens a request costs besides its texts (docs/chat.md,
// "Counting tokens"); every field must be >= 0.
type ChatOverheads struct {
	// PerMessage is the framing every message carries.
	PerMessage int64
	// PerName is added for a message with a "name" (OpenAI).
	PerName int64
	// PerRequest is the priming of the reply.
	PerRequest int64
	// Media stands for one image, audio clip or binary document.
	Media int64
}

// ChatShorten sends a long tool output as its head and tail instead of only dropping it
// (docs/chat.md, "Shortening tool outputs"): every text of a tool result longer than
// HeadTokens and TailTokens together gives its message a cheaper form, those texts cut to
// their first HeadTokens and last TailTokens tokens with Marker between. When the pipeline
// places that form, the message is sent with only those strings replaced
// (ChatResult.Shortened lists it).
type ChatShorten struct {
	// HeadTokens and TailTokens are the tokens kept from the start and from the end of a
	// long text, each >= 0 (a negative one is StatusInvalidArgument); both 0 turn
	// shortening off, as a nil ChatOptions.Shorten does.
	HeadTokens, TailTokens int
	// Quality is the quality of a shortened form, in (0, 1]; 0 (the default) is the share
	// of the message's tokens the form keeps. Anything else (negative, NaN, above 1) is
	// StatusInvalidArgument.
	Quality float64
	// Marker is put between head and tail; "{omitted}" in it is replaced by the number of
	// tokens left out. "" is "\n[… {omitted} tokens omitted …]\n".
	Marker string
}

// ChatOptions are the options of TrimChat; nil or the zero value means the defaults.
type ChatOptions struct {
	// Encoding counts the texts, by name ("o200k_base", "cl100k_base"); "" is o200k_base
	// (or, in a library built without the tokenizer feature, the built-in estimate).
	Encoding string
	// Trace makes ChatResult.Selection.Report available when not TraceNone.
	Trace TraceDetail
	// UnpinLastTurn lets the last turn be dropped like any other message (by default it
	// is always kept).
	UnpinLastTurn bool
	// Overheads replace the provider's when not nil.
	Overheads *ChatOverheads
	// Prefix, when not nil, keeps the start of the trimmed request stable across turns
	// (docs/prefix-cache.md): ChatResult.Reuse and ChatResult.State are then set.
	Prefix *PrefixOptions
	// PreviousState is the previous turn's ChatResult.State (nil on a first turn; a
	// closed one is StatusNullArgument). It needs Prefix.
	PreviousState *PrefixState
	// Shorten, when not nil, sends long tool outputs as their head and tail rather than
	// only dropping them (ChatShorten). Not available with Prefix yet
	// (StatusInvalidArgument).
	Shorten *ChatShorten
}

// ChatAdjustment is a unit the pipeline selected that was dropped after the run to
// satisfy a provider rule (Anthropic's first message and thinking blocks).
type ChatAdjustment struct {
	// Paths are the JSON paths of the dropped messages ("messages[0]").
	Paths []string
	// Reason says why.
	Reason string
}

// ChatRulePin is a user message ctxpack pinned, beyond the system messages and the last
// turn, for the run whose selection the result holds. When the first run's selection breaks
// an Anthropic ordering rule (it starts with an assistant message, or a thinking turn would
// merge into an earlier assistant message), ctxpack also runs the pipeline with a user
// message that repairs it pinned, and keeps that run when it keeps more of the first run's
// selection (in tokens) than dropping units (docs/chat.md, "Repairing a selection").
type ChatRulePin struct {
	// Path is the JSON path of the pinned message ("messages[0]"); a rule pin is always
	// one user message.
	Path string
	// Reason says why.
	Reason string
}

// ChatResult is a trimmed chat request and how it was obtained.
type ChatResult struct {
	// JSON is the trimmed request body: the request with the dropped messages removed,
	// every other byte unchanged (the request itself when everything fits).
	JSON string
	// Tokens of the trimmed request, and InputTokens of the whole request, as counted
	// (texts by the encoding, plus the overheads).
	Tokens, InputTokens int64
	// Kept and Dropped are positions in the request's "messages" array, ascending.
	Kept, Dropped []int
	// Shortened are the positions in the request's "messages" array of the kept messages
	// sent shortened (ChatOptions.Shorten), ascending: each is also in Kept. Empty without
	// shortening.
	Shortened []int
	// ItemPaths holds, for each item the pipeline ran on, the JSON path it stands for
	// ("messages[3]", "system", or "$" for the request's own framing and tools). The
	// indices of Selection and of its Report are positions in this list.
	ItemPaths []string
	// Adjustments made after the run (usually none).
	Adjustments []ChatAdjustment
	// RulePins are the user messages pinned for a provider rule (ChatRulePin): at most one
	// in practice, and none for an OpenAI request.
	RulePins []ChatRulePin
	// Selection is the pipeline's selection, with its Report when ChatOptions.Trace
	// asked for one. The messages of a tool call and its results share a group.
	Selection Result
	// Reuse (with ChatOptions.Prefix) says how much of the previous turn's trimmed
	// request this one starts with.
	Reuse *Reuse
	// State (with ChatOptions.Prefix) is this turn's state, for the next turn's
	// ChatOptions.PreviousState; owned by the caller (Close it).
	State *PrefixState
}

// TrimChat trims a chat request body to budget with pipeline (a preset, a policy, or one
// built by hand): each message becomes an item, system prompts are pinned, and a tool call
// is kept or dropped together with its results. A malformed request, or one that breaks
// its provider's rules, is StatusInvalidRequest with a message that starts with the JSON
// path; the pipeline's own errors keep their statuses (StatusPinnedExceedsBudget when the
// pinned parts do not fit). Safe for concurrent use.
func TrimChat(format ChatFormat, request string, budget *Budget, pipeline *Pipeline, opts *ChatOptions) (*ChatResult, error) {
	return trimChat(format, request, budget, pipeline, opts, nil)
}

// TrimChatContext is TrimChat that stops when ctx is done (see RunContext): the error
// matches both StatusCancelled and ctx.Err() under errors.Is. A cancelled trim returns
// no result, so a previous prefix state stays the conversation's state.
func TrimChatContext(ctx context.Context, format ChatFormat, request string, budget *Budget, pipeline *Pipeline, opts *ChatOptions) (*ChatResult, error) {
	var out *ChatResult
	err := withCancel(ctx, func(token *C.ctxpack_cancel_token) (err error) {
		out, err = trimChat(format, request, budget, pipeline, opts, token)
		return err
	})
	return out, err
}

// trimChat is TrimChat, cancellable when token is not nil.
func trimChat(format ChatFormat, request string, budget *Budget, pipeline *Pipeline, opts *ChatOptions,
	token *C.ctxpack_cancel_token) (*ChatResult, error) {
	var prev *PrefixState
	if opts != nil {
		prev = opts.PreviousState
	}
	defer runtime.KeepAlive(budget)
	defer runtime.KeepAlive(pipeline)
	defer runtime.KeepAlive(prev)
	var a arena
	defer a.free()
	// The struct lives in C memory (the arena): it holds a pointer to the encoding name.
	copts := (*C.ctxpack_chat_options)(a.alloc(unsafe.Sizeof(C.ctxpack_chat_options{})))
	C.ctxpack_chat_options_init(copts, C.size_t(unsafe.Sizeof(*copts)))
	if opts != nil {
		copts.encoding = a.str(opts.Encoding)
		copts.trace_detail = C.int32_t(opts.Trace)
		copts.unpin_last_turn = flag(opts.UnpinLastTurn)
		if o := opts.Overheads; o != nil {
			copts.has_overheads = 1
			copts.overhead_per_message = C.int64_t(o.PerMessage)
			copts.overhead_per_name = C.int64_t(o.PerName)
			copts.overhead_per_request = C.int64_t(o.PerRequest)
			copts.overhead_media = C.int64_t(o.Media)
		}
		if prev != nil {
			if prev.ptr() == nil {
				return nil, &Error{Status: StatusNullArgument, Message: "PreviousState is a closed PrefixState"}
			}
			copts.previous_state = prev.ptr()
		}
		if prefix := opts.Prefix; prefix != nil {
			copts.prefix = cPrefixOptions(&a, prefix)
		}
		if sh := opts.Shorten; sh != nil {
			if sh.HeadTokens < 0 || sh.TailTokens < 0 {
				return nil, &Error{Status: StatusInvalidArgument,
					Message: fmt.Sprintf("Shorten.HeadTokens and Shorten.TailTokens must be >= 0 (got %d and %d)", sh.HeadTokens, sh.TailTokens)}
			}
			copts.shorten_head_tokens = C.uint64_t(sh.HeadTokens)
			copts.shorten_tail_tokens = C.uint64_t(sh.TailTokens)
			copts.shorten_quality = C.double(sh.Quality)
			copts.shorten_marker = a.str(sh.Marker)
		}
	}
	copts.cancel = token
	var res *C.ctxpack_chat_result
	var cerr *C.ctxpack_error
	status := C.ctxpack_chat_trim(C.int32_t(format), a.str(request), budget.ptr(), pipeline.ptr(), copts, &res, &cerr)
	if err := takeError(status, cerr); err != nil {
		return nil, err
	}
	defer C.ctxpack_chat_result_free(res)
	return readChatResult(res)
}

// TrimOpenAI is TrimChat for an OpenAI Chat Completions request.
func TrimOpenAI(request string, budget *Budget, pipeline *Pipeline, opts *ChatOptions) (*ChatResult, error) {
	return TrimChat(ChatOpenAI, request, budget, pipeline, opts)
}

// TrimAnthropic is TrimChat for an Anthropic Messages request.
func TrimAnthropic(request string, budget *Budget, pipeline *Pipeline, opts *ChatOptions) (*ChatResult, error) {
	return TrimChat(ChatAnthropic, request, budget, pipeline, opts)
}

// readChatResult copies a chat result into Go memory.
func readChatResult(res *C.ctxpack_chat_result) (*ChatResult, error) {
	out := &ChatResult{}
	var s C.ctxpack_str
	if err := check(C.ctxpack_chat_result_json(res, &s)); err != nil {
		return nil, err
	}
	out.JSON = goString(s)
	var t C.int64_t
	if err := check(C.ctxpack_chat_result_tokens(res, &t)); err != nil {
		return nil, err
	}
	out.Tokens = int64(t)
	if err := check(C.ctxpack_chat_result_input_tokens(res, &t)); err != nil {
		return nil, err
	}
	out.InputTokens = int64(t)
	var p *C.size_t
	var n C.size_t
	if err := check(C.ctxpack_chat_result_kept(res, &p, &n)); err != nil {
		return nil, err
	}
	out.Kept = goInts(p, n)
	if err := check(C.ctxpack_chat_result_dropped(res, &p, &n)); err != nil {
		return nil, err
	}
	out.Dropped = goInts(p, n)
	if err := check(C.ctxpack_chat_result_shortened(res, &p, &n)); err != nil {
		return nil, err
	}
	out.Shortened = goInts(p, n)
	if err := check(C.ctxpack_chat_result_item_count(res, &n)); err != nil {
		return nil, err
	}
	out.ItemPaths = make([]string, int(n))
	for i := range out.ItemPaths {
		if err := check(C.ctxpack_chat_result_item_path(res, C.size_t(i), &s)); err != nil {
			return nil, err
		}
		out.ItemPaths[i] = goString(s)
	}
	if err := check(C.ctxpack_chat_result_adjustment_count(res, &n)); err != nil {
		return nil, err
	}
	for i := C.size_t(0); i < n; i++ {
		var paths C.size_t
		if err := check(C.ctxpack_chat_result_adjustment(res, i, &s, &paths)); err != nil {
			return nil, err
		}
		adj := ChatAdjustment{Reason: goString(s), Paths: make([]string, int(paths))}
		for j := range adj.Paths {
			if err := check(C.ctxpack_chat_result_adjustment_path(res, i, C.size_t(j), &s)); err != nil {
				return nil, err
			}
			adj.Paths[j] = goString(s)
		}
		out.Adjustments = append(out.Adjustments, adj)
	}
	if err := check(C.ctxpack_chat_result_rule_pin_count(res, &n)); err != nil {
		return nil, err
	}
	for i := C.size_t(0); i < n; i++ {
		var path, reason C.ctxpack_str
		if err := check(C.ctxpack_chat_result_rule_pin(res, i, &path, &reason)); err != nil {
			return nil, err
		}
		out.RulePins = append(out.RulePins, ChatRulePin{Path: goString(path), Reason: goString(reason)})
	}
	var sel *C.ctxpack_result
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_chat_result_selection(res, &sel, &cerr), cerr); err != nil {
		return nil, err
	}
	defer C.ctxpack_result_free(sel)
	selection, err := readResult(sel)
	if err != nil {
		return nil, err
	}
	out.Selection = selection
	var r C.ctxpack_prefix_reuse
	C.ctxpack_prefix_reuse_init(&r, C.size_t(unsafe.Sizeof(r)))
	status := C.ctxpack_chat_result_prefix_reuse(res, &r, nil)
	if status == C.CTXPACK_NO_REPORT {
		return out, nil // a trim without ChatOptions.Prefix
	}
	if err := check(status); err != nil {
		return nil, err
	}
	var str *C.ctxpack_string
	if err := takeError(C.ctxpack_chat_result_prefix_reuse_json(res, &str, &cerr), cerr); err != nil {
		return nil, err
	}
	reuse, err := reuseOf(&r, str)
	if err != nil {
		return nil, err
	}
	var state *C.ctxpack_prefix_state
	if err := takeError(C.ctxpack_chat_result_prefix_state(res, &state, &cerr), cerr); err != nil {
		return nil, err
	}
	out.Reuse, out.State = &reuse, newPrefixState(state)
	return out, nil
}
