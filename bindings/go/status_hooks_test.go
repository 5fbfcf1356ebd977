//go:build ctxpack_testhooks

package ctxpack_test

import (
	"testing"

	"github.com/ctxpack/ctxpack/bindings/go"
)

const hooksEnabled = true

// Accessors report a status without an error object, hence without a message.
var messageless = map[ctxpack.Status]bool{
	ctxpack.StatusWrongHandleType: true, ctxpack.StatusNoReport: true, ctxpack.StatusOutOfRange: true,
}

func faultyRun(code int32) func(t *testing.T) error {
	return func(t *testing.T) error {
		s := must(ctxpack.NewFaultyScorer(code))
		cleanup(t, s)
		_, err := newPipeline(t, s).Run([]ctxpack.Item{day("a", 1, 0)}, newBudget(t, 10, 10), nil)
		return err
	}
}

func misuse(which int) func(t *testing.T) error {
	return func(t *testing.T) error {
		list := must(ctxpack.NewItemList(day("a", 1, 0)))
		cleanup(t, list)
		errs := [3]error{}
		errs[0], errs[1], errs[2] = ctxpack.MisuseErrors(newPipeline(t, recency(t)), list, newBudget(t, 10, 10))
		return errs[which]
	}
}

var hookStatusCases = []statusCase{
	{ctxpack.StatusPanic, faultyRun(0)},
	// CTXPACK_UNSUPPORTED comes from real calls only in a build without the tokenizer feature.
	{ctxpack.StatusUnsupported, faultyRun(int32(ctxpack.StatusUnsupported))},
	// No prefix-state call exists in the binding yet: the hook's scorer fails with it.
	{ctxpack.StatusInvalidState, faultyRun(int32(ctxpack.StatusInvalidState))},
	// No chat-request call exists in the binding yet: the hook's scorer fails with it.
	{ctxpack.StatusInvalidRequest, faultyRun(20)},
	{ctxpack.StatusWrongHandleType, misuse(0)},
	{ctxpack.StatusNoReport, misuse(1)},
	{ctxpack.StatusOutOfRange, misuse(2)},
}

// Every core error kind (1..15) also travels through a complete run.
func TestEveryCoreErrorThroughARun(t *testing.T) {
	for code := int32(1); code <= 15; code++ {
		err := faultyRun(code)(t)
		if e, ok := err.(*ctxpack.Error); !ok || e.Status != ctxpack.Status(code) || e.Message == "" {
			t.Errorf("faulty scorer %d: got %v", code, err)
		}
	}
}
