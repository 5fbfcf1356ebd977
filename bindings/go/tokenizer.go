package ctxpack

// Token counting with the built-in encodings (docs/tokenizer.md): counts, counts that stop
// once past a limit, and truncation on a token and character boundary.

/*
#include "ctxpack.h"
*/
import "C"

// Encoding is one of the library's built-in tokenizer encodings ("o200k_base",
// "cl100k_base"). It is owned by the library for the life of the process (there is no
// Close) and may be used from many goroutines at once.
type Encoding struct {
	ptr  *C.ctxpack_encoding
	name string
}

// EncodingByName returns a built-in encoding: "o200k_base" (GPT-4o and later) or
// "cl100k_base" (GPT-4, GPT-3.5), in any ASCII case. The first call for an encoding loads
// it (milliseconds); later calls return at once. An unknown name is
// StatusInvalidArgument; a library built without the tokenizer feature answers
// StatusUnsupported.
func EncodingByName(name string) (*Encoding, error) {
	var a arena
	defer a.free()
	var ptr *C.ctxpack_encoding
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_encoding_get(a.str(name), &ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	var s C.ctxpack_str
	if err := check(C.ctxpack_encoding_name(ptr, &s)); err != nil {
		return nil, err
	}
	return &Encoding{ptr: ptr, name: goString(s)}, nil
}

// Name is the encoding's canonical name ("o200k_base").
func (e *Encoding) Name() string { return e.name }

// Count returns the number of tokens of text. Special tokens such as <|endoftext|> are
// counted as ordinary text. A string that is not UTF-8 is StatusInvalidUTF8.
func (e *Encoding) Count(text string) (int64, error) {
	var a arena
	defer a.free()
	var n C.int64_t
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_encoding_count(e.ptr, a.str(text), &n, &cerr), cerr); err != nil {
		return 0, err
	}
	return int64(n), nil
}

// CountWithLimit counts the tokens of text up to limit (>= 0): it returns the exact count
// and false when the text has at most limit tokens, and limit+1 and true when it has more
// — then the counting stopped early, so rejecting a huge text costs about as much as
// counting limit tokens. A negative limit is StatusInvalidArgument.
func (e *Encoding) CountWithLimit(text string, limit int64) (count int64, over bool, err error) {
	var a arena
	defer a.free()
	var n C.int64_t
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_encoding_count_with_limit(e.ptr, a.str(text), C.int64_t(limit), &n, &cerr), cerr); err != nil {
		return 0, false, err
	}
	return int64(n), int64(n) > limit, nil
}

// Truncate returns the longest prefix of text made of at most maxTokens (>= 0) of its
// tokens that ends on a character boundary, and that prefix's token count. A text that
// fits is returned whole; maxTokens 0 gives "". A negative maxTokens is
// StatusInvalidArgument.
func (e *Encoding) Truncate(text string, maxTokens int64) (prefix string, tokens int64, err error) {
	var a arena
	defer a.free()
	var n C.size_t
	var t C.int64_t
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_encoding_truncate(e.ptr, a.str(text), C.int64_t(maxTokens), &n, &t, &cerr), cerr); err != nil {
		return "", 0, err
	}
	return text[:int(n)], int64(t), nil
}
