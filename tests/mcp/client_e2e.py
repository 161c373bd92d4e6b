"""End-to-end scenarios: the official Python MCP SDK (`mcp`) drives `codemode mcp`, whose tool
sources are the built-ins and the reference MCP servers from npm.

Usage: python client_e2e.py SCENARIO CODEMODE_BIN DEPS_DIR WORK_DIR
Each scenario asserts what it names and exits non-zero (with the reason) when it does not hold.
Run by tests/all/mcp_e2e.rs, which installs the components first.
"""

import asyncio
import json
import os
import sys
import time

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
import mcp_types as types

SCENARIO, BIN, DEPS, WORK = sys.argv[1:5]
NODE_BIN = os.path.join(DEPS, "node", "node_modules", ".bin")


def upstream(ns, tool, *args):
    return ["--upstream", " ".join([f"{ns}={os.path.join(NODE_BIN, tool)}", *args])]


def memory_upstream():
    # The memory server keeps its graph in a file: one per test, never the package's own. The
    # extra argument (which it ignores) tells this test's server process from the others'.
    return upstream("memory", "mcp-server-memory", f"--codemode-test={WORK}") + [
        "--upstream-env",
        f"memory:MEMORY_FILE_PATH={os.path.join(WORK, 'memory.jsonl')}",
    ]


def server(*flags):
    # The client passes only a few variables (HOME among them) to the server: without this the
    # learned output types would go to, and come from, the user's cache.
    env = {**get_default_environment(), "CODEMODE_TYPES_CACHE": "off"}
    return StdioServerParameters(command=BIN, args=["mcp", *flags], cwd=WORK, env=env)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def run_code(client, code, **kw):
    result = await client.call_tool("run_code", {"code": code}, **kw)
    outcome = result.structured_content
    check(isinstance(outcome, dict), f"structuredContent is not the RunOutcome: {result}")
    check(outcome.get("version") == 1, f"not a RunOutcome: {outcome}")
    failed = outcome["status"] != "ok" or "record_error" in outcome
    check(result.is_error == failed, f"isError does not follow the status: {result}")
    return result, outcome


async def list_and_run(mode):
    """tools/list carries the SDK; one program uses two upstreams and a built-in."""
    flags = ["--root", WORK, *memory_upstream(), *upstream("everything", "mcp-server-everything")]
    async with Client(server(*flags), mode=mode) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        check(names == ["run_code"], f"only run_code is listed without --expose-direct: {names}")
        description = listed.tools[0].description
        for needle in ["create_entities(", "memory: {", "everything: {", "grep(", "get_sum("]:
            check(needle in description, f"the run_code description lacks {needle!r}")
        with open(os.path.join(WORK, "notes.txt"), "w") as f:
            f.write("alpha\nneedle here\nomega\n")
        result, outcome = await run_code(client, """
await tools.memory.create_entities({entities: [{name: "codemode", entityType: "project", observations: ["runs TS"]}]});
const graph = await tools.memory.read_graph({});
const sum = await tools.everything.get_sum({a: 2, b: 40});
const echo = await tools.everything.echo({message: "hi"});
const hits = await tools.grep({pattern: "needle"});
console.log("found", hits.matches.length);
return {names: graph.entities.map(e => e.name), sum, echo, hit: hits.matches[0]};
""")
        check(outcome["status"] == "ok", f"the run failed: {outcome}")
        value = outcome["value"]
        check(value["names"] == ["codemode"], f"memory graph: {value}")
        check("42" in json.dumps(value["sum"]), f"get-sum: {value['sum']}")
        check(value["echo"] == "Echo: hi", f"echo: {value['echo']}")
        check(value["hit"]["path"] == "notes.txt" and value["hit"]["line"] == 2, f"grep: {value['hit']}")
        stats = outcome["stats"]
        check(stats["tool_calls"] == 5, f"stats: {stats}")
        check(stats["calls_by_tool"]["everything.get_sum"] == 1, f"stats: {stats}")
        check("found 1" in text_of(result), f"the content has the console: {text_of(result)}")
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        check(client.protocol_version == expected, f"negotiated {client.protocol_version}, not {expected}")


