"""How big the history store gets for a given amount of log text, and how fast it reads.

Writes ``--lines`` output lines from ``--ranks`` ranks (typical training-log lines, 40-90
characters) into a fresh store the way a kernel does (batches of 1,000 events, a metric sample
every 10 lines), checkpoints the WAL and prints the database size over the text size. Then times
the reads the panel and the server make on that run (median of ``--repeat``, a fresh reader
connection each time, so the page cache is warm but no query result is).

    .venv/bin/python benchmarks/bench_store_size.py --lines 1000000
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from jupyter_distributed.events import MetricEvent, OutputEvent, Stream
from jupyter_distributed.history.store import RunRecord, Store


def line(rng: random.Random, step: int, rank: int) -> str:
    kind = rng.random()
    if kind < 0.7:
        return (
            f"epoch {step // 1000} step {step} rank {rank} loss {rng.random():.5f} "
            f"lr {rng.random() * 1e-3:.2e} grad_norm {rng.random() * 10:.3f}"
        )
    if kind < 0.9:
        return f"[rank {rank}] samples/s {rng.randint(100, 9000)} gpu_mem {rng.randint(1, 80)}G"
    return "WARNING: " + "".join(rng.choice("abcdefghij klmnop") for _ in range(60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=500_000)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--keep", help="copy the database here (to inspect it)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each read timed")
    args = parser.parse_args()
    rng = random.Random(0)  # noqa: S311 - reproducible sample text, not a secret
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.sqlite3"
        store = Store(path)
        run_id = "20261123-084500-abcd"  # the shape of session.new_run_id()
        store.create_run(
            RunRecord(run_id, "local", args.ranks, list(range(args.ranks)), started=time.time())
        )
        text_bytes, batch, t = 0, [], time.time()
        write_start = time.perf_counter()
        append_cpu: list[float] = []
        for i in range(args.lines):
            rank = i % args.ranks
            text = line(rng, i // args.ranks, rank)
            text_bytes += len(text.encode())
            batch.append(OutputEvent(run_id, rank, t + i * 1e-4, Stream.STDOUT, text))
            if i % 10 == 0:
                batch.append(MetricEvent(run_id, rank, t + i * 1e-4, {"samples": 64.0}))
            if len(batch) >= 1000:
                cpu = time.process_time()
                store.append(batch)
                append_cpu.append(time.process_time() - cpu)
                batch = []
        store.append(batch)
        store.close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        size = path.stat().st_size
        print(f"lines:            {args.lines:,} from {args.ranks} ranks")
        print(f"log text:         {text_bytes / 1e6:.1f} MB")
        print(f"database:         {size / 1e6:.1f} MB")
        print(f"database / text:  {size / text_bytes:.2f}x")
        write_s = time.perf_counter() - write_start
        print(f"write:            {args.lines / write_s:,.0f} lines/s")
        cpu_ms = statistics.median(append_cpu) * 1e3
        print(f"append CPU:       {cpu_ms:.2f} ms per batch of 1,000 events (median)")
        time_reads(path, run_id, args.ranks, args.repeat)
        if args.keep:
            import shutil

            shutil.copy(path, args.keep)


def time_reads(path: Path, run_id: str, ranks: int, repeat: int) -> None:
    store = Store(path)
    top = store.last_seq()
    mid = top // 2
    reads: dict[str, Callable[[], int]] = {
        "first page (500 lines)": lambda: len(store.logs(run_id)),
        "page at the middle": lambda: len(store.logs(run_id, after=mid)),
        "last page (tail)": lambda: len(store.logs(run_id, before=top + 1)),
        "one rank, middle page": lambda: len(store.logs(run_id, ranks=[ranks - 1], after=mid)),
        "one rank, last page": lambda: len(store.logs(run_id, ranks=[0], before=top + 1)),
        "stderr only (no line)": lambda: len(store.logs(run_id, stream="stderr")),
        "search, frequent word": lambda: len(store.logs(run_id, search="GRAD_norm")),
        "search, rare (full scan)": lambda: len(store.logs(run_id, search="no such text")),
        "search + rank, last page": lambda: len(
            store.logs(run_id, ranks=[1], search="warning", before=top + 1)
        ),
        "events after the middle (1,000)": lambda: len(store.events_after(mid, run_id)),
        "metric series (10,000)": lambda: len(store.metrics(run_id)),
    }
    print(f"reads (median of {repeat}):")
    for name, read in reads.items():
        times = []
        for _ in range(repeat):
            store.close()
            store = Store(path)
            start = time.perf_counter()
            n = read()
            times.append(time.perf_counter() - start)
        print(f"  {name:34} {statistics.median(times) * 1e3:8.1f} ms  ({n} rows)")
    store.close()


if __name__ == "__main__":
    main()
