#!/usr/bin/env bash
# Instructions per tool call for one shape of examples/profile_binding.rs, counted by callgrind:
# two runs with different call counts, so everything but the calls cancels out. Repeatable to the
# instruction on one binary, whatever else the machine is doing (unlike wall-clock benches here).
#
#   scripts/instructions-per-call.sh [floor|glue|direct|binding|echo|pending|parallel] [SMALL] [LARGE]
set -euo pipefail
shape=${1:-binding}
small=${2:-4000}
large=${3:-12000}
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
cargo build --quiet --release --example profile_binding
bin=target/release/examples/profile_binding
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$shape" "$1" 2>&1 |
    awk '/Collected :/ { print $4 }'
}
a=$(count "$small")
b=$(count "$large")
echo "$shape: $(( (b - a) / (large - small) )) instructions per call"
