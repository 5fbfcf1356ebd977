# ctxpack build, test and install entry points.
#   make test          every test (the README's test command; CI runs it)
#   make demo          the main job: a real selection on the bundled sample data
#   make test-c        the C ABI: C/C++ tests plain, under ASan+UBSan and valgrind (docs/ffi.md)
#   make install       the shared and static library, the C header and the C++ binding's
#                      header, pkg-config and CMake files and the `ctxpack` tool under
#                      PREFIX (docs/packaging.md)
#   make uninstall     removes what `make install` installs (same variables)
#   make test-install  installs into a temporary tree and builds examples/*.c and a consumer
#                      of each binding against it
#   make csharp-package  the C# binding's NuGet package (target/nuget; bindings/csharp/README.md)
#   make miri          the unit tests of the core's one module with `unsafe` code (the items'
#                      counted store references) under Miri; needs a nightly toolchain with
#                      the miri component; not part of `make test` (docs/design.md)
#
# Needs GNU make 4.3 or later (grouped targets).

CARGO ?= cargo

.PHONY: all build test test-rust test-c test-bindings test-fuzz-build lint demo deps install uninstall test-install csharp-package miri

all: build

# Extra cargo flags for the release build, e.g. CARGO_BUILD_FLAGS=--no-default-features
# for a library without the built-in tokenizer (docs/packaging.md).
CARGO_BUILD_FLAGS ?=

build:
	$(CARGO) build --release $(CARGO_BUILD_FLAGS)

# The build shows cargo's progress (the first one takes a minute or two); the run is the
# built binary, so its output is not mixed with cargo's.
demo:
	@echo "make demo: building the ctxpack tool (release; the first build takes a minute or two)"
	$(CARGO) build --release --bin ctxpack
	@echo "make demo: selecting from examples/data/chat.jsonl (--max 400 --target 300 --explain)"
	@$(RELEASE_DIR)/ctxpack examples/data/chat.jsonl --max 400 --target 300 --explain

deps:
	./scripts/deps.sh

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

test-rust:
	$(CARGO) test --release
	# A build without the default `tokenizer` feature (what a packager may ship): the
	# library's own tests, including CTXPACK_UNSUPPORTED from every tokenizer function and
	# the header being the same as with the feature; docs/errors.md's rows of that build.
	$(CARGO) test --release --no-default-features --lib
	$(CARGO) test --release --no-default-features --test errors_doc
	$(CARGO) bench --bench compare --no-run
	$(CARGO) bench --bench tokenizer --no-run
	$(CARGO) bench --bench chat --no-run
	$(CARGO) bench --bench prefix --no-run
	CTXPACK_CONFORMANCE_ENGINE=ffi $(CARGO) test --release --test conformance

test-c:
	tests/c/run.sh
	# The host of scripts/host-bench.sh still compiles against the header.
	$(CC) -std=c11 -Wall -Wextra -Werror -Iinclude -fsyntax-only scripts/host-bench.c

test-bindings:
	bindings/cpp/run.sh
	bindings/go/run.sh
	bindings/csharp/run.sh
	bindings/swift/run.sh

test-fuzz-build:
	scripts/fuzz.sh check

# Its own target directory: Miri's builds do not mix with the release builds.
miri:
	CARGO_TARGET_DIR=target/miri $(CARGO) +nightly miri test --lib -- model::shared_store model::item

test: deps lint test-fuzz-build test-rust test-c test-bindings test-install
	@echo "make test: all suites passed"

# ---------------------------------------------------------------------------------------
# Installation (docs/packaging.md). DESTDIR is prepended to every path when copying and
# never written into the installed files.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR ?= $(LIBDIR)/cmake/ctxpack
DESTDIR ?=
INSTALL ?= install
# Run after an install into the live system (empty DESTDIR) by root; LDCONFIG=true skips it.
LDCONFIG ?= ldconfig

# The release build that is installed; CARGO_TARGET_DIR is honoured as cargo honours it.
CARGO_TARGET_DIR ?= target
RELEASE_DIR ?= $(CARGO_TARGET_DIR)/release

# The version is written once, in Cargo.toml's [package] table. The file name carries its
# numeric part (a pre-release suffix such as -rc.1 is dropped); the soname carries the
# major number only (build.rs sets it).
VERSION := $(shell awk -F'"' '/^\[/ { pkg = ($$0 == "[package]") } \
                              pkg && /^version *=/ { print $$2; exit }' Cargo.toml)
LIB_VERSION := $(firstword $(subst -, ,$(subst +, ,$(VERSION))))
MAJOR := $(firstword $(subst ., ,$(VERSION)))
REAL_LIB := libctxpack.so.$(LIB_VERSION)
SONAME := libctxpack.so.$(MAJOR)

# What a program linking libctxpack.a needs besides it: the output of
#   cargo rustc --release --lib -- --print native-static-libs
# on Linux with glibc (all of it the Rust standard library's; no dependency of ctxpack
# links a native library). scripts/test-install.sh links the archive with this list.
LIBS_PRIVATE ?= -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

