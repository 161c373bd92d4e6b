#!/usr/bin/env python3
"""Validate every fixture result against its tool's outputSchema, and every fixture `args`
against its inputSchema (used by check.mjs; needs the jsonschema package)."""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("(jsonschema missing: schemas not checked)")
    sys.exit(0)

bad = 0
for path in sys.argv[1:]:
    sc = json.load(open(path))
    for tool in sc["tools"]:
        if "name" not in tool:
            continue
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        out = tool.get("outputSchema")
        fx = tool.get("fixture") or {}
        for resp in fx.get("responses", []):
            for what, schema, value in (("args", tool["inputSchema"], resp["args"]), ("result", out, resp.get("result"))):
                if schema is None or (what == "result" and "result" not in resp):
                    continue
                errs = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
                if errs:
                    bad += 1
                    print(f"SCHEMA {path}: {tool['name']} {what} {json.dumps(resp['args'])[:120]}: {errs[0].message[:300]}")
sys.exit(1 if bad else 0)
