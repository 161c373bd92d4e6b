#!/usr/bin/env python3
"""Per-request latency of `codemode mcp` over stdio, measured with a bare JSON-RPC client (no MCP
SDK, so the client's own cost is a `json.dumps`, a pipe write and a `readline`).

usage: scripts/mcp-latency.py CODEMODE_BIN REQUESTS [codemode mcp flags...]

Each request is a `run_code` of `return i` (or, with PING=1, a JSON-RPC `ping`, which measures the
transport alone). GAP (seconds, default 0.02) is the pause between requests: with 20 ms the
server's cores are idle (halted, on a VM) when each request arrives, as they are between an
agent's calls; with 0 they are not. SETTLE (seconds, default 0) is a pause after the handshake,
so that a server's first seconds (its startup snapshot made in the background, its first workers
replaced) are left out. The first tenth of the requests is left out too. Prints the median, p10
and p90 in ms."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN, N = sys.argv[1], int(sys.argv[2])
FLAGS = sys.argv[3:]
GAP = float(os.environ.get("GAP", "0.02"))
PING = bool(os.environ.get("PING"))
SETTLE = float(os.environ.get("SETTLE", "0"))

server = subprocess.Popen(
    [BIN, "mcp", *FLAGS],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
    cwd=tempfile.mkdtemp(prefix="mcp-latency-"),
)


def send(message):
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()


def response():
    while True:
        line = server.stdout.readline()
        if not line:
            sys.exit("the server closed its output")
        message = json.loads(line)
        if "id" in message:
            return message


send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "mcp-latency", "version": "0"}}})
response()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
time.sleep(SETTLE)
times = []
for i in range(1, N + 1):
    if PING:
        request = {"jsonrpc": "2.0", "id": i, "method": "ping"}
    else:
        request = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "run_code", "arguments": {"code": f"return {i}"}}}
    started = time.perf_counter()
    send(request)
    answer = response()
    times.append((time.perf_counter() - started) * 1e3)
    if "result" not in answer or answer["result"].get("isError"):
        sys.exit(f"request {i} failed: {answer}")
    time.sleep(GAP)
times = sorted(times[N // 10:])
what = "ping" if PING else "run_code"
print(f"{what} {' '.join(FLAGS) or '(default flags)'}: median {statistics.median(times):.3f} ms, "
      f"p10 {times[len(times) // 10]:.3f}, p90 {times[len(times) * 9 // 10]:.3f}")
server.stdin.close()
server.wait(timeout=10)
