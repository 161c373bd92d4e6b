"""Issue 14's four workloads (W1-W4) on pydantic's Monty, for comparison with codemode.

Peer runner: the same workloads as `benches/workloads.rs`, written in Python for Monty,
run with the same method: 1 untimed warm-up run of each workload, then N timed runs
(`time.perf_counter()`), median reported; then the peak RSS.

    PEERS_RUNS=3 python monty_workloads.py        # needs `pip install pydantic-monty==1.4.0`

stdout is one JSON object per line and nothing else (diagnostics go to stderr):

    {"runtime": "monty 1.4.0", "workload": "w1", "runs_ms": [...], "median_ms": ..., "note": "..."}

for `w1`, `w1_cold`, `w2` (plus `per_call_us`), `w3`, `w4`, then
`{"runtime": ..., "peak_rss_mb": ..., "worker_peak_rss_mb": ..., "note": ...}`.

How Monty 1.4.0 runs code: `Monty()` is a pool of `monty` worker *subprocesses*;
`pool.checkout()` gives a session on a warm worker, with fresh sandbox state (globals
do not survive into the next checkout, though the worker process is reused). There is
no compiled-program object in this API: each feed sends the source to the worker,
which parses and runs it. External (host) functions are names the program leaves
undefined; each call suspends the sandbox and is one round trip to the host.

- W1 `1 + 1`: each run checks out a fresh session from a warm pool *before* the timer
  (the courtesy codemode's isolate pool gets); the timer covers `feed_run('1 + 1')`
  returning 2. `w1_cold` times a new pool (spawning its worker process), the checkout
  and the run; tearing the pool down is after the timer.
- W2-W4: the program awaits `async def` host tools, as the JS awaits its tools. Each run
  is a fresh checkout (before the timer) driven by `feed_start` / `resume`: a coroutine
  tool is answered with Monty's `{'future': ...}` protocol, run as an asyncio task on the
  host, and its result delivered when the sandbox blocks on it (`FutureSnapshot`). This
  is the fastest way found to run the async form; the documented high-level path,
  `AsyncMonty` + `feed_run(external_lookup=...)`, runs the same programs too, and its
  medians are given in the notes (it is several times slower per call on W2).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import resource
import statistics
import sys
import time

import pydantic_monty
from pydantic_monty import (
    AsyncMonty,
    FunctionSnapshot,
    FutureSnapshot,
    Monty,
    MontyComplete,
    NameLookupSnapshot,
)

RUNS = int(os.environ.get('PEERS_RUNS', '3'))
RUNTIME = f'monty {pydantic_monty.__version__}'
# W2 makes 1,000 external calls and 1,000 future resolutions; the default budget is 1,000
# suspensions per checkout (it cannot be disabled, only raised).
LIMITS = {'max_suspensions': 1_000_000}

W1 = '1 + 1'
W2 = """\
n = 0
for i in range(1000):
    r = await echo(x=i)
    if r == i:
        n += 1
