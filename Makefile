# Tributary — every set-up step lives here, so that `make demo` and `make test` work on a fresh machine.
SHELL        := /bin/bash
SWIFT        ?= swift
CONFIG       ?= release
VENV         := .venv
PY           := $(VENV)/bin/python
APT_PACKAGES := libfftw3-dev libzstd-dev libzmq3-dev libhdf5-dev libisal-dev libasound2-dev pkg-config zstd libcivetweb-dev chromium chromium-driver faketime
PY_PACKAGES  := numpy scipy pyzmq blosc2 dask[distributed] pandas pyarrow wheel nptdms pyxdf h5py pcodec zstandard pylsl selenium \
                ruff==0.17.6
FUZZ_SECONDS ?= 60
RUFF         := $(VENV)/bin/ruff
SWIFT_CODE   := Sources Tests Benchmarks Fuzz Package.swift
BIN          = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

.PHONY: all deps apt-deps py-deps build test lint format unit-tests interop-tests alloc-guard fuzz-smoke demo bench fuzz \
        clean lib c-example python python-tests

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

## test: the lint first (it fails fast), then every test — Swift unit tests, interop tests against
## numpy/scipy, the C examples, the Python package (with a Dask LocalCluster), the allocation guard,
## a short fuzz run.
test: deps
	$(MAKE) lint
	$(MAKE) unit-tests
	$(MAKE) build
	$(MAKE) c-example
	$(MAKE) python-tests
	$(MAKE) interop-tests
	$(MAKE) alloc-guard
	$(MAKE) fuzz-smoke
	@echo "make test: all suites passed"

## lint: the Swift's layout (`swift format lint`, which ships with the toolchain; settings in .swift-format)
## and ruff on every Python file (settings in ruff.toml). Finds nothing after `make format`. About 20 s.
lint: py-deps
	$(SWIFT) format lint --strict --recursive --parallel $(SWIFT_CODE)
	$(RUFF) check --quiet .

## format: lays the Swift out by .swift-format and applies ruff's safe fixes (unused imports, import
## order) to the Python. The Python is not reformatted (no `ruff format`): its layout is left as written.
## .swift-format is the tree's own style measured: 4-space indents, 140 columns (99% of the lines in
## Sources/ were within it), case labels level with `switch`, `0..<n` unspaced. Off, because the tree
## writes that way on purpose: DoNotUseSemicolons (`a = 1; b = 2` on one line, ~1 500 times) and
## OneVariableDeclarationPerLine (`let a = 1, b = 2`, ~700). Off, because they only report and the
## tree has cases it keeps: AlwaysUseLowerCamelCase (the C API's `tributary_*` functions, math names),
## OnlyOneTrailingClosureArgument, ReplaceForEachWithForLoop.
format: py-deps
	$(SWIFT) format --in-place --recursive --parallel $(SWIFT_CODE)
	$(RUFF) check --quiet --fix .

unit-tests:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel

interop-tests: build
	TRIBUTARY=$(BIN)/tributary $(PY) -m unittest discover -s Tests/Interop -p 'test_*.py' -v

## lib: the C interface, lib/libtributary.so (SwiftPM names the product libTributaryC.so; its SONAME is
## libtributary.so), beside the header include/tributary.h.
lib: build
	mkdir -p lib
	cp $(BIN)/libTributaryC.so lib/libtributary.so

