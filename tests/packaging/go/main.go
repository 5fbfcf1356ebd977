// A program outside the ctxpack repository that uses the Go binding as a module
// dependency. scripts/test-install.sh copies it into a new module, fetches the binding with
// `go get` from a file-system module proxy, builds it against an installed libctxpack
// (found through pkg-config) and runs it. It prints one line naming the version of the
// loaded library and exits non-zero when anything is wrong.
package main

import (
	"errors"
	"fmt"
	"os"

	ctxpack "github.com/ctxpack/ctxpack/bindings/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run() error {
	if ctxpack.Version() != ctxpack.HeaderVersion {
		return fmt.Errorf("library %s, header %s", ctxpack.Version(), ctxpack.HeaderVersion)
	}
	items := []ctxpack.Item{
		{Content: "You are a helpful assistant.", Kind: "SystemPrompt", Tokens: 8, Pinned: true},
		{Content: "User: hello", Kind: "Message", Tokens: 4},
		{Content: "Assistant: hi, how can I help?", Kind: "Message", Tokens: 9},
	}
	scorer, err := ctxpack.NewKindScorer()
	if err != nil {
		return err
	}
	defer scorer.Close()
	slicer, err := ctxpack.NewGreedySlicer()
	if err != nil {
		return err
	}
	defer slicer.Close()
	placer, err := ctxpack.NewChronologicalPlacer()
	if err != nil {
		return err
	}
	defer placer.Close()
	pipeline, err := ctxpack.NewPipeline(scorer, slicer, placer)
	if err != nil {
		return err
	}
	defer pipeline.Close()

	// Everything fits in a 100-token window, so everything is selected.
	roomy, err := ctxpack.NewBudget(100, 100)
	if err != nil {
		return err
	}
	defer roomy.Close()
	result, err := pipeline.Run(items, roomy, nil)
	if err != nil {
		return err
	}
	if len(result.Indices) != len(items) {
		return fmt.Errorf("selected %v of %d items that all fit", result.Indices, len(items))
	}

	// The pinned item alone exceeds a 5-token window: the library's status reaches Go.
	tight, err := ctxpack.NewBudget(5, 5)
	if err != nil {
		return err
	}
	defer tight.Close()
	if _, err := pipeline.Run(items, tight, nil); !errors.Is(err, ctxpack.StatusPinnedExceedsBudget) {
		return fmt.Errorf("a pinned item over the budget gave %v", err)
	}
	fmt.Printf("ctxpack %s: %d of %d items selected\n", ctxpack.Version(), len(result.Indices), len(items))
	return nil
}