n
"""
W3 = """\
import asyncio
r = await asyncio.gather(*[sleep10(x=i) for i in range(100)])
len(r)
"""
W4 = """\
rs = await get_records()
sorted(rs, key=lambda r: r['score'], reverse=True)[:5]
"""

# ---- host tools ------------------------------------------------------------------------

CALLS = {'echo': 0, 'sleep10': 0, 'get_records': 0}


async def echo(x):
    CALLS['echo'] += 1
    return x


async def sleep10(x):
    CALLS['sleep10'] += 1
    await asyncio.sleep(0.01)
    return x


def make_records():
    return [{'id': i, 'name': f'record {i}', 'score': (i * 7919) % 10007} for i in range(10_000)]


async def get_records():
    CALLS['get_records'] += 1
    return make_records()  # built per call, inside the timer, as the Rust bench does


TOOLS = {'echo': echo, 'sleep10': sleep10, 'get_records': get_records}
EXPECTED_TOP5 = sorted(make_records(), key=lambda r: r['score'], reverse=True)[:5]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def reset_calls():
    for k in CALLS:
        CALLS[k] = 0


# ---- the snapshot driver (sync pool + host asyncio loop) ---------------------------------


def drive(loop: asyncio.AbstractEventLoop, session, code: str, tools: dict):
    """Runs `code` on `session` to completion, answering each suspension by hand.

    A sync tool is answered with its value; a coroutine tool becomes an asyncio task and
    the sandbox is told its result is a future; when every sandbox task is blocked
    (`FutureSnapshot`), the host loop runs until at least one pending tool finishes and
    every finished result is delivered.
    """
    snap = session.feed_start(code)
    tasks: dict[int, asyncio.Task] = {}
    while not isinstance(snap, MontyComplete):
        if isinstance(snap, FunctionSnapshot):
            if snap.is_os_function:
                snap = snap.resume_not_handled()
                continue
            fn = tools.get(snap.function_name)
            if fn is None:
                snap = snap.resume({'exception': NameError(f'name {snap.function_name!r} is not defined')})
                continue
            result = fn(*snap.args, **snap.kwargs)
            if inspect.isawaitable(result):
                tasks[snap.call_id] = loop.create_task(result)
                snap = snap.resume({'future': ...})
            else:
                snap = snap.resume({'return_value': result})
        elif isinstance(snap, FutureSnapshot):
            ids = snap.pending_call_ids
            pending = [tasks[c] for c in ids]
            if len(pending) == 1:
                if not pending[0].done():
                    try:
                        loop.run_until_complete(pending[0])
                    except Exception:
                        pass  # delivered to the sandbox below, from the task
            elif not any(t.done() for t in pending):
                loop.run_until_complete(asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED))
            results = {}
            for c in ids:
                t = tasks[c]
                if t.done():
                    del tasks[c]
                    exc = t.exception()
                    results[c] = {'exception': exc} if exc is not None else {'return_value': t.result()}
            snap = snap.resume(results)
        elif isinstance(snap, NameLookupSnapshot):
            snap = snap.resume()  # undefined name: NameError in the sandbox
        else:
            raise RuntimeError(f'unexpected snapshot {snap!r}')
    return snap.output


# ---- checks --------------------------------------------------------------------------------


def check_w2(r):
    assert r == 1000, r
    assert CALLS['echo'] == 1000, CALLS


def check_w3(r):
    assert r == 100, r
    assert CALLS['sleep10'] == 100, CALLS


def check_w4(r):
    assert [x['id'] for x in r] == [x['id'] for x in EXPECTED_TOP5], r
    assert r == EXPECTED_TOP5, r
    assert CALLS['get_records'] == 1, CALLS


CHECKS = {'w2': (W2, check_w2), 'w3': (W3, check_w3), 'w4': (W4, check_w4)}


# ---- timing helpers --------------------------------------------------------------------------


def ms(seconds: float) -> float:
    return seconds * 1000.0


def median(xs):
    return statistics.median(xs)


def r2(x: float) -> float:
    return round(x, 3)


def vm_hwm_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def main() -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    results = {}
    worker_pids: set[int] = set()

    # ---- W1-W4 on a sync pool -----------------------------------------------------------------
    pool = Monty(min_processes=1, max_processes=1)
    pool.__enter__()

    # W1 (pooled): fresh session from the warm pool before the timer.
    w1, checkout_ms = [], []
    for i in range(RUNS + 1):
        t0 = time.perf_counter()
        session = pool.checkout(limits=LIMITS)
        session.__enter__()
        t1 = time.perf_counter()
        worker_pids.add(session.worker_pid)
        start = time.perf_counter()
        r = session.feed_run(W1)
        elapsed = time.perf_counter() - start
        session.__exit__(None, None, None)
        assert r == 2, r
        if i:
            w1.append(ms(elapsed))
            checkout_ms.append(ms(t1 - t0))
    results['w1'] = (w1, (
        f'sync Monty pool (1 worker subprocess); each run a fresh pool.checkout() session, '
        f'made before the timer (checkout median {median(checkout_ms):.3f} ms, untimed); '
        f'timer = session.feed_run("1 + 1") returning 2 (source sent and parsed per run: '
        f'1.4.0 has no compiled-program object)'))

    # W1 cold: a new pool (spawns the worker process) + checkout + run, all in the timer.
    w1c = []
    for i in range(RUNS + 1):
        start = time.perf_counter()
        cold = Monty(min_processes=1, max_processes=1)
        cold.__enter__()
        session = cold.checkout(limits=LIMITS)
        session.__enter__()
        r = session.feed_run(W1)
        elapsed = time.perf_counter() - start
        session.__exit__(None, None, None)
        cold.__exit__(None, None, None)
        assert r == 2, r
        if i:
            w1c.append(ms(elapsed))
    results['w1_cold'] = (w1c, (
        'timer = Monty(min_processes=1).__enter__() (spawns a monty worker subprocess) + '
        'checkout + feed_run("1 + 1"); pool teardown after the timer'))

    # W2-W4 through the snapshot driver, fresh checkout per run (before the timer).
    for name, (code, check) in CHECKS.items():
        runs = []
        for i in range(RUNS + 1):
            session = pool.checkout(limits=LIMITS)
            session.__enter__()
            worker_pids.add(session.worker_pid)
            reset_calls()
            start = time.perf_counter()
            r = drive(loop, session, code, TOOLS)
            elapsed = time.perf_counter() - start
            session.__exit__(None, None, None)
            check(r)
            if i:
                runs.append(ms(elapsed))
        results[name] = runs
        log(f'{name} driver: {[round(x, 2) for x in runs]}')

    # W3's floor: the same 100 host sleeps, gathered on the bare host loop, no sandbox.
    floor = []
    for i in range(RUNS + 1):
        reset_calls()
        start = time.perf_counter()
        r = loop.run_until_complete(asyncio.gather(*[sleep10(x=j) for j in range(100)]))
        elapsed = time.perf_counter() - start
        assert len(r) == 100
        if i:
            floor.append(ms(elapsed))

    log(f'sync pool worker pids: {sorted(worker_pids)}')
    sync_worker_hwm = max((v for v in map(vm_hwm_mb, worker_pids) if v is not None), default=None)
    pool.__exit__(None, None, None)

    # ---- reference: the documented async path, AsyncMonty + feed_run ---------------------------
    async def reference():
        out, pids = {}, set()
        async with AsyncMonty(min_processes=1, max_processes=1) as apool:
            for name, (code, check) in CHECKS.items():
                runs = []
                for i in range(RUNS + 1):
                    async with apool.checkout(limits=LIMITS) as session:
                        pids.add(session.worker_pid)
                        reset_calls()
                        start = time.perf_counter()
                        r = await session.feed_run(code, external_lookup=TOOLS)
                        elapsed = time.perf_counter() - start
                    check(r)
                    if i:
                        runs.append(ms(elapsed))
                out[name] = runs
                log(f'{name} AsyncMonty.feed_run: {[round(x, 2) for x in runs]}')
            hwm = max((v for v in map(vm_hwm_mb, pids) if v is not None), default=None)
        return out, hwm

    ref, async_worker_hwm = loop.run_until_complete(reference())

    driver = ('sync Monty pool, fresh checkout per run before the timer; feed_start/resume '
              'driver: coroutine tools answered with {"future": ...}, run as host asyncio tasks, '
              'results delivered at FutureSnapshot')
    results['w2'] = (results['w2'], (
        f'program `r = await echo(x=i)` x1000, async def echo called 1000 times (asserted), '
        f'2 suspensions per call (call + future resolution); {driver}; '
        f'AsyncMonty.feed_run(external_lookup=) same program: median {median(ref["w2"]):.2f} ms'))
    results['w3'] = (results['w3'], (
        f'program `await asyncio.gather(*[sleep10(x=i) for i in range(100)])`, async def sleep10 '
        f'= asyncio.sleep(0.01); concurrent: the 100 calls reach the host one round trip each '
        f'(~3 ms), then all 100 sleep at once on the host loop; {driver}; '
        f'AsyncMonty.feed_run same program: median {median(ref["w3"]):.2f} ms (starts each sleep as '
        f'its call arrives); host floor (bare asyncio.gather of the 100 sleeps): median '
        f'{median(floor):.2f} ms'))
    results['w4'] = (results['w4'], (
        f'program `rs = await get_records()` + sorted(rs, key=lambda r: r["score"], reverse=True)[:5], '
        f'10,000 records built by the host per call inside the timer, top-5 asserted; {driver}; '
        f'AsyncMonty.feed_run same program: median {median(ref["w4"]):.2f} ms'))

    for name in ('w1', 'w1_cold', 'w2', 'w3', 'w4'):
        runs, note = results[name]
        line = {'runtime': RUNTIME, 'workload': name, 'runs_ms': [r2(x) for x in runs],
                'median_ms': r2(median(runs))}
        if name == 'w2':
            line['per_call_us'] = r2(median(runs) * 1000.0 / 1000)
        line['note'] = note
        print(json.dumps(line))

    host_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({
        'runtime': RUNTIME,
        'peak_rss_mb': round(host_mb, 1),
        'worker_peak_rss_mb': round(sync_worker_hwm, 1) if sync_worker_hwm is not None else None,
        'note': (
            f'peak_rss_mb: the host Python process (ru_maxrss) after all workloads, incl. the host '
            f'records of W4 and both pool clients; sandbox code runs in monty worker subprocesses, '
            f'not counted there: worker_peak_rss_mb is VmHWM of the one worker that ran W1-W4 '
            f'(sync pool, reused across checkouts), read before it exited; the AsyncMonty reference '
            f'worker peaked at {async_worker_hwm:.1f} MB. Host + worker = {host_mb + (sync_worker_hwm or 0):.1f} MB '
            f'(upper bound; peaks need not coincide)'),
    }))
    sys.stdout.flush()
    sys.stderr.flush()
    # pydantic_monty 1.4.0 often aborts (SIGABRT) during interpreter shutdown after
    # AsyncMonty has run coroutine externals; everything is written and every pool is
    # closed by now, so leave without the interpreter's finalization.
    os._exit(0)


if __name__ == '__main__':
    main()