## c-example: compiles examples/c/*.c with gcc against the header and runs them: read_capture.c on
## captures made by `tributary import` (float64 and int16), subscribe.c against `serve --simulate`,
## publish.c against `tributary subscribe --json` (checked by Tests/Interop/c_publish_check.py). About 10 s.
C_EXAMPLE_DIR := $(CURDIR)/.build/c-example
c-example: lib
	mkdir -p $(C_EXAMPLE_DIR)
	gcc -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Iinclude examples/c/read_capture.c \
	    -Llib -ltributary -Wl,-rpath,$(CURDIR)/lib -lm -o $(C_EXAMPLE_DIR)/read_capture
	$(PY) -c "import numpy as np; t = np.arange(20000) / 1000.0; \
	    np.save('$(C_EXAMPLE_DIR)/f64.npy', np.vstack([np.sin(2 * np.pi * 50 * t), 0.5 * np.cos(2 * np.pi * 120 * t)])); \
	    np.save('$(C_EXAMPLE_DIR)/i16.npy', (np.sin(2 * np.pi * 50 * t) * 1000).astype(np.int16).reshape(1, -1))"
	for kind in f64 i16; do \
	  rm -f $(C_EXAMPLE_DIR)/$$kind.tcap; \
	  $(BIN)/tributary import $(C_EXAMPLE_DIR)/$$kind.npy --rate 1000 --out $(C_EXAMPLE_DIR)/$$kind.tcap && \
	  $(C_EXAMPLE_DIR)/read_capture $(C_EXAMPLE_DIR)/$$kind.tcap || exit 1; \
	done
	gcc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/subscribe.c \
	    -Llib -ltributary -Wl,-rpath,$(CURDIR)/lib -o $(C_EXAMPLE_DIR)/subscribe
	$(BIN)/tributary serve --bind tcp://127.0.0.1:0 --api-key k \
	    --simulate id=1,name=sim,rate=1000,channels=4,freq=50,block=100 > $(C_EXAMPLE_DIR)/serve.log 2>&1 & \
	server=$$!; trap "kill $$server 2>/dev/null" EXIT; \
	for i in $$(seq 100); do grep -q "listening on" $(C_EXAMPLE_DIR)/serve.log && break; sleep 0.1; done; \
	address=$$(sed -n 's/^listening on //p' $(C_EXAMPLE_DIR)/serve.log | head -1); \
	timeout 30 $(C_EXAMPLE_DIR)/subscribe "$$address" k
	gcc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/publish.c \
	    -Llib -ltributary -Wl,-rpath,$(CURDIR)/lib -lm -o $(C_EXAMPLE_DIR)/publish
	$(C_EXAMPLE_DIR)/publish tcp://127.0.0.1:0 k 20 > $(C_EXAMPLE_DIR)/publish.log 2>&1 & \
	publisher=$$!; trap "kill $$publisher 2>/dev/null" EXIT; \
	for i in $$(seq 100); do grep -q "listening on" $(C_EXAMPLE_DIR)/publish.log && break; sleep 0.1; done; \
	address=$$(sed -n 's/^listening on //p' $(C_EXAMPLE_DIR)/publish.log | head -1); \
	timeout 30 $(BIN)/tributary subscribe "$$address" --api-key k --json > $(C_EXAMPLE_DIR)/publish.json; \
	wait $$publisher; status=$$?; cat $(C_EXAMPLE_DIR)/publish.log; test $$status = 0 && \
	$(PY) Tests/Interop/c_publish_check.py $(C_EXAMPLE_DIR)/publish.json 20

## python: installs the Python package (python/, imported as `tributary`) into the venv, with a copy
## of libtributary.so inside it.
python: lib py-deps
	mkdir -p python/tributary/_lib
	cp lib/libtributary.so python/tributary/_lib/libtributary.so
	$(VENV)/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall ./python
	rm -rf python/build python/*.egg-info

## python-tests: the Python package against the CLI (import/export, analyze, serve), Dask LocalCluster
## batches and misuse, then the README's quick start (examples/python/quickstart.py on a demo capture).
## About 1-2 minutes.
python-tests: python
	cd python/tests && TRIBUTARY=$(BIN)/tributary TRIBUTARY_LIBRARY=$(CURDIR)/lib/libtributary.so \
	    $(CURDIR)/$(PY) -m unittest discover -s . -p 'test_*.py' -v
	quickstart=$$(mktemp -d) && trap "rm -rf $$quickstart" EXIT && \
	  $(BIN)/tributary demo --out $$quickstart --seconds 1 > $$quickstart/demo.log && \
	  $(PY) examples/python/quickstart.py $$quickstart/demo.tcap && test -s $$quickstart/quickstart-results.parquet

## alloc-guard: allocation counts of the hot paths (stable, unlike times), checked against their limits.
alloc-guard: build
	$(BIN)/tributary-bench --filter alloc-guard --check-allocations

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

## fuzz: libFuzzer targets in Fuzz/ (wire, capture, the subscriber's session) and the publisher's session
## fuzzer against a real serve, FUZZ_SECONDS each (default 60).
fuzz: apt-deps py-deps build
	PYTHON=$(CURDIR)/$(PY) TRIBUTARY=$(BIN)/tributary ./Fuzz/run.sh $(FUZZ_SECONDS)

## demo: the main job on an embedded default.
## DEMO_OUT=DIR keeps the capture and the plot there (default: a new temporary directory).
demo: deps build
	$(BIN)/tributary demo $(if $(DEMO_OUT),--out $(DEMO_OUT))

## bench: benchmarks with peers measured in the same run (numpy, scipy, FFTW C, zstd, blosc2, pyzmq,
## Lab Streaming Layer via pylsl, whose wheel bundles liblsl). process_bench.py: serve/subscribe/record/bench
## as separate processes, fan-out and the latency curve (about 3 minutes; --quick for a smoke run).
## clock_bench.py: clock offsets against LSL's time_correction under faketime (about 2 minutes).
## publish_bench.py: publishing from Python and C (push throughput, push -> observer latency, C push CPU).
bench: deps build python
	$(BIN)/tributary-bench --python $(PY)
	$(PY) Benchmarks/process_bench.py --tributary $(BIN)/tributary --python $(PY)
	$(PY) Benchmarks/python_bench.py --tributary $(BIN)/tributary
	$(PY) Benchmarks/publish_bench.py --tributary $(BIN)/tributary --python $(PY)
	$(PY) Benchmarks/formats_bench.py $(BIN)/tributary
	$(PY) Benchmarks/clock_bench.py --tributary $(BIN)/tributary

clean:
	rm -rf .build $(VENV) Fuzz/.build lib python/tributary/_lib