async def content_mapping():
    """Upstream results: structuredContent, images, resource links, isError, and the minimal env."""
    os.environ["CODEMODE_E2E_SECRET"] = "must-not-leak"
    flags = [*upstream("everything", "mcp-server-everything"), "--upstream-env", "everything:GIVEN=yes"]
    async with Client(server(*flags)) as client:
        _, outcome = await run_code(client, """
const structured = await tools.everything.get_structured_content({location: "New York"});
const image = await tools.everything.get_tiny_image({});
const env = await tools.everything.get_env({});
let err = null;
try { await tools.everything.get_sum({a: "not a number", b: 1}); } catch (e) { err = {name: e.name, code: e.code}; }
return {structured, image, env, err};
""")
        check(outcome["status"] == "ok", f"the run failed: {outcome}")
        value = outcome["value"]
        check(isinstance(value["structured"], dict) and "temperature" in value["structured"], f"structured: {value['structured']}")
        images = [b for b in value["image"] if isinstance(b, dict) and b.get("type") == "image"]
        check(images and images[0]["mimeType"] == "image/png" and images[0]["data"], f"image: {value['image']}")
        env = value["env"]
        env_text = json.dumps(env)
        check("must-not-leak" not in env_text, "the upstream saw codemode's whole environment")
        check("GIVEN" in env_text and "PATH" in env_text, f"the upstream env lacks the allow-listed keys: {env_text[:300]}")
        check(value["err"] == {"name": "ToolError", "code": "INVALID_ARGS"}, f"bad args: {value['err']}")


async def tool_error_and_failure():
    """An upstream isError is TOOL_ERROR with the server's text; an uncaught one fails the run."""
    allowed = os.path.join(WORK, "allowed")
    os.makedirs(allowed, exist_ok=True)
    flags = upstream("fs", "mcp-server-filesystem", allowed)
    async with Client(server(*flags)) as client:
        _, outcome = await run_code(client, """
try { await tools.fs.read_text_file({path: "/etc/hostname"}); return "read it"; }
catch (e) { return {name: e.name, code: e.code, message: e.message, tool: e.tool}; }
""")
        value = outcome["value"]
        check(value["code"] == "TOOL_ERROR" and value["tool"] == "fs.read_text_file", f"{value}")
        check("denied" in value["message"].lower() or "outside" in value["message"].lower(), f"the server's text is lost: {value}")
        result, outcome = await run_code(client, "await tools.fs.read_text_file({path: '/etc/hostname'});")
        check(result.is_error and outcome["status"] == "error", f"an uncaught ToolError must fail the run: {outcome}")
        check(outcome["error"]["code"] == "TOOL_ERROR", f"{outcome['error']}")