# The build is run when an artifact is missing or older than a source, so that
# `make build && sudo make install` does not run cargo as root.
ARTIFACTS := $(RELEASE_DIR)/libctxpack.so $(RELEASE_DIR)/libctxpack.a $(RELEASE_DIR)/ctxpack
RUST_SOURCES := Cargo.toml Cargo.lock build.rs cbindgen.toml $(shell find src -name '*.rs' -o -name '*.bin')

$(ARTIFACTS) &: $(RUST_SOURCES)
	$(CARGO) build --release $(CARGO_BUILD_FLAGS)

# The templates in pkg/ are filled in for the directories of this invocation, straight
# into their destination (a `sudo make install` leaves no root-owned file in the build
# tree). The pkg-config file names its directories relative to ${prefix} when they lie
# under it; the CMake files name them relative to their own directory, so a staged or
# moved tree works.
empty :=
space := $(empty) $(empty)
under_prefix = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
from_cmakedir = $(shell realpath -m -s --relative-to=$(CMAKEDIR) $(1))
SUBSTITUTIONS = -e 's|@VERSION@|$(VERSION)|g' \
                -e 's|@LIB_VERSION@|$(LIB_VERSION)|g' \
                -e 's|@MAJOR@|$(MAJOR)|g' \
                -e 's|@PREFIX@|$(PREFIX)|g' \
                -e 's|@PC_LIBDIR@|$(call under_prefix,$(LIBDIR))|g' \
                -e 's|@PC_INCLUDEDIR@|$(call under_prefix,$(INCLUDEDIR))|g' \
                -e 's|@LIBS_PRIVATE@|$(LIBS_PRIVATE)|g' \
                -e 's|@CMAKE_LIBDIR@|$(call from_cmakedir,$(LIBDIR))|g' \
                -e 's|@CMAKE_INCLUDEDIR@|$(call from_cmakedir,$(INCLUDEDIR))|g' \
                -e 's|@CMAKE_LIBS_PRIVATE@|$(subst $(space),;,$(patsubst -l%,%,$(strip $(LIBS_PRIVATE))))|g'

# install_file MODE SOURCE DESTINATION
install_file = $(INSTALL) -D -m $(1) $(2) $(DESTDIR)$(3)
# install_template NAME DESTINATION: pkg/NAME.in filled in, mode 644
install_template = echo "pkg/$(1).in -> $(DESTDIR)$(2)" && \
                   $(INSTALL) -d $(DESTDIR)$(dir $(2)) && \
                   sed $(SUBSTITUTIONS) pkg/$(1).in > $(DESTDIR)$(2) && chmod 644 $(DESTDIR)$(2)

install: $(ARTIFACTS)
	$(call install_file,644,$(RELEASE_DIR)/libctxpack.so,$(LIBDIR)/$(REAL_LIB))
	ln -sfn $(REAL_LIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(REAL_LIB) $(DESTDIR)$(LIBDIR)/libctxpack.so
	$(call install_file,644,$(RELEASE_DIR)/libctxpack.a,$(LIBDIR)/libctxpack.a)
	$(call install_file,644,include/ctxpack.h,$(INCLUDEDIR)/ctxpack.h)
	$(call install_file,644,bindings/cpp/include/ctxpack.hpp,$(INCLUDEDIR)/ctxpack.hpp)
	$(call install_file,755,$(RELEASE_DIR)/ctxpack,$(BINDIR)/ctxpack)
	@$(call install_template,ctxpack.pc,$(PKGCONFIGDIR)/ctxpack.pc)
	@$(call install_template,ctxpackConfig.cmake,$(CMAKEDIR)/ctxpackConfig.cmake)
	@$(call install_template,ctxpackConfigVersion.cmake,$(CMAKEDIR)/ctxpackConfigVersion.cmake)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ]; then \
	    $(LDCONFIG) || echo "note: $(LDCONFIG) failed; run it before using $(SONAME)"; \
	fi

INSTALLED := $(addprefix $(LIBDIR)/,$(REAL_LIB) $(SONAME) libctxpack.so libctxpack.a) \
             $(INCLUDEDIR)/ctxpack.h $(INCLUDEDIR)/ctxpack.hpp $(PKGCONFIGDIR)/ctxpack.pc \
             $(CMAKEDIR)/ctxpackConfig.cmake $(CMAKEDIR)/ctxpackConfigVersion.cmake \
             $(BINDIR)/ctxpack

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rmdir $(DESTDIR)$(CMAKEDIR) 2>/dev/null || true

test-install:
	scripts/test-install.sh

# The NuGet package of the C# binding with the release build's libctxpack.so, in
# $(CARGO_TARGET_DIR)/nuget (bindings/csharp/pack.sh says what it holds and what cannot be
# built here).
csharp-package: $(ARTIFACTS)
	bindings/csharp/pack.sh --lib $(RELEASE_DIR)/libctxpack.so --out $(CARGO_TARGET_DIR)/nuget
