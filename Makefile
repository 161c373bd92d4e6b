# codemode: build, demo and test entry points (see README.md).

SHELL := /bin/bash

.PHONY: setup build demo test check-v8 lint bench fuzz

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
