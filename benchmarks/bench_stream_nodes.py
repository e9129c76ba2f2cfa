"""The live stream's server side at 1,000-10,000 ranks: CPU and bytes per message, an object
per event (``events``) against rows batched per node (``format=nodes``, issue 26).

Writes a store as ``feed_panel.py`` feeds the panel (``--lines-per-second`` lines a second over
the ranks, a ``samples`` report and a system sample per rank a second, 8 ranks a host), for
``--seconds`` seconds, then reads it from the start as the stream's pump does (messages of at
most ``--limit`` events, each read and written as JSON by ``read_slice`` + ``encode``), each
format in turn, ``--repeats`` times alternated. Prints per format: messages, events per message,
CPU per message (``time.process_time``, medians), CPU per event, bytes per event, and per second
of the feed the CPU and bytes the server spends to send it.

``--dump DIR``: each format's messages, one a line, for ``bench_stream_apply.ts`` (the panel's
side). ``--relay-lines``: a node's lines of one write come together (as a node relay sends them up),
not spread over random ranks.

    python benchmarks/bench_stream_nodes.py --ranks 1000 10000 [--seconds 4] [--limit 1000]

Run with ``PYTHONPATH`` at a checkout before batches, it measures that code's ``events`` only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any

from jupyter_distributed.events import (
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    Stream,
)
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.server import stream

PER_HOST = 8


def record(store: Store, ranks: int, seconds: int, lines: int, relay: bool) -> int:
    """The feed of ``feed_panel.py`` (10 writes a second); the number of events."""
    rng = Random(0)  # noqa: S311 (synthetic load)
    run_id, t0 = "bench", 1_700_000_000.0
    store.create_run(
        RunRecord(
            id=run_id, backend="local", world_size=ranks, ranks=list(range(ranks)), started=t0
        ),
        coords={r: {"host": f"node{r // PER_HOST}"} for r in range(ranks)},
    )
    start: list[Event] = [RunEvent(run_id, t0, RunState.RUNNING)]
    start += [
        RankEvent(run_id, r, t0, RankState.RUNNING, f"node{r // PER_HOST}", 10_000 + r)
        for r in range(ranks)
    ]
    store.append(start)
    total = len(start) + 1
    for step in range(seconds * 10):
        t = t0 + step / 10
        picked = [rng.randrange(ranks) for _ in range(lines // 10)]
        if relay:  # a node's lines together, as its relay's batch
            picked.sort(key=lambda r: r // PER_HOST)
        batch: list[Event] = [
            OutputEvent(run_id, r, t, Stream.STDERR if i % 50 == 0 else Stream.STDOUT,
                        f"step {step} line {i}: loss={rng.random():.4f}")
            for i, r in enumerate(picked)
        ]  # fmt: skip
        if step % 10 == 0:
            batch += [MetricEvent(run_id, r, t, {"samples": 64.0 * rng.uniform(0.9, 1.1)})
                      for r in range(ranks)]  # fmt: skip
            system = [{"sys.cpu_percent": rng.uniform(50, 100), "sys.rss_mb": 500.0 + r}
                      for r in range(ranks)]  # fmt: skip
            batch += [MetricEvent(run_id, r, t, system[r]) for r in range(ranks)]
        store.append(batch)
        total += len(batch)
    return total


def read_all(
    store: Store, limit: int, nodes: bool, dump: Path | None = None
) -> tuple[list[float], list[int], list[int]]:
    """CPU seconds, bytes and events of each message of the whole store, read as the pump does
    (with ``dump``, the messages written there, one a line)."""
    out = dump.open("w") if dump is not None else None
    cpu: list[float] = []
    sizes: list[int] = []
    counts: list[int] = []
    cursor = 0
    hosts: Any = stream.Hosts(store) if nodes else None  # type: ignore[attr-defined,unused-ignore]
    while True:
        start = time.process_time()
        if nodes:
            cursor, message, _ = stream.read_slice(store, cursor, "bench", limit, hosts)
        else:
            got = stream.read_slice(store, cursor, "bench", limit)
            if len(got) == 2:  # a checkout before batches: (cursor, items)
                cursor, items = got  # type: ignore[misc,unused-ignore]
                message = {"events": items} if items else None
            else:
                cursor, message, _ = got  # type: ignore[misc,unused-ignore]
        if message is None:
            break
        text = stream.encode(message)
        cpu.append(time.process_time() - start)
        sizes.append(len(text.encode()))
        counts.append(len(_events(message)))
        if out is not None:
            out.write(text + "\n")
    if out is not None:
        out.close()
    return cpu, sizes, counts


def _events(message: Any) -> list[int]:
    seqs = [i["seq"] for i in message.get("events", [])]
    for b in message.get("batches", []):
        seqs += b["seq"] if isinstance(b["seq"], list) else [b["seq"]]
    return seqs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--lines-per-second", type=int, default=10_000)
    parser.add_argument("--limit", type=int, nargs="+", default=[stream.BATCH])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--relay-lines", action="store_true")
    parser.add_argument("--formats", nargs="+", default=["events", "nodes"])
    parser.add_argument(
        "--dump", type=Path, help="write each format's messages to DIR/RANKS-FORMAT-LIMIT.jsonl"
    )
    args = parser.parse_args()
    print(
        f"feed: {args.lines_per_second} lines/s + 2 metric events per rank a second, "
        f"{args.seconds} s; lines {'by node (relays)' if args.relay_lines else 'of random ranks'}"
    )
    print(
        "| ranks | format | events/message | messages | CPU ms/message | µs/event | bytes/event "
        "| server CPU ms per second of feed | kB sent per second of feed |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(prefix="bench-stream-nodes-") as tmp:
            store = Store(Path(tmp) / "history.sqlite3")
            events = record(store, ranks, args.seconds, args.lines_per_second, args.relay_lines)
            runs: dict[tuple[str, int], list[tuple[list[float], list[int], list[int]]]] = {}
            for _ in range(args.repeats):
                for limit in args.limit:
                    for fmt in args.formats:
                        got = read_all(store, limit, fmt == "nodes")
                        runs.setdefault((fmt, limit), []).append(got)
            for (fmt, limit), got in runs.items():
                cpu = statistics.median(sum(c) for c, _, _ in got)
                per_message = statistics.median(statistics.median(c) for c, _, _ in got)
                sizes, counts = got[0][1], got[0][2]
                n = sum(counts)
                assert n == events, (n, events)  # every event, once
                print(
                    f"| {ranks:,} | {fmt} (≤{limit:,}) | {n / len(counts):,.0f} | {len(counts)} "
                    f"| {per_message * 1e3:.1f} | {cpu / n * 1e6:.1f} | {sum(sizes) / n:.0f} "
                    f"| {cpu / args.seconds * 1e3:.0f} | {sum(sizes) / args.seconds / 1e3:,.0f} |",
                    flush=True,
                )
            if args.dump is not None:
                args.dump.mkdir(parents=True, exist_ok=True)
                for fmt, limit in runs:
                    read_all(
                        store, limit, fmt == "nodes", args.dump / f"{ranks}-{fmt}-{limit}.jsonl"
                    )
            store.close()


if __name__ == "__main__":
    sys.exit(main())
