"""Where a warm trivial cell's round trip goes: its critical path and each thread's CPU.

    python benchmarks/cell_timeline.py [--ranks 2] [--cells 400]

Runs ``%%distributed -n N`` + ``pass`` cells back to back in one IPython shell and marks, with
the one monotonic clock every process on the machine shares, when each step starts and ends:
in the kernel (IPython's own steps, the magic, the send, the I/O thread's send and receive, the
store, the main thread taking the ranks' ends) and in each rank (``timeline_site/``, put first
on the ranks' ``PYTHONPATH``: its cell arriving, running, its end sent). Prints the median start
and length of each step (ranks numbered by when their cell arrived), then, per cell, how long
each thread of the kernel and of the ranks ran and how long it was ready to run but waited for
a CPU (the scheduler's own accounting, ``/proc/PID/task/TID/schedstat``), and last what
no design on this stack goes below, each part measured alone (``floor.py``): IPython running a
cell magic that does nothing, a bare round trip to N processes (over pyzmq, and over Unix
sockets as the local cell sockets), one store transaction of the cell's shape. The marks cost
a few µs each, so the round trip measured here is a little longer than ``bench_core.py``'s.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floor  # noqa: E402
from common import capture, use_checkout  # noqa: E402

use_checkout()

Marks = list[tuple[str, int]]
MARKS: Marks = []  # (name, ns), kernel side
# /proc's names of threads: Python's own threads all read "python"
THREADS = {"python": "control channel thread", "ZMQbg/IO/0": "ZeroMQ I/O thread"}


def mark(module: str, cls: str, attr: str, name: str, thread: str | None = None) -> None:
    """Mark each call of ``cls.attr`` (only on threads whose name starts with ``thread``)."""
    owner = getattr(importlib.import_module(module), cls)
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def marked(*args: Any, **kwargs: Any) -> Any:
        if thread is not None and not threading.current_thread().name.startswith(thread):
            return fn(*args, **kwargs)
        MARKS.append((f"{name}>", time.perf_counter_ns()))
        try:
            return fn(*args, **kwargs)
        finally:
            MARKS.append((f"{name}<", time.perf_counter_ns()))

    setattr(owner, attr, marked)


def cpu_times(pid: int | str = "self") -> dict[tuple[str, str], tuple[int, int]]:
    """Each thread of ``pid``: {(tid, name): (ns on a CPU, ns runnable but waiting for one)},
    from the scheduler's own accounting (``/proc/PID/task/TID/schedstat``)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            run, wait, _ = (task / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        out[(task.name, stat[stat.index("(") + 1 : stat.rindex(")")])] = (int(run), int(wait))
    return out


def used(before: tuple[int, int] | None, after: tuple[int, int], cells: int) -> tuple[float, float]:
    """µs per cell on a CPU and waiting for one."""
    run0, wait0 = before or (0, 0)
    return (after[0] - run0) / cells / 1e3, (after[1] - wait0) / cells / 1e3


