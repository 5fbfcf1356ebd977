//go:build !ctxpack_testhooks

package ctxpack_test

import "ctxpack.dev/ctxpack"

const hooksEnabled = false

var (
	hookStatusCases []statusCase
	messageless     = map[ctxpack.Status]bool{}
)
