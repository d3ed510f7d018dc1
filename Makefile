# Tributary — every set-up step lives here, so that `make demo` and `make test` work on a fresh machine.
SHELL        := /bin/bash
SWIFT        ?= swift
CONFIG       ?= release
VENV         := .venv
PY           := $(VENV)/bin/python
APT_PACKAGES := libfftw3-dev libzstd-dev libzmq3-dev pkg-config zstd
PY_PACKAGES  := numpy scipy pyzmq blosc2 pcodec zstandard
FUZZ_SECONDS ?= 60
BIN          = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

.PHONY: all deps apt-deps py-deps build test unit-tests interop-tests alloc-guard fuzz-smoke demo bench fuzz clean

all: build

## deps: install the Debian packages and the Python environment that are missing (idempotent).
deps: apt-deps py-deps

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

py-deps: $(VENV)/.installed

$(VENV)/.installed: Makefile
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check $(PY_PACKAGES)
	touch $@

## build: the library, the `tributary` tool and the benchmark executable.
build: apt-deps
	$(SWIFT) build -c $(CONFIG)

## test: every test — Swift unit tests, interop tests against numpy/scipy, a short fuzz run.
test: deps
	$(MAKE) unit-tests
	$(MAKE) build
	$(MAKE) interop-tests
	$(MAKE) alloc-guard
	$(MAKE) fuzz-smoke
	@echo "make test: all suites passed"

unit-tests:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel

interop-tests: build
	TRIBUTARY=$(BIN)/tributary $(PY) -m unittest discover -s Tests/Interop -p 'test_*.py' -v

## alloc-guard: allocation counts of the hot paths (stable, unlike times), checked against their limits.
alloc-guard: build
	$(BIN)/tributary-bench --filter alloc-guard --check-allocations

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

## fuzz: libFuzzer targets in Fuzz/, FUZZ_SECONDS each (default 60).
fuzz: apt-deps
	./Fuzz/run.sh $(FUZZ_SECONDS)

## demo: the main job on an embedded default.
demo: deps build
	$(BIN)/tributary demo

## bench: benchmarks with peers measured in the same run (numpy, scipy, FFTW C, zstd, blosc2, pyzmq).
bench: deps build
	$(BIN)/tributary-bench --python $(PY)

clean:
	rm -rf .build $(VENV) Fuzz/.build
