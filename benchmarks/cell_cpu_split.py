"""Where the kernel's CPU per trivial cell goes at 1,000 fake ranks behind relays (issue 26).

Runs ``bench_scale.py``'s cluster (``--mode relay``, fake ranks, real relays, a real kernel)
with ``time.thread_time`` taken around the kernel's own functions on the thread that runs
them: the main thread's share of each cell, the I/O thread's batches (taking the relays'
reductions inside them), the store's appends (and their transactions) and the ticks, and
how many relays' or aggregators' reductions the kernel took per cell, with how many spans of
ranks (ranges) they held; with
``--profile io`` or ``--profile main``, a cProfile of that thread with ``time.thread_time`` as
its clock (a wall-clock profile on a shared core charges a thread for the time it waits).
Nested figures include each other (a batch's store append is in the batch's figure).

    PYTHONPATH=python python benchmarks/cell_cpu_split.py [--cells 20] [--profile io]
        [--mode relay|tree] [--ranks 1000] [--nodes 8] [--helpers 4] [--whole-nodes] [--pidfds]
        [--sort cumulative|tottime] [--time MODULE:OWNER.NAME ...] [--shown] [--idle S]

``--idle S`` also measures the kernel at rest: S seconds with the cluster up and no cell (after
the start and a second to settle), printed as ms of CPU per second, by thread and function.

``--time`` adds functions to the split (e.g. ``jupyter_distributed.session:Session.record``,
``jupyter_distributed.magics:_view``): each costs its wrapper's ~2 µs per call.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib
import io
import pstats
import resource
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scale  # noqa: E402
from common import use_checkout  # noqa: E402

use_checkout(always=True)
from jupyter_distributed.cluster import intake, process, router, tracker  # noqa: E402
from jupyter_distributed.history import store  # noqa: E402

ON = [False]  # while a measured cell runs
SPENT: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
PROFILE = cProfile.Profile(time.thread_time)


def timed(owner: Any, name: str, profiled: bool) -> None:
    """``owner.name`` with its thread's CPU time counted (and profiled) while ON."""
    real: Callable[..., Any] = getattr(owner, name)
    label = f"{getattr(owner, '__name__', owner)}.{name}".rpartition("jupyter_distributed.")[2]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not ON[0]:
            return real(*args, **kwargs)
        t0 = time.thread_time()
        if profiled:
            PROFILE.enable()
        try:
            return real(*args, **kwargs)
        finally:
            if profiled:
                PROFILE.disable()
            SPENT[label] += time.thread_time() - t0
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def _thread_cpu() -> dict[str, float]:
    """Seconds of CPU of each of this process's threads so far, by name: Python's threads by
    their ``threading`` name (the main one "main"), the others (ZeroMQ's, SQLite's) by the
    kernel's ``comm``; alike names summed. Under ``NAME wakes``, the times each was put on a
    core (the scheduler's count of its time slices)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    names[threading.main_thread().native_id] = "main"
    out: dict[str, float] = defaultdict(float)
    for task in Path("/proc/self/task").iterdir():
        try:
            ns, _, slices = (int(x) for x in (task / "schedstat").read_text().split())
            name = names.get(int(task.name))
            if name is None:
                name = (task / "comm").read_text().strip()
        except (OSError, ValueError):  # (a thread that ended)
            continue
        out[name] += ns / 1e9
        out[f"{name} wakes"] += slices * 1e-3  # (printed as ms: a count)
    return out


IDLE: dict[str, float] = {}  # name -> ms of CPU per second at rest (--idle)


def _at_rest(seconds: float) -> dict[str, float]:
    """ms of CPU per second of each thread, the process and the timed functions (their calls
    and the threads' wakes: a count per second) over ``seconds`` with no cell."""
    time.sleep(1.0)
    ON[0] = True
    spent, calls = dict(SPENT), dict(CALLS)
    before, u0 = _thread_cpu(), resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - w0
    after, u1 = _thread_cpu(), resource.getrusage(resource.RUSAGE_SELF)
    ON[0] = False
    out = {"process": (u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime) * 1e3 / wall}
    for name in after:
        out[f"thread {name}"] = (after[name] - before.get(name, 0.0)) * 1e3 / wall
    for label in SPENT:
        out[label] = (SPENT[label] - spent.get(label, 0.0)) * 1e3 / wall
        out[f"{label} calls"] = (CALLS[label] - calls.get(label, 0)) / wall
    return out


def _print_rest(rest: dict[str, float]) -> None:
    print("at rest (no cell), ms of CPU per second (NAME wakes, NAME calls: a count per second):")
    for name in sorted(rest, key=lambda k: (not k.startswith(("process", "thread")), -rest[k])):
        if rest[name] > 0.0005:
            print(f"  {name:34} {rest[name]:8.3f}")


def _extra(where: str) -> tuple[Any, str, bool]:
    """``MODULE:OWNER.NAME`` (or ``MODULE:NAME``) as ``(owner, name, False)``."""
    module, _, path = where.partition(":")
    owner: Any = importlib.import_module(module)
    *owners, name = path.split(".")
    for part in owners:
        owner = getattr(owner, part)
    return owner, name, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--mode", choices=("relay", "tree"), default="relay")
    parser.add_argument("--helpers", type=int, default=4)
    parser.add_argument("--whole-nodes", action="store_true", help="as bench_scale.py's")
    parser.add_argument("--pidfds", action="store_true", help="as bench_scale.py's")
    parser.add_argument("--profile", choices=("io", "main"), default=None)
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative")
    parser.add_argument("--time", nargs="+", default=[], metavar="MODULE:OWNER.NAME")
    parser.add_argument("--shown", action="store_true", help="as bench_scale.py's")
    parser.add_argument("--idle", type=float, default=0.0, metavar="S", help="seconds at rest")
    args = parser.parse_args()
    io_profiled = args.profile == "io"
    for owner, name, profiled in [
        (router.Router, "_on_batch", io_profiled),
        (router.Router, "_on_tick", io_profiled),
        (intake.Intake, "_take_relayed", False),
        (process.ProcessCluster, "_watch", False),
        (process.ProcessCluster, "_take_controls", False),
        (tracker.RunTracker, "take", False),
        (store.Store, "append", False),
        *map(_extra, args.time),
    ]:
        timed(owner, name, profiled)
    real_tx = store.Store._tx

    @contextlib.contextmanager
    def tx(self: store.Store) -> Iterator[Any]:
        CALLS["transactions"] += ON[0]
        with real_tx(self) as db:
            yield db

    store.Store._tx = tx  # type: ignore[method-assign]
    real_ranged = intake.ranged  # (the reductions the kernel took, and their spans of ranks)

    def ranged(header: dict[str, Any], *a: Any) -> list[tuple[int, int]]:
        out = real_ranged(header, *a)
        CALLS["reductions"] += ON[0]
        CALLS["ranges"] += len(out) * ON[0]
        return out

    intake.ranged = ranged  # type: ignore[assignment]
    main_cpu: list[float] = []
    process_cpu: list[float] = []
    threads: dict[str, list[float]] = defaultdict(list)  # a thread's name -> CPU per cell
    per_cell: list[dict[str, float]] = []  # SPENT at each measured cell's end (for medians)
    walls: list[float] = []
    real_cluster = bench_scale.cluster

    def cluster(ip: Any, n: int, cells: int, folder: Path, shape: str) -> dict[str, str]:
        real_run = ip.run_cell
        seen = [0]

        def run_cell(line: str, *a: Any, **k: Any) -> Any:
            seen[0] += 1
            if seen[0] == 1:  # (the cluster's start, then the rest, if measured)
                started = real_run(line, *a, **k)
                if args.idle:
                    IDLE.update(_at_rest(args.idle))
                return started
            if seen[0] == 2:  # (as bench_scale's: the first cell records the ranks' shape)
                return real_run(line, *a, **k)
            ON[0] = True
            before = _thread_cpu()
            u0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
            w0 = time.perf_counter()
            if args.profile == "main":
                PROFILE.enable()
            try:
                return real_run(line, *a, **k)
            finally:
                PROFILE.disable()
                main_cpu.append(time.thread_time() - t0)
                walls.append(time.perf_counter() - w0)
                u1 = resource.getrusage(resource.RUSAGE_SELF)
                process_cpu.append(u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime)
                after = _thread_cpu()
                per_cell.append(dict(SPENT))
                for name in sorted(set(before) | set(after)):
                    threads[name].append(after.get(name, 0.0) - before.get(name, 0.0))
                ON[0] = False

        ip.run_cell = run_cell
        try:
            return real_cluster(ip, n, cells, folder, shape)
        finally:
            ip.run_cell = real_run

    bench_scale.cluster = cluster  # type: ignore[assignment]
    sys.argv = [sys.argv[0], "--mode", args.mode, "--ranks", str(args.ranks), "--nodes"]
    sys.argv += [str(args.nodes), "--cells", str(args.cells), "--code", "None"]
    sys.argv += ["--helpers", str(args.helpers)] + ["--whole-nodes"] * args.whole_nodes
    sys.argv += ["--pidfds"] * args.pidfds
    sys.argv += ["--shown"] * args.shown + ["--no-floor"]  # (every cell a cluster's)
    with contextlib.redirect_stdout(io.StringIO()):
        bench_scale.main()
    if IDLE:
        _print_rest(IDLE)
    n = len(main_cpu)
    print(f"{n} cells; per cell, ms of CPU (thread_time), median / mean:")
    print(
        f"  the kernel process {statistics.median(process_cpu) * 1e3:.2f} / "
        f"{sum(process_cpu) / n * 1e3:.2f}; its main thread "
        f"{statistics.median(main_cpu) * 1e3:.2f} / {sum(main_cpu) / n * 1e3:.2f}; "
        f"the cell's wall {statistics.median(walls) * 1e3:.0f} ms (median)"
    )
    print("  per thread (/proc/self/task/*/schedstat, the bench's reads in), median / mean:")
    for name in sorted(threads, key=lambda k: -sum(threads[k])):
        spent = threads[name] + [0.0] * (n - len(threads[name]))
        print(f"    {name:22} {statistics.median(spent) * 1e3:.3f} / {sum(spent) / n * 1e3:.3f}")
    print("  the kernel's functions (nested figures include each other), median / mean:")
    for label in sorted(SPENT, key=lambda k: -SPENT[k]):
        before_each = [{}, *per_cell[:-1]]
        spent = [
            b.get(label, 0.0) - a.get(label, 0.0)
            for a, b in zip(before_each, per_cell, strict=True)
        ]
        print(
            f"  {label:24} {statistics.median(spent) * 1e3:7.3f} / {SPENT[label] / n * 1e3:7.3f} "
            f"ms, {CALLS[label] / n:5.2f} calls"
        )
    print(f"  store transactions {CALLS['transactions'] / n:.2f}")
    print(
        f"  reductions taken {CALLS['reductions'] / n:.2f}, their spans of ranks "
        f"{CALLS['ranges'] / n:.2f}"
    )
    if args.profile:
        out = io.StringIO()
        pstats.Stats(PROFILE, stream=out).sort_stats(args.sort).print_stats(40)
        print(out.getvalue())


if __name__ == "__main__":
    main()
