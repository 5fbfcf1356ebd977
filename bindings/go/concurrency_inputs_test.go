package ctxpack_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

// One preset pipeline shared by 16 goroutines, 1 000 runs each, every run on a different
// input (items, sizes and budget vary); each result must equal the sequential run of the
// same input. Inputs are precomputed so the goroutines only run and compare. Each
// goroutine also releases the pipeline's kept one-shot memory now and then, while the
// others run.
func TestConcurrentRunsOnDifferingInputs(t *testing.T) {
	const goroutines, runsEach = 16, 1000
	p := must(ctxpack.NewPresetPipeline("chat"))
	cleanup(t, p)

	type input struct {
		items  []ctxpack.Item
		budget *ctxpack.Budget
	}
	inputs := make([]input, goroutines*runsEach)
	kinds := []string{"Message", "Document", "ToolOutput", "Memory", "SystemPrompt"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range inputs {
		n := 3 + k%29
		items := make([]ctxpack.Item, n)
		for i := range items {
			r := uint64(k)*2654435761 + uint64(i)*40503
			items[i] = ctxpack.Item{
				Content:   fmt.Sprintf("input %d item %d", k%97, (r>>3)%11),
				Tokens:    int64(r%90) - 3,
				Kind:      kinds[(r>>5)%5],
				Timestamp: base.Add(time.Duration(r%100000) * time.Second),
				Pinned:    i == 0 && k%4 == 0,
			}
		}
		inputs[k] = input{items, newBudget(t, 2000, int64(50+k%400))}
	}
	expected := make([]ctxpack.Result, len(inputs))
	expectedErr := make([]error, len(inputs))
	for k, in := range inputs {
		expected[k], expectedErr[k] = p.Run(in.items, in.budget, nil)
	}

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < runsEach; r++ {
				k := r*goroutines + g // neighbouring goroutines run different inputs at once
				if (r+g)%37 == 0 {
					if err := p.ReleaseMemory(); err != nil {
						errs <- fmt.Errorf("goroutine %d, run %d: ReleaseMemory: %v", g, r, err)
						return
					}
				}
				got, err := p.Run(inputs[k].items, inputs[k].budget, nil)
				if !reflect.DeepEqual(err, expectedErr[k]) || !reflect.DeepEqual(got, expected[k]) {
					errs <- fmt.Errorf("goroutine %d, input %d: concurrent result differs from the sequential one", g, k)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
