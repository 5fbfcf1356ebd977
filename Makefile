# ctxpack build, test and install entry points.
#   make test      every test (the README's test command; CI runs it)
#   make demo      the main job: a real selection on the bundled sample data
#   make test-c    the C ABI: C/C++ tests plain, under ASan+UBSan and valgrind (docs/ffi.md)

CARGO ?= cargo

.PHONY: all build test test-rust test-c lint demo deps

all: build

build:
	$(CARGO) build --release

demo:
	$(CARGO) run --release --quiet --bin ctxpack -- examples/data/chat.jsonl --max 400 --target 300 --explain

deps:
	./scripts/deps.sh

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

test-rust:
	$(CARGO) test --release
	CTXPACK_CONFORMANCE_ENGINE=ffi $(CARGO) test --release --test conformance

test-c:
	tests/c/run.sh

test: deps lint test-rust test-c
	@echo "make test: all suites passed"
