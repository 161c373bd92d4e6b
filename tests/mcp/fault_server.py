"""A hostile MCP server on stdio, Python standard library only (no `mcp` package needed).

It speaks just enough of the protocol for codemode's client (`initialize`, `tools/list`,
`tools/call`, `ping`) and answers some calls with messages no client should swallow whole.

Usage: python3 fault_server.py [MODE]
  (no mode)     the tools below
  deep_schema   also a tool `nested` whose input and output schemas nest objects 60 levels deep

Tools:
  ok            {"ok": true}, as structuredContent
  echo          its arguments back, as structuredContent
  huge          a result line over 16 MiB (one text block of 17 MiB), the `id` before the result
  huge_id_last  the same with the `id` written after the result
  huge_notice   first a logging notification over 16 MiB, then {"ok": true}
  huge_request  first a server request (ping) over 16 MiB, then nothing: the call never ends
  deep          structuredContent nested 200 levels deep (more than a JSON parser takes)
  deep_some     structuredContent nested 110 levels deep (parses, but deeper than codemode's limit)
  deep_text     one text block holding JSON nested 200 levels deep
  brackets_text one text block of 200 `[` and some prose: not JSON, stays text
  nested_ok     structuredContent nested 50 levels deep (fine)
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
HUGE = 17 * 1024 * 1024
OBJECT = {"type": "object", "properties": {}}


def nested(levels, leaf=1):
    """JSON text of `levels` objects, each holding the next under `a`."""
    return '{"a":' * levels + json.dumps(leaf) + "}" * levels


def nested_schema(levels):
    schema = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def send_raw(text):
    sys.stdout.write(text)
    sys.stdout.write("\n")
    sys.stdout.flush()


def send(message):
    send_raw(json.dumps(message))


def result(id_, value):
    send({"jsonrpc": "2.0", "id": id_, "result": value})


TOOLS = [
    {"name": name, "description": name, "inputSchema": OBJECT}
    for name in [
        "ok",
        "echo",
        "huge",
        "huge_id_last",
        "huge_notice",
        "huge_request",
        "deep",
        "deep_some",
        "deep_text",
        "brackets_text",
        "nested_ok",
    ]
]
if MODE == "deep_schema":
    TOOLS.append(
        {
            "name": "nested",
            "description": "input and output schemas 60 levels deep",
            "inputSchema": {"type": "object", "properties": {"a": nested_schema(59)}},
            "outputSchema": {"type": "object", "properties": {"a": nested_schema(59)}},
        }
    )
elif MODE:
    sys.exit(f"unknown mode {MODE}")


def structured(id_, text):
    """A result whose structuredContent is the JSON `text`, written verbatim."""
    send_raw(
        '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"see structuredContent"}],'
        '"structuredContent":%s}}' % (json.dumps(id_), text)
    )


def call(id_, name, args):
    blob = "x" * HUGE
    if name == "ok":
        result(id_, {"content": [], "structuredContent": {"ok": True}})
    elif name == "echo":
        result(id_, {"content": [], "structuredContent": args})
    elif name == "huge":
        result(id_, {"content": [{"type": "text", "text": blob}]})
    elif name == "huge_id_last":
        body = json.dumps({"content": [{"type": "text", "text": blob}]})
        send_raw('{"jsonrpc":"2.0","result":%s,"id":%s}' % (body, json.dumps(id_)))
    elif name == "huge_notice":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": blob}})
        result(id_, {"content": [], "structuredContent": {"ok": True}})
    elif name == "huge_request":
        send({"jsonrpc": "2.0", "id": "s1", "method": "ping", "params": {"_meta": {"pad": blob}}})
    elif name == "deep":
        structured(id_, nested(200))
    elif name == "deep_some":
        structured(id_, nested(110))
    elif name == "nested_ok":
        structured(id_, nested(50))
    elif name == "deep_text":
        result(id_, {"content": [{"type": "text", "text": nested(200)}]})
    elif name == "brackets_text":
        result(id_, {"content": [{"type": "text", "text": "[" * 200 + " is how deep it goes"}]})
    elif name == "nested":
        result(id_, {"content": [], "structuredContent": args})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"no tool {name}"}})


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    method = message.get("method")
    id_ = message.get("id")
    if id_ is None or method is None:
        continue  # notifications, and answers to our own requests
    if method == "initialize":
        result(
            id_,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fault-server", "version": "1.0.0"},
            },
        )
    elif method == "tools/list":
        result(id_, {"tools": TOOLS})
    elif method == "tools/call":
        params = message.get("params") or {}
        call(id_, params.get("name"), params.get("arguments") or {})
    elif method == "ping":
        result(id_, {})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"no method {method}"}})
