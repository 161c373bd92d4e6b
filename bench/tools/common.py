"""Shared helpers of the scenario generators (bench/tools/gen_*.py)."""
import json
import os

SCEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios")


def write(num, sc):
    """Write scenario `sc` to bench/scenarios/NN-name.json (key order fixed for reading)."""
    order = ["name", "description", "task", "tools", "program", "program_discovery",
             "expected", "answer", "answer_contains", "direct_turns"]
    out = {k: ints(sc[k]) for k in order if k in sc}
    path = os.path.join(SCEN_DIR, f"{num:02d}-{sc['name']}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


def ints(v):
    """Integral floats as ints, so `326.0` is written `326` as a JS program would return it."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [ints(x) for x in v]
    if isinstance(v, dict):
        return {k: ints(x) for k, x in v.items()}
    return v


def prog(text):
    """A program as an array of lines (dedented, without leading/trailing blank lines)."""
    import textwrap
    return textwrap.dedent(text).strip("\n").split("\n")


def obj(props, required=None, **extra):
    s = {"type": "object", "properties": props}
    if required:
        s["required"] = required
    s.update(extra)
    return s


def s(desc, **kw):
    return {"type": "string", "description": desc, **kw}


def i(desc, **kw):
    return {"type": "integer", "description": desc, **kw}


def n(desc, **kw):
    return {"type": "number", "description": desc, **kw}


def arr(items, desc=None, **kw):
    a = {"type": "array", "items": items, **kw}
    if desc:
        a["description"] = desc
    return a
