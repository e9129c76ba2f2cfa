"""Feed a synthetic 256-rank run into the run store, as a kernel would, for ``bench_panel``.

Usage: ``python benchmarks/feed_panel.py STORE --seconds 20 --ranks 256 --lines-per-second 2000``
(``--stop-file PATH`` ends the feed early once PATH exists: the benchmark says when it is done;
``--history-seconds N`` first writes N seconds of past metrics, as a run that has been going on;
``--probe`` gives the run a probe result of every pair of its ranks, for the Scaling tab's
heatmap, as ``%distributed probe`` stores one).

Writes one run, its ranks (8 hosts, dp/pp/tp coordinates), then every ``--batch`` seconds a batch
of output lines spread over the ranks, one ``samples`` metric and one system sample per rank per
second, and a marker line ``BENCH-MARK <n> <unix time>`` that the browser side looks for to
measure event-to-screen latency. Prints one JSON line with the run id when the run exists, and
one with the lines written and the seconds taken at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

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
from jupyter_distributed.probe import assemble


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--lines-per-second", type=int, default=2000)
    parser.add_argument("--batch", type=float, default=0.1, help="seconds between writes")
    parser.add_argument("--stop-file", type=Path, help="stop once this file exists")
    parser.add_argument(
        "--history-seconds",
        type=int,
        default=0,
        help="first write this many seconds of past metrics (and 10 lines a second)",
    )
    parser.add_argument(
        "--probe", action="store_true", help="store a probe of every pair of ranks in the run"
    )
    args = parser.parse_args()

    store = Store(args.store)
    rng = Random(0)  # noqa: S311 (synthetic load, reproducible; not security)
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    ranks = list(range(args.ranks))
    per_host = max(1, args.ranks // args.hosts)
    now = time.time()
    started = now - args.history_seconds
    store.create_run(
        RunRecord(
            id=run_id,
            backend="local",
            world_size=args.ranks,
            ranks=ranks,
            cluster_id=f"c-{run_id}",
            notebook="bench.ipynb",
            host="bench",
            started=started,
        ),
        coords={
            r: {
                "rank": r,
                "node_rank": r // per_host,
                "local_rank": r % per_host,
                "data_parallel": r // 4,
                "pipeline_stage": (r // 2) % 2,
                "tensor_parallel": r % 2,
                "role": "worker",
                "host": f"node{r // per_host}",
            }
            for r in ranks
        },
    )
    start: list[Event] = [RunEvent(run_id, started, RunState.RUNNING)]
    start += [
        RankEvent(run_id, r, started, RankState.RUNNING, f"node{r // per_host}", 10_000 + r)
        for r in ranks
    ]
    store.append(start)
    if args.probe:
        store.update_summary(run_id, probe=probe(run_id, args.ranks, per_host, rng))
    history = 0
    history_lines = 0
    for second in range(args.history_seconds):
        t = started + second + 0.5
        past: list[Event] = metrics(run_id, ranks, t, rng)
        past += [
            OutputEvent(run_id, rng.randrange(args.ranks), t, Stream.STDOUT, f"past {second} {i}")
            for i in range(10)
        ]
        history += len(past)
        history_lines += 10
        store.append(past)
    print(
        json.dumps({"run": run_id, "history_events": history, "history_lines": history_lines}),
        flush=True,
    )

    lines_per_batch = max(1, int(args.lines_per_second * args.batch))
    marker = 0
    written = 0
    next_metrics = now
    end = now + args.seconds
    while (t := time.time()) < end and not (args.stop_file and args.stop_file.exists()):
        batch: list[Event] = [
            OutputEvent(
                run_id,
                rng.randrange(args.ranks),
                t,
                Stream.STDERR if i % 50 == 0 else Stream.STDOUT,
                f"step {marker} line {i}: loss={rng.random():.4f}",
            )
            for i in range(lines_per_batch)
        ]
        if t >= next_metrics:
            next_metrics = t + 1.0
            batch += metrics(run_id, ranks, t, rng)
        marker += 1
        batch.append(
            OutputEvent(
                run_id, 0, time.time(), Stream.STDOUT, f"BENCH-MARK {marker} {time.time():.3f}"
            )
        )
        store.append(batch)
        written += lines_per_batch + 1
        time.sleep(max(0.0, args.batch - (time.time() - t)))
    t = time.time()
    store.append(
        [RankEvent(run_id, r, t, RankState.DONE) for r in ranks]
        + [RunEvent(run_id, t, RunState.COMPLETED)]
    )
    print(
        json.dumps({"done": run_id, "markers": marker, "lines": written, "seconds": t - now}),
        flush=True,
    )


def probe(run_id: str, n: int, per_host: int, rng: Random) -> dict[str, Any]:
    """A probe of every pair of ``n`` ranks (faster within a host), as the ranks' own
    measurements are put together by ``%distributed probe``."""

    def link(a: int, b: int) -> dict[str, float]:
        same = a // per_host == b // per_host
        gbs = (20.0 if same else 2.0) * (0.8 + 0.4 * rng.random())
        return {"latency_us": (3.0 if same else 20.0) * (1 + rng.random()), "bandwidth_gbs": gbs}

    curve = [{"bytes": 2**k, "busbw_gbs": min(10.0, 2**k / 2**20)} for k in range(10, 28, 2)]
    per_rank = [
        {
            "library": "gloo",
            "pairs": {f"{a}-{b}": link(a, b) for b in range(a + 1, n)},
            "allreduce": curve,
            "seconds": 1.0,
        }
        for a in range(n)
    ]
    hosts = {r: f"node{r // per_host}" for r in range(n)}
    return {**assemble(per_rank, hosts), "run_id": run_id}


def metrics(run_id: str, ranks: list[int], t: float, rng: Random) -> list[Event]:
    """One second's metrics of every rank: a ``samples`` report and a system sample."""
    events: list[Event] = [
        MetricEvent(run_id, r, t, {"samples": 64.0 * rng.uniform(0.9, 1.1)}) for r in ranks
    ]
    events += [
        MetricEvent(run_id, r, t, {"sys.cpu_percent": rng.uniform(50, 100), "sys.rss_mb": 500 + r})
        for r in ranks
    ]
    return events


if __name__ == "__main__":
    main()