async def expose_direct():
    """--expose-direct lists the visible tools beside run_code and calls them through the pipeline."""
    flags = ["--root", WORK, "--expose-direct", *upstream("everything", "mcp-server-everything")]
    async with Client(server(*flags)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        for name in ["run_code", "grep", "read_file", "everything.get_sum"]:
            check(name in names, f"{name} is not exposed: {names}")
        result = await client.call_tool("everything.get_sum", {"a": 1, "b": 2})
        check(not result.is_error and "3" in text_of(result), f"direct call: {result}")
        result = await client.call_tool("read_file", {"path": "../outside.txt"})
        check(result.is_error and "DENIED" in text_of(result), f"the path guard must apply to direct calls: {text_of(result)}")


async def progress_and_cancel():
    """Nested calls are reported as progress; a cancelled request ends its run as `cancelled`."""
    log = os.path.join(WORK, "session.jsonl")
    flags = ["--root", WORK, *upstream("everything", "mcp-server-everything"), "--session-log", log]
    async with Client(server(*flags)) as client:
        messages = []

        async def on_progress(progress, total, message):
            messages.append(message)

        _, outcome = await run_code(client, """
for (let i = 0; i < 3; i++) await tools.everything.echo({message: "m" + i});
return "done";
""", progress_callback=on_progress)
        check(outcome["status"] == "ok", f"{outcome}")
        # A call and a result per nested call, all before the response.
        calls = [m for m in messages if m and m.startswith("calling everything.echo")]
        done = [m for m in messages if m and m.startswith("everything.echo done in")]
        check(len(calls) == 3 and len(done) == 3, f"progress notifications for nested calls: {messages}")
        with anyio.move_on_after(1.0):
            await client.call_tool("run_code", {"code": "while (true) {}"})
            raise AssertionError("the endless run returned")
        # The server is still healthy, and the cancelled run is on the durable log.
        _, outcome = await run_code(client, "return 1 + 1")
        check(outcome["value"] == 2, f"{outcome}")
    await anyio.sleep(0.5)
    with open(log) as f:
        statuses = [json.loads(line).get("value", {}).get("status") for line in f if line.strip()]
    check("cancelled" in statuses, f"the session log has no cancelled run: {statuses}")


async def approvals(mode):
    """An `ask` under the policy goes to the user by elicitation (server request on legacy sessions,
    InputRequiredResult on 2026-07-28); yes runs the call, no denies only that call. A refusal
    reads the same whatever the protocol and however the user said no (unticked or declined)."""
    answers = []

    async def elicit(context, params):
        answer = answers.pop(0)
        check("write_file" in params.message, f"the question names the tool: {params.message}")
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": answer})

    async with Client(server("--root", WORK), mode=mode, elicitation_callback=elicit) as client:
        answers[:] = [True, False, "decline"]
        _, outcome = await run_code(client, """
const first = await tools.write_file({path: "approved.txt", content: "yes"});
const refusals = [];
for (const path of ["refused.txt", "declined.txt"]) {
  try { await tools.write_file({path, content: "no"}); refusals.push("written"); }
  catch (e) { refusals.push({code: e.code, by: e.details.by, reason: e.details.reason}); }
}
return {first: first.bytes_written, refusals};
""")
        check(outcome["status"] == "ok", f"{outcome}")
        refused = {"code": "DENIED", "by": "approver", "reason": "the user did not approve the call"}
        check(outcome["value"] == {"first": 3, "refusals": [refused, refused]}, f"{outcome['value']}")


async def program_approval(mode):
    """--program-approval ask: the user is asked once, before the run, with the program and its
    plan; yes answers the asks of the planned writes (no per-call question), while a write the
    plan cannot see (a computed name) still asks. A refusal keeps the program from running."""
    questions = []
    answers = []

    async def elicit(context, params):
        questions.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": answers.pop(0)})

    flags = ["--root", WORK, "--program-approval", "ask"]
    async with Client(server(*flags), mode=mode, elicitation_callback=elicit) as client:
        answers[:] = [True, True]
        _, outcome = await run_code(client, """
await tools.write_file({path: "plan-a.txt", content: "a"});
await tools.write_file({path: "plan-b.txt", content: "b"});
const edit = "edit" + "_file";
await tools[edit]({path: "plan-a.txt", old: "a", new: "A"});
return "done";
""")
        check(outcome["status"] == "ok", f"{outcome}")
        check(len(questions) == 2, f"one program question and one per-call question: {questions}")
        first = questions[0]
        for needle in ["Allow this program to run?", "Planned calls:", "write_file",
                       "plan-a.txt", "<- asks: changes files", "a tool name computed at run time"]:
            check(needle in first, f"the program question lacks {needle!r}: {first}")
        check("edit_file" in questions[1] and "Planned calls" not in questions[1],
              f"the second question is the computed edit_file call: {questions[1]}")
        check([c["path"] for c in outcome["planned_calls"]] == ["write_file", "write_file"],
              f"{outcome.get('planned_calls')}")
        check(outcome["dynamic_access"][0]["kind"] == "computed", f"{outcome.get('dynamic_access')}")
        with open(os.path.join(WORK, "plan-a.txt")) as f:
            check(f.read() == "A", "the approved writes and the asked edit ran")

        questions.clear()
        answers[:] = [False]
        _, outcome = await run_code(client, 'await tools.write_file({path: "plan-c.txt", content: "c"}); return 1')
        check(outcome["status"] == "error", f"{outcome}")
        error = outcome["error"]
        check(error["code"] == "DENIED" and error["details"] == {
            "by": "approver", "reason": "the user did not approve the program"}, f"{error}")
        check(len(questions) == 1, f"{questions}")
        check(not os.path.exists(os.path.join(WORK, "plan-c.txt")), "the refused program ran")


async def no_elicitation_denies():
    """A client without elicitation gets asks refused with a reason."""
    async with Client(server("--root", WORK)) as client:
        _, outcome = await run_code(client, """
try { await tools.shell({command: "touch shell-ran"}); return "ran"; }
catch (e) { return {code: e.code, by: e.details.by, reason: e.details.reason}; }
""")
        value = outcome["value"]
        check(value["code"] == "DENIED" and "elicitation" in value["reason"], f"{value}")
        check(not os.path.exists(os.path.join(WORK, "shell-ran")), "the refused shell call ran")


async def upstream_failures():
    """An upstream that cannot start is reported; one that dies mid-run fails its calls clearly;
    the other sources keep working."""
    policy = os.path.join(WORK, "policy.toml")
    with open(policy, "w") as f:
        f.write('default = "allow"\n')
    flags = ["--root", WORK, "--policy", policy, *memory_upstream(),
             "--upstream", "broken=/nonexistent/mcp-server"]
    async with Client(server(*flags)) as client:
        check("broken" in (client.instructions or ""), f"instructions: {client.instructions}")
        _, outcome = await run_code(client, f"const WORK = {json.dumps(WORK)};\n" + """
const before = await tools.memory.read_graph({});
await tools.shell({command: "pkill -f '^node .*mcp-server-memory --codemode-test=" + WORK + "'"});
await new Promise(r => setTimeout(r, 300));
let after;
try { await tools.memory.read_graph({}); after = "answered"; } catch (e) { after = {code: e.code, message: e.message}; }
const files = await tools.list_dir({path: "."});
return {before: Array.isArray(before.entities), after, builtins: files.entries.length > 0};
""")
        value = outcome["value"]
        check(value["before"] is True and value["builtins"] is True, f"{value}")
        check(value["after"]["code"] == "TOOL_ERROR" and "memory" in value["after"]["message"], f"{value['after']}")


FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture_server.py")


async def list_changed():
    """An upstream's notifications/tools/list_changed refreshes the visible set for the next run,
    and the client is told that the tool list (the run_code description) changed."""
    notices = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and "list_changed" in message.method:
            notices.append(message.method)

    flags = ["--upstream", f"dyn={sys.executable} {FIXTURE} dynamic"]
    async with Client(server(*flags), mode="legacy", message_handler=on_message) as client:
        description = (await client.list_tools()).tools[0].description
        check("added_later(" not in description, "the tool exists before it was added")
        _, outcome = await run_code(client, "return await tools.dyn.grow({});")
        # The Python SDK wraps a str return as structured content `{result}`.
        check(outcome["value"] == {"result": "grown"}, f"{outcome}")
        # The refresh and its notification race the client's next listing, and the machine may be
        # busy: poll (generously) until both arrived.
        for _ in range(300):
            description = (await client.list_tools()).tools[0].description
            if "added_later(" in description and notices:
                break
            await anyio.sleep(0.1)
        check("added_later(" in description, "the SDK never showed the added tool")
        check(notices, "the client was not told that the tool list changed")
        _, outcome = await run_code(client, "return await tools.dyn.added_later({x: 21});")
        check(outcome["value"] == {"result": 42}, f"the added tool is not callable: {outcome}")


async def discovery():
    """--discovery on: the description declares only catalog.search/describe; programs find tools,
    read their types, and call them."""
    flags = ["--root", WORK, "--discovery", "on", *upstream("everything", "mcp-server-everything")]
    async with Client(server(*flags)) as client:
        description = (await client.list_tools()).tools[0].description
        check("get_sum(" not in description and "grep(" not in description, "the full SDK is still embedded")
        check("search(" in description and "tools.everything.<name>" in description, "no discovery SDK")
        _, outcome = await run_code(client, """
const found = await tools.catalog.search({query: "sum of two numbers"});
const path = found.tools[0].path;
const doc = await tools.catalog.describe({path});
const sum = await tools.everything.get_sum({a: 20, b: 22});
return {path, typed: doc.typescript.includes("a: number"), sum};
""")
        value = outcome["value"]
        check(value["path"] == "everything.get_sum" and value["typed"], f"{value}")
        check("42" in json.dumps(value["sum"]), f"{value}")


async def capped_structured():
    """structuredContent keeps the text's output budget (5,000 log lines and a 3,000-item value
    come back under 40 KB with explicit truncation markers), and run_code declares an
    outputSchema that the full and the capped outcome both satisfy."""
    import jsonschema
    async with Client(server("--root", WORK)) as client:
        listed = await client.list_tools()
        schema = listed.tools[0].output_schema
        check(isinstance(schema, dict) and "logs_truncated" in schema["properties"], f"outputSchema: {schema}")
        result, outcome = await run_code(client, """
for (let i = 0; i < 5000; i++) console.log(`line ${i} ` + "x".repeat(30));
return Array.from({length: 3000}, (_, i) => ({i, name: `item ${i}`}));
""")
        size = len(json.dumps(outcome, separators=(",", ":")).encode())
        check(size <= 40_000, f"structuredContent is {size} bytes, over the 40,000-byte budget")
        check("value" not in outcome, f"the value over the budget is not cut: {list(outcome)}")
        cut = outcome["value_truncated"]
        check(cut["bytes"] > 60_000 and cut["preview"].startswith('[{"i":0'), f"value marker: {cut['bytes']}")
        logs = outcome["logs_truncated"]
        check(logs["entries"] + len(outcome["logs"]) >= 5000 and logs["bytes"] > 100_000, f"logs marker: {logs}")
        check(outcome["logs"][0]["text"].startswith("line 0 "), f"logs keep their start: {outcome['logs'][:1]}")
        jsonschema.validate(outcome, schema)
        small_result, small = await run_code(client, "console.log('hi'); return {a: 1}")
        check(small["value"] == {"a": 1} and "logs_truncated" not in small, f"{small}")
        jsonschema.validate(small, schema)
        check(len(text_of(result).encode()) <= 40_100, "the text content keeps its budget too")


async def no_nested_run_code():
    """A program cannot call run_code itself (it never sees itself): UNKNOWN_TOOL at once, even
    with one worker (a nested run would wait for the busy worker until its deadline)."""
    async with Client(server("--root", WORK, "--workers", "1")) as client:
        _, outcome = await run_code(client, """
const codes = [];
for (const call of [() => tools.run_code({code: "return 41 + 1"}), () => tools["run_code"]({code: "return 1"})]) {
  try { await call(); codes.push("ran"); } catch (e) { codes.push(e.code ?? e.name); }
}
return codes;
""")
        check(outcome["status"] == "ok", f"{outcome}")
        check(outcome["value"] == ["UNKNOWN_TOOL", "UNKNOWN_TOOL"], f"{outcome['value']}")
        check(outcome["stats"]["wall_ms"] < 5000, f"the run waited: {outcome['stats']}")


async def mrtr_retry_rules():
    """Driving the InputRequiredResult rounds by hand: a retry naming another tool is refused and
    leaves the call suspended; the right retry delivers the answer (here: no)."""
    async def elicit(context, params):
        raise AssertionError("this scenario answers the input requests itself")

    code = "return await tools.write_file({path: 'manual.txt', content: 'x'});"
    async with Client(server("--root", WORK), elicitation_callback=elicit) as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        first = await client.session.call_tool("run_code", {"code": code}, allow_input_required=True)
        check(isinstance(first, types.InputRequiredResult), f"expected input_required: {first}")
        (key,) = first.input_requests.keys()
        no = {key: types.ElicitResult(action="accept", content={"approve": False})}
        try:
            await client.session.call_tool("grep", {"pattern": "x"}, input_responses=no,
                                           request_state=first.request_state)
            raise AssertionError("a retry naming another tool was accepted")
        except Exception as e:  # the SDK raises MCPError for a JSON-RPC error
            check("continues a call of `run_code`" in str(e), f"unexpected error: {e!r}")
        final = await client.session.call_tool("run_code", {"code": code}, input_responses=no,
                                               request_state=first.request_state)
        outcome = final.structured_content
        check(final.is_error and outcome["error"]["code"] == "DENIED", f"{outcome}")
        check(not os.path.exists(os.path.join(WORK, "manual.txt")), "the refused write happened")


def workers_of_server(work):
    """Pids of the sandbox worker processes of the codemode server serving WORK."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{fields[1]}/cmdline", "rb") as f:
                parent = f.read().split(b"\0")
        except OSError:
            continue
        if b"__codemode-sandbox-worker" in cmdline and fields[0] != "Z" and work.encode() in parent:
            pids.append(int(entry))
    return pids


async def crashed_worker():
    """A sandbox worker process killed mid-run ends that run as `crashed` (with the signal), the
    session log records it, and the server answers the next request."""
    log = os.path.join(WORK, "session.jsonl")
    flags = ["--root", WORK, "--workers", "1", "--session-log", log]
    async with Client(server(*flags)) as client:
        _, outcome = await run_code(client, "return 'warm'")
        check(outcome["value"] == "warm", f"{outcome}")
        pending = asyncio.create_task(run_code(
            client, "console.log('waiting'); await new Promise(r => setTimeout(r, 30000)); return 1"))
        pids = []
        for _ in range(100):
            await anyio.sleep(0.1)
            pids = workers_of_server(WORK)
            if pids:
                break
        check(len(pids) == 1, f"one worker process of the server: {pids}")
        await anyio.sleep(0.5)
        os.kill(pids[0], 9)
        result, outcome = await pending
        check(outcome["status"] == "crashed", f"{outcome}")
        check("killed by signal 9 (SIGKILL)" in outcome["error"]["message"], f"{outcome}")
        check(result.is_error, f"a crashed run is an error result: {result}")
        _, outcome = await run_code(client, "return 40 + 2")
        check(outcome["value"] == 42, f"the server serves the next request: {outcome}")
    await anyio.sleep(0.5)
    with open(log) as f:
        statuses = [json.loads(line).get("value", {}).get("status") for line in f if line.strip()]
    check("crashed" in statuses, f"the session log has the crashed run: {statuses}")


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_pid(work):
    """The pid of the codemode server serving WORK (the one whose arguments name it)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if len(cmdline) > 2 and cmdline[1] == b"mcp" and any(work.encode() in a for a in cmdline):
            return int(entry)
    raise AssertionError(f"no codemode server serves {work}")


def env_int(name, default):
    return int(os.environ.get(name, default))


async def soak():
    """Sequential `return 1` runs through one session (CODEMODE_SOAK_RUNS, default 2000) with
    --isolation CODEMODE_SOAK_ISOLATION (default process): every answer right, one session-log
    record each, and the server's RSS at most CODEMODE_SOAK_MAX_GROWTH_MB (default 64) above its
    start. Prints a table of RSS samples (server, and its workers together)."""
    runs = env_int("CODEMODE_SOAK_RUNS", 2000)
    isolation = os.environ.get("CODEMODE_SOAK_ISOLATION", "process")
    max_growth = env_int("CODEMODE_SOAK_MAX_GROWTH_MB", 64)
    log = os.path.join(WORK, "session.jsonl")
    flags = ["--root", WORK, "--isolation", isolation, "--session-log", log]
    async with Client(server(*flags)) as client:
        _, outcome = await run_code(client, "return 0")
        pid = server_pid(WORK)
        start = rss_mb(pid)
        print(f"| runs | server RSS MB | workers RSS MB | ms/run |  ({isolation} isolation)")
        print("|---:|---:|---:|---:|")
        began = time.monotonic()
        peak = start
        for i in range(1, runs + 1):
            _, outcome = await run_code(client, f"return {i}")
            check(outcome["value"] == i, f"run {i}: {outcome}")
            if i % max(1, runs // 10) == 0 or i == runs:
                now = rss_mb(pid)
                peak = max(peak, now)
                workers = sum(rss_mb(w) for w in workers_of_server(WORK))
                per_run = (time.monotonic() - began) * 1000 / i
                print(f"| {i} | {now:.1f} | {workers:.1f} | {per_run:.2f} |", flush=True)
        growth = peak - start
        print(f"server RSS: start {start:.1f} MB, peak {peak:.1f} MB, growth {growth:.1f} MB")
        check(growth <= max_growth, f"the server grew {growth:.1f} MB over {runs} runs (limit {max_growth})")
    await anyio.sleep(0.3)
    with open(log) as f:
        records = sum(1 for line in f if line.strip())
    check(records == runs + 1, f"{records} session-log records for {runs + 1} runs")


async def load():
    """CODEMODE_LOAD_REQUESTS (default 1000) concurrent run_code requests, each grepping and
    reading 8 files through the built-ins: all answered correctly, one durable session-log record
    each, and the server's peak RSS at most CODEMODE_LOAD_MAX_RSS_MB (default 300)."""
    requests = env_int("CODEMODE_LOAD_REQUESTS", 1000)
    max_rss = env_int("CODEMODE_LOAD_MAX_RSS_MB", 300)
    isolation = os.environ.get("CODEMODE_LOAD_ISOLATION", "process")
    corpus = os.path.join(WORK, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for i in range(8):
        with open(os.path.join(corpus, f"file{i}.txt"), "w") as f:
            f.write(f"line one of {i}\nthe needle {i}\n" + "filler\n" * 200)
    log = os.path.join(WORK, "session.jsonl")
    flags = ["--root", corpus, "--isolation", isolation, "--session-log", log]
    program = """
const hits = await tools.grep({ pattern: "needle" });
const texts = await Promise.all(hits.matches.map(m => tools.read_file({ path: m.path })));
return { hits: hits.matches.length, lines: texts.map(t => t.content.split("\\n").length) };
"""
    async with Client(server(*flags)) as client:
        pid = server_pid(WORK)
        start = rss_mb(pid)
        peak = start
        done = False

        async def sample():
            nonlocal peak
            while not done:
                peak = max(peak, rss_mb(pid))
                await anyio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        began = time.monotonic()
        results = await asyncio.gather(*(run_code(client, program) for _ in range(requests)))
        elapsed = time.monotonic() - began
        done = True
        await sampler
        for _, outcome in results:
            check(outcome["status"] == "ok", f"{outcome}")
            check(outcome["value"]["hits"] == 8 and len(outcome["value"]["lines"]) == 8, f"{outcome}")
        print(f"{requests} concurrent requests ({isolation}): {elapsed:.1f} s, "
              f"{requests / elapsed:.0f} runs/s; server RSS start {start:.1f} MB, peak {peak:.1f} MB")
        check(peak <= max_rss, f"server peak RSS {peak:.1f} MB over {max_rss} MB")
    await anyio.sleep(0.3)
    with open(log) as f:
        records = sum(1 for line in f if line.strip())
    check(records == requests, f"{records} session-log records for {requests} runs")


SCENARIOS = {
    "capped_structured": capped_structured,
    "no_nested_run_code": no_nested_run_code,
    "soak": soak,
    "load": load,
    "crashed_worker": crashed_worker,
    "mrtr_retry_rules": mrtr_retry_rules,
    "discovery": discovery,
    "list_changed": list_changed,
    "list_and_run_modern": lambda: list_and_run("auto"),
    "list_and_run_legacy": lambda: list_and_run("legacy"),
    "content_mapping": content_mapping,
    "tool_error_and_failure": tool_error_and_failure,
    "expose_direct": expose_direct,
    "progress_and_cancel": progress_and_cancel,
    "approvals_modern": lambda: approvals("auto"),
    "approvals_legacy": lambda: approvals("legacy"),
    "no_elicitation_denies": no_elicitation_denies,
    "program_approval_modern": lambda: program_approval("auto"),
    "program_approval_legacy": lambda: program_approval("legacy"),
    "upstream_failures": upstream_failures,
}

async def main():
    with anyio.fail_after(env_int("CODEMODE_SCENARIO_TIMEOUT_S", 90)):
        await SCENARIOS[SCENARIO]()


if __name__ == "__main__":
    asyncio.run(main())
    print(f"scenario {SCENARIO}: ok")
