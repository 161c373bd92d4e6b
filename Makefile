# codemode: build, demo and test entry points (see README.md).

SHELL := /bin/bash

.PHONY: setup build demo test check-v8 lint bench fuzz soak

# Install what the offline QuickJS build needs (cmake, simde headers) and the test tools.
setup:
	bash scripts/setup.sh

build: setup
	cargo build --release

# The main job: run the demo program in the sandbox.
demo: setup
	cargo run --release -- run examples/repo_tour.ts --root .
	cargo run --release -- run examples/demo.ts

# The test command CI runs (README "Quick start").
test: setup
	cargo test

# The V8 engine is compile-checked only (its build script would download a prebuilt library).
check-v8:
	DOCS_RS=1 cargo check --no-default-features --features v8

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

bench: setup
	cargo bench

# The property tests with many more cases than CI runs (tests/all/fuzz_props.rs).
fuzz: setup
	CODEMODE_FUZZ_CASES=2000 cargo test --release --test all fuzz_props

# The long soak of `codemode mcp` (release build): 10,000 sequential runs in process mode and
# 1,000 in thread mode (it grows by about 0.9 MB per run with the engine's per-isolate leak,
# docs/LIFECYCLE.md, so only process mode is held to the 64 MB bound), RSS sampled and printed
# as a table; then 1,000 concurrent requests in each mode. SOAK_RUNS and THREAD_SOAK_RUNS change
# the counts.
SOAK_RUNS ?= 10000
THREAD_SOAK_RUNS ?= 1000
soak: setup
	cargo build --release
	bash scripts/install-mcp-test-deps.sh >/dev/null
	@work=$$(mktemp -d); \
	for isolation in process thread; do \
	  rm -rf $$work/*; \
	  if [ $$isolation = thread ]; then bound=1000000; runs=$(THREAD_SOAK_RUNS); else bound=64; runs=$(SOAK_RUNS); fi; \
	  CODEMODE_SOAK_RUNS=$$runs CODEMODE_SOAK_ISOLATION=$$isolation CODEMODE_SOAK_MAX_GROWTH_MB=$$bound \
	  CODEMODE_SCENARIO_TIMEOUT_S=3600 target/mcp-deps/venv/bin/python tests/mcp/client_e2e.py soak \
	    $$PWD/target/release/codemode $$PWD/target/mcp-deps $$work || exit 1; \
	done; \
	for isolation in process thread; do \
	  rm -rf $$work/*; \
	  if [ $$isolation = thread ]; then bound=1000000; else bound=300; fi; \
	  CODEMODE_LOAD_ISOLATION=$$isolation CODEMODE_LOAD_MAX_RSS_MB=$$bound CODEMODE_SCENARIO_TIMEOUT_S=3600 \
	  target/mcp-deps/venv/bin/python tests/mcp/client_e2e.py load \
	    $$PWD/target/release/codemode $$PWD/target/mcp-deps $$work || exit 1; \
	done; \
	rm -rf $$work
