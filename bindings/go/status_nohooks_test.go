//go:build !ctxpack_testhooks

package ctxpack_test

import "github.com/ctxpack/ctxpack/bindings/go"

const hooksEnabled = false

var (
	hookStatusCases []statusCase
	messageless     = map[ctxpack.Status]bool{}
)
