module github.com/ctxpack/ctxpack/bindings/go

go 1.19
