module ctxpack.dev/ctxpack

go 1.19
