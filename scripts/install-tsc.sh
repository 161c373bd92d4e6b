#!/usr/bin/env bash
# Installs the TypeScript compiler used by the SDK type-check test into a project-local
# directory (default: target/tsc), so tests never depend on a global install.
# Usage: scripts/install-tsc.sh [DIR]   -> prints the path of the tsc binary.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/target/tsc}"
tsc="$dir/node_modules/.bin/tsc"

if [ ! -x "$tsc" ]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error typescript@5 >&2
fi
echo "$tsc"
