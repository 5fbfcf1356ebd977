package ctxpack

/*
#include "ctxpack.h"
*/
import "C"

import (
	"context"
	"errors"
)

// RunContext is Run that stops when ctx is done: the run is cancelled through a
// ctxpack_cancel_token (checked before each stage and inside the long loops of the
// library, such as every row of a knapsack) and the error matches both StatusCancelled
// and ctx.Err() under errors.Is. A context that is never done changes nothing.
func (p *Pipeline) RunContext(ctx context.Context, items []Item, budget *Budget, opts *RunOptions) (Result, error) {
	var out Result
	err := withCancel(ctx, func(token *C.ctxpack_cancel_token) (err error) {
		out, err = p.runItems(items, budget, opts, token)
		return err
	})
	return out, err
}

// RunListContext is RunList that stops when ctx is done (see RunContext).
func (p *Pipeline) RunListContext(ctx context.Context, list *ItemList, budget *Budget, opts *RunOptions) (Result, error) {
	var out Result
	err := withCancel(ctx, func(token *C.ctxpack_cancel_token) error {
		return p.runList(list, budget, opts, token, func(res *C.ctxpack_result) (err error) {
			out, err = readResult(res)
			return err
		})
	})
	return out, err
}

// withCancel runs call with a cancel token that is cancelled when ctx is done, or with
// nil when ctx can never be done. The watcher goroutine has stopped, and the token is
// freed, when it returns (a run keeps its own reference to the token anyway).
func withCancel(ctx context.Context, call func(*C.ctxpack_cancel_token) error) error {
	done := ctx.Done()
	if done == nil {
		return call(nil)
	}
	var token *C.ctxpack_cancel_token
	var cerr *C.ctxpack_error
	if err := takeError(C.ctxpack_cancel_token_new(&token, &cerr), cerr); err != nil {
		return err
	}
	defer C.ctxpack_cancel_token_free(token)
	if ctx.Err() != nil {
		C.ctxpack_cancel_token_cancel(token) // done already: the run stops before it starts
	}
	finished := make(chan struct{})
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case <-done:
			C.ctxpack_cancel_token_cancel(token)
		case <-finished:
		}
	}()
	err := call(token)
	close(finished)
	<-watcher
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, StatusCancelled) {
		var e *Error
		errors.As(err, &e)
		return &CancelledError{Err: e, Cause: ctxErr}
	}
	return err
}

// CancelledError is the error of a run stopped by its context: the library's error
// (StatusCancelled, with its message) and the context's error. errors.Is matches both
// StatusCancelled and the context's error (context.Canceled, context.DeadlineExceeded).
type CancelledError struct {
	Err   *Error
	Cause error
}

func (e *CancelledError) Error() string { return e.Err.Error() + " (" + e.Cause.Error() + ")" }

// Unwrap returns the library's error, so errors.Is(err, StatusCancelled) holds.
func (e *CancelledError) Unwrap() error { return e.Err }

// Is reports whether target matches the context's error.
func (e *CancelledError) Is(target error) bool { return errors.Is(e.Cause, target) }

// RunListTracedContext is RunListTraced that stops when ctx is done (see RunContext).
func (p *Pipeline) RunListTracedContext(ctx context.Context, list *ItemList, budget *Budget, detail TraceDetail) (*TracedResult, error) {
	var out *TracedResult
	err := withCancel(ctx, func(token *C.ctxpack_cancel_token) (err error) {
		out, err = p.runTraced(list, budget, detail, token)
		return err
	})
	return out, err
}
