"""Summarise the JSON lines of codemode's workloads bench and the peer runners as one table.

    python summarize.py results.jsonl [more.jsonl ...]

Each input line is one object from `benches/workloads.rs` (`CODEMODE_WORKLOADS_JSON=1`),
`monty_workloads.py` or `js_workloads.mjs`: a workload's runs of one process, or its peak RSS.
A runtime run in several processes (rounds) has several medians per workload; a cell shows the
median of those medians and, when there are more than one, their range. The last column compares
codemode (thread isolation) with the best *sandbox* peer, that is every runtime but `node:vm`,
which shares the host's heap and is no security boundary (it is printed as a reference point).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict

ROWS = [
    ('w1', 'W1 `return 1 + 1`, pooled sandbox (ms)'),
    ('w1_sandbox', "W1 without codemode's pipeline: its sandbox alone (ms)"),
    ('w1_cold', 'W1 with the sandbox built in the timer (ms)'),
    ('w2', 'W2 1,000 awaited echo calls (µs per call)'),
    ('w3', 'W3 100 parallel 10 ms calls (ms)'),
    ('w4', 'W4 sort 10,000 records, top 5 (ms)'),
    ('peak_rss_mb', 'peak RSS of the process (MB)'),
    ('worker_peak_rss_mb', '+ peak RSS of its worker process, if it has one (MB)'),
]
CODEMODE = 'codemode'
REFERENCE_ONLY = 'node:vm'


def load(paths: list[str]) -> tuple[dict, list[str]]:
    """{runtime: {row: [value per process]}}, and the runtimes in order of appearance."""
    table: dict = defaultdict(lambda: defaultdict(list))
    order: list[str] = []
    for path in paths:
        with open(path, encoding='utf-8') as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f'{path}:{number}: not a JSON line ({e}): {line.strip()[:80]}')
                runtime = record['runtime']
                if runtime not in order:
                    order.append(runtime)
                if 'peak_rss_mb' in record:
                    for key in ('peak_rss_mb', 'worker_peak_rss_mb'):
                        if key in record:
                            table[runtime][key].append(record[key])
                else:
                    # W2 is 1,000 calls: its median in ms is the µs per call.
                    table[runtime][record['workload']].append(record['median_ms'])
    return table, order


def cell(values: list[float]) -> str:
    if not values:
        return '-'
    middle = statistics.median(values)
    if len(values) == 1:
        return f'{middle:.3g}'
    return f'{middle:.3g} ({min(values):.3g}-{max(values):.3g})'


def comparison(table: dict, order: list[str], row: str) -> str:
    """codemode's median against the best sandbox peer's: who wins, by what factor."""
    ours = [r for r in order if r.startswith(CODEMODE) and 'thread' in r]
    peers = [r for r in order if not r.startswith(CODEMODE) and not r.startswith(REFERENCE_ONLY)]
    if row in ('worker_peak_rss_mb', 'w1_sandbox') or not ours or not table[ours[0]][row]:
        return '-'
    mine = statistics.median(table[ours[0]][row])
    measured = [(statistics.median(table[p][row]), p) for p in peers if table[p][row]]
    if not measured:
        return '-'
    best, who = min(measured)
    name = who.split(' (')[0]
    if mine <= best:
        return f'codemode, {best / mine:.2g}x faster than {name}' if row != 'peak_rss_mb' else f'codemode, {best / mine:.2g}x less than {name}'
    return f'{name}, {mine / best:.2g}x faster' if row != 'peak_rss_mb' else f'{name}, {mine / best:.2g}x less'


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit('usage: summarize.py results.jsonl [more.jsonl ...]')
    table, order = load(sys.argv[1:])
    header = ['workload'] + [r.replace('|', '/') for r in order] + ['best sandbox']
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    for row, title in ROWS:
        if not any(table[r][row] for r in order):
            continue
        cells = [cell(table[r][row]) for r in order]
        print('| ' + ' | '.join([title] + cells + [comparison(table, order, row)]) + ' |')


if __name__ == '__main__':
    main()
