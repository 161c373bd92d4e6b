#!/usr/bin/env bash
# Issue 14's workloads on codemode and on its peers, in one run on this machine, then one table.
#
#   scripts/peers.sh [ROUNDS]        # default 3 rounds; PEERS_RUNS timed runs per workload (default 3)
#
# Each round runs every runtime once, each in a fresh process, in a rotating order (so no runtime
# always runs first or right after another): codemode (benches/workloads.rs, thread isolation,
# every call through the full pipeline), pydantic-monty (benches/peers/monty_workloads.py),
# isolated-vm, quickjs-emscripten, TanStack code mode and node:vm (benches/peers/js_workloads.mjs).
# The peers are installed once into $PEERS_DIR (default /tmp/codemode-peers): a Python venv with
# benches/peers/requirements.txt and `npm install` of benches/peers/package.json; this needs the
# package registries (PyPI, npm), Python >= 3.11 and Node 20. The JSON lines of every process go
# to $PEERS_DIR/results-<time>.jsonl; benches/peers/summarize.py prints the table from them.
set -euo pipefail
rounds=${1:-3}
runs=${PEERS_RUNS:-3}
dir=${PEERS_DIR:-/tmp/codemode-peers}
repo=$(cd "$(dirname "$0")/.." && pwd)
peers=$repo/benches/peers

if [[ ! -x $dir/venv/bin/python ]]; then
  echo "installing pydantic-monty into $dir/venv" >&2
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet -r "$peers/requirements.txt"
fi
mkdir -p "$dir/node"
# The JS runner resolves its packages next to itself, so it runs from the install directory.
cp "$peers/js_workloads.mjs" "$dir/node/"
if ! cmp -s "$peers/package.json" "$dir/node/package.json"; then
  echo "installing the JS peers into $dir/node" >&2
  cp "$peers/package.json" "$dir/node/"
  (cd "$dir/node" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

echo "building the workloads bench" >&2
bench=$(cd "$repo" && cargo bench --quiet --bench workloads --no-run --message-format=json |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "workloads" and m.get("executable"):
        print(m["executable"])')

results=$dir/results-$(date +%Y%m%d-%H%M%S).jsonl
runtimes=(codemode monty isolated-vm quickjs-emscripten tanstack node-vm)
run_one() {
  case $1 in
    codemode) CODEMODE_WORKLOADS_RUNS=$runs CODEMODE_WORKLOADS_JSON=1 "$bench" --bench ;;
    monty) PEERS_RUNS=$runs "$dir/venv/bin/python" "$peers/monty_workloads.py" ;;
    *) PEERS_RUNS=$runs node "$dir/node/js_workloads.mjs" "$1" ;;
  esac
}
for ((round = 0; round < rounds; round++)); do
  for ((i = 0; i < ${#runtimes[@]}; i++)); do
    runtime=${runtimes[(i + round) % ${#runtimes[@]}]}
    echo "round $((round + 1))/$rounds: $runtime" >&2
    run_one "$runtime" 2>>"$dir/stderr.log" >>"$results"
  done
done
echo "results: $results" >&2
python3 "$peers/summarize.py" "$results"
