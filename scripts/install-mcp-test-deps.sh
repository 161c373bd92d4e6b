#!/usr/bin/env bash
# Installs the real MCP components the MCP integration tests run against, into a project-local
# directory (default: target/mcp-deps), so tests never depend on global installs:
#   - the reference MCP servers from the npm registry (everything, filesystem, memory);
#   - the official Python MCP SDK (`mcp`), used as the client that drives `codemode mcp`.
# Usage: scripts/install-mcp-test-deps.sh [DIR]   -> prints DIR. Exits non-zero when a registry
# cannot be reached (the tests then skip, loudly).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/target/mcp-deps}"
mkdir -p "$dir"
# Test processes may run this at the same time: one installs, the others wait.
exec 9>"$dir/.install.lock"
flock 9

servers=(
  "@modelcontextprotocol/server-everything"
  "@modelcontextprotocol/server-filesystem"
  "@modelcontextprotocol/server-memory"
)
missing=0
for server in "${servers[@]}"; do
  [ -d "$dir/node/node_modules/$server" ] || missing=1
done
if [ "$missing" = 1 ]; then
  mkdir -p "$dir/node"
  npm install --prefix "$dir/node" --no-audit --no-fund --no-save --loglevel=error "${servers[@]}" >&2
fi

if [ ! -x "$dir/venv/bin/python" ] || ! "$dir/venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$dir/venv" >&2
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "mcp>=2,<3" >&2
fi
echo "$dir"