def spans(cells: list[Marks], count: int) -> list[tuple[float, float, str]]:
    """(median start µs, median length µs, step) of each step seen in at least half the
    cells (a step that some cells take twice, such as a second batch, shows as ``#2``)."""
    starts: dict[str, list[float]] = defaultdict(list)
    lengths: dict[str, list[float]] = defaultdict(list)
    for cell in cells:
        t0, opened, seen = cell[0][1], {}, Counter[str]()
        ranks: dict[str, str] = {}
        for name, t in cell:
            if name.startswith("pid"):  # a rank's mark: "pid<N>:<step>"
                pid, name = name.split(":", 1)
                name = name.replace("rank:", f"rank {ranks.setdefault(pid, str(len(ranks)))}:")
            step, edge = name[:-1], name[-1]
            if edge == "!":  # a moment, not a step: a step of no length
                opened[step] = t
                seen[step] += 1
                edge = "<"
            if edge == ">":
                seen[step] += 1
                opened[step] = t
            elif step in opened:
                key = f"{step} #{seen[step]}" if seen[step] > 1 else step
                begin = opened.pop(step)
                starts[key].append((begin - t0) / 1e3)
                lengths[key].append((t - begin) / 1e3)
    rows = [
        (statistics.median(starts[k]), statistics.median(lengths[k]), k)
        for k in starts
        if len(starts[k]) >= count / 2
    ]
    return sorted(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--cells", type=int, default=400)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jd-timeline-"))
    (tmp / "marks").mkdir()
    os.environ["JUPYTER_DISTRIBUTED_STORE"] = str(tmp / "history.sqlite3")
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    os.environ["JD_TIMELINE_DIR"] = str(tmp / "marks")
    site = str(HERE / "timeline_site")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))
    from IPython.testing.globalipapp import start_ipython

    shell = "IPython.core.interactiveshell"
    mark(shell, "InteractiveShell", "transform_cell", "IPython: transform the cell")
    mark(shell, "InteractiveShell", "run_ast_nodes", "IPython: run the code")
    jd = "jupyter_distributed."
    mark(jd + "magics", "DistributedMagics", "distributed", "kernel: the magic")
    mark(jd + "session", "Session", "record", "kernel: the run's record (deferred)")
    mark(jd + "backends.router", "Router", "send", "kernel: sign and queue the cell")
    mark(jd + "worker.loop", "IoLoop", "_drain", "I/O thread: run what was queued", "jd-c")
    mark(jd + "backends.router", "Router", "_take_batch", "I/O thread: take a batch", "jd-c")
    mark(jd + "backends.cellpeers", "CellPeer", "read", "I/O thread: read a cell socket", "jd-c")
    mark(jd + "store", "Store", "append", "I/O thread: store transaction", "jd-c")
    mark(jd + "backends.tracker", "RunTracker", "wait", "kernel: wait for the ranks")
    ip = start_ipython()
    ip.run_line_magic("load_ext", "jupyter_distributed")
    cell = f"%%distributed -n {args.ranks}\npass"
    times = []
    with capture(sys):
        for _ in range(10):
            ip.run_cell(cell)
        session = ip.magics_manager.registry["DistributedMagics"].session
        pids = [r.pid for r in session.live["local"].cluster.ranks()]
        io_tid = next(str(t.native_id) for t in threading.enumerate() if t.name.startswith("jd-c"))
        time.sleep(0.2)
        for f in (tmp / "marks").iterdir():
            f.write_text("")
        MARKS.clear()
        kernel0, ranks0 = cpu_times(), {p: cpu_times(p) for p in pids}
        for _ in range(args.cells):
            MARKS.append(("cell>", time.perf_counter_ns()))
            t0 = time.perf_counter()
            ip.run_cell(cell)
            times.append(time.perf_counter() - t0)
            MARKS.append(("cell<", time.perf_counter_ns()))
        kernel1, ranks1 = cpu_times(), {p: cpu_times(p) for p in pids}
        time.sleep(0.2)
        session.stop()
        noop = floor.noop_magic(ip, args.cells)
    bare = floor.zmq_round_trip(args.ranks, args.cells)
    unix = floor.unix_round_trip(args.ranks, args.cells)
    store = floor.store_transaction(args.ranks, args.cells)
    woke, quiet = floor.wake_cost(min(args.cells, 400))
    every = list(MARKS)
    for f in (tmp / "marks").iterdir():
        pid = f.stem.split("-")[1]
        for line in f.read_text().splitlines():
            name, _, t = line.rpartition(" ")
            every.append((f"pid{pid}:{name}", int(t)))
    every.sort(key=lambda m: m[1])
    cells: list[Marks] = []
    for name, t in every:
        if name == "cell>":
            cells.append([])
        if cells:
            cells[-1].append((name, t))
    print(
        f"### A warm trivial cell, {args.ranks} ranks: {args.cells} cells, median "
        f"{statistics.median(times) * 1e3:.2f} ms, load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| step | starts at, µs | takes, µs |\n|---|---|---|")
    for start, length, step in spans(cells, args.cells):
        print(f"| {step} | {start:.0f} | {length:.0f} |")
    print("\n| thread | on a CPU, µs per cell | waiting for a CPU, µs per cell |\n|---|---|---|")
    main_tid = str(os.getpid())
    for (tid, name), after in kernel1.items():
        run, wait = used(kernel0.get((tid, name)), after, args.cells)
        what = {main_tid: "main", io_tid: "I/O thread"}.get(tid, THREADS.get(name, name))
        if run >= 1:
            print(f"| kernel: {what} | {run:.0f} | {wait:.0f} |")
    per_rank: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for pid in pids:
        for (tid, name), after in ranks1[pid].items():
            role = "main" if tid == str(pid) else THREADS.get(name, name)
            run, wait = used(ranks0[pid].get((tid, name)), after, args.cells)
            per_rank[role][0] += run / len(pids)
            per_rank[role][1] += wait / len(pids)
    for role, (run, wait) in sorted(per_rank.items(), key=lambda kv: -kv[1][0]):
        if run >= 1:
            print(f"| each rank: {role} | {run:.0f} | {wait:.0f} |")
    print(
        "\n| the floor, measured alone just after | median, µs |\n|---|---|\n"
        f"| IPython running a cell magic that does nothing | {noop * 1e6:.0f} |\n"
        f"| a bare pyzmq round trip to {args.ranks} processes (300 bytes out, an answer back) "
        f"| {bare * 1e6:.0f} |\n"
        f"| the same over Unix sockets, the answers read by a second thread (as the local cell "
        f"sockets) | {unix * 1e6:.0f} |\n"
        f"| one store transaction of this cell's shape, alone | {store * 1e6:.0f} |\n"
        "\n| one 300-byte send over a Unix socket, its sender's CPU | median, µs |\n|---|---|\n"
        f"| waking the process that waits on the other end | {woke * 1e6:.1f} |\n"
        f"| nobody waiting on the other end | {quiet * 1e6:.1f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
