//go:build ctxpack_testhooks

package ctxpack

// NewFaultyScorer and MisuseErrors: see testhooks.go.
var (
	NewFaultyScorer = newFaultyScorer
	MisuseErrors    = misuseErrors
)
