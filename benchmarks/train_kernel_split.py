"""Where the kernel's CPU goes while a training loop reports (issue 26, ``bench_train.py``'s loop).

Runs ``bench_train.py``'s DDP loop as a warm ``%%distributed`` cell (``report()`` every step, a
line every 10 steps; ``--bare``: neither) and splits the kernel's CPU per step by thread (the
scheduler's own accounting, ``/proc/self/task/TID/schedstat``): the main thread (the cell's
wait, what it shows), the cluster's I/O thread, ZeroMQ's threads, the rest. On the I/O thread
it times (``time.thread_time``) and counts its parts: batches of messages (ROUTER and cell
sockets; each batch's verify, decode and store transaction), ticks and drains of its queue, and
its wake-ups (every return from ``poll``), with how many messages a batch held. ``--profile``
adds a cProfile of the I/O thread's parts (``time.thread_time`` as its clock, so the time it
waits on a shared core is not charged to it).

The ranks' threads are split the same way, from the kernel's side (``/proc/PID/task/TID``): CPU
per step and wake-ups per step (the scheduler's count of times a thread was put on a core, the
third field of ``schedstat``) of each rank's main thread, our threads (its I/O thread, its two
capture readers, ZeroMQ's) and gloo's, summed over the ranks: what takes a core from a rank's
main thread per training step.

    PYTHONPATH=python python benchmarks/train_kernel_split.py [--ranks 2] [--steps 400]
        [--cells 3] [--bare] [--profile] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_train import Cell  # noqa: E402
from common import bench_shell, use_checkout  # noqa: E402


class Parts:
    """Thread-time and counts of the I/O thread's parts, and the sizes of its batches."""

    def __init__(self, profile: bool) -> None:
        self.cpu: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.sizes: Counter[int] = Counter()
        self.records: Counter[str] = Counter()  # transactions, by what they held
        self.nice: set[int] = set()  # the nice values the I/O thread ticked at
        self.prof = cProfile.Profile(time.thread_time) if profile else None

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            t0 = time.thread_time()
            try:
                if self.prof is not None and not name.startswith(" "):  # (not nested ones)
                    return self.prof.runcall(fn, *args)
                return fn(*args)
            finally:
                self.cpu[name] += time.thread_time() - t0
                self.calls[name] += 1

        return timed


def threads_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process, by native id."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError):
            continue
    return out


def task_stats(pid: int) -> dict[int, tuple[float, int]]:
    """CPU seconds and times put on a core of each thread of process ``pid``, by thread id."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu, _, runs = (task / "schedstat").read_text().split()[:3]
        except (OSError, ValueError):
            continue
        out[int(task.name)] = (int(cpu) / 1e9, int(runs))
    return out


def task_nice(pid: int, tid: int) -> int | None:
    """Thread ``tid``'s nice value (field 19 of its ``stat``)."""
    try:
        stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[16])


def preempted(pid: int, tid: int) -> int:
    """How often thread ``tid`` was taken off a core it still wanted (``status``'s
    ``nonvoluntary_ctxt_switches``)."""
    try:
        for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
            if line.startswith("nonvoluntary_ctxt_switches:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rank_group(pid: int, tid: int, named: dict[int, str]) -> str:
    """Which of a rank's threads ``tid`` is: its main thread, ours, gloo's, or other."""
    if tid == pid:
        return "main thread"
    name = named.get(tid)
    if name is None:
        try:
            name = "os:" + Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            name = "os:?"
    if name == "jd-channel":
        return "I/O thread (ours)"
    if name.startswith("jd-capture-"):
        return f"{name[3:]} reader (ours)"
    if name.startswith("os:ZMQbg"):
        return "ZeroMQ threads (ours)"
    if "gloo" in name:
        return "gloo threads"
    return f"other ({name})"


def names() -> dict[int, str]:
    named = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    for task in Path("/proc/self/task").iterdir():
        tid = int(task.name)
        if tid not in named:
            try:
                named[tid] = "os:" + (task / "comm").read_text().strip()
            except OSError:
                named[tid] = "os:?"
    return named


def group(name: str) -> str:
    if name == "MainThread":
        return "main thread"
    if name.startswith("jd-c-"):
        return "cluster I/O thread"
    if name.startswith("os:ZMQbg"):
        return "ZeroMQ threads"
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--cells", type=int, default=3)
    parser.add_argument("--bare", action="store_true", help="no report(), no lines")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    args = parser.parse_args()
    use_checkout()
    from jupyter_distributed import ioloop as loop

    parts = Parts(args.profile)
    init = loop.IoLoop.__init__

    def instrumented(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        if not self._thread.name.startswith("jd-c-"):
            return
        on_batch = self._on_batch

        def counted(batch: Any) -> None:
            parts.sizes[len(batch)] += 1
            on_batch(batch)

        self._on_batch = parts.wrap("ROUTER batch", counted)
        tick = self._tick

        def noted() -> None:  # (the thread's nice value as it ticks, cells included)
            parts.nice.add(os.getpriority(os.PRIO_PROCESS, 0))
            tick()

        self._tick = parts.wrap("tick", noted)
        self._drain = parts.wrap("drain", self._drain)
        self._serve_ready = parts.wrap("cell sockets", self._serve_ready)
        poll = self._poller.poll
        self._poller.poll = parts.wrap("poll (wake-ups)", poll)

    loop.IoLoop.__init__ = instrumented  # type: ignore[method-assign]
    from jupyter_distributed.cluster.router import Router

    record = Router.record

    def counted_record(self: Any, events: Any, items: Any) -> None:
        held = self.cell.held[0]
        kinds = sorted({type(e).__name__ for e in [*held, *events]})
        if kinds:
            parts.records["+".join(kinds)] += 1
        record(self, events, items)

    Router.record = parts.wrap("  of which record", counted_record)  # type: ignore[method-assign]
    from jupyter_distributed.cluster.intake import Intake

    Intake.take = parts.wrap("  of which verify + decode", Intake.take)  # type: ignore[method-assign]
    ip, _ = bench_shell("jd-train-split-")
    cell = Cell(ip, args.ranks)
    cell.run(50, 10, 10, args.bare)  # (warm)
    cell._cell(  # each rank's pid and its Python threads' names, by native id
        "import os as _o, threading as _t\n"
        "_jd_threads = (_o.getpid(), {t.native_id: t.name for t in _t.enumerate()})",
        " --pull _jd_threads",
    )
    rank_threads = [(int(pid), dict(named)) for pid, named in ip.user_ns["_jd_threads"]]
    per_thread: dict[str, list[float]] = {}
    per_rank: dict[str, list[tuple[float, float]]] = {}
    kernel: list[float] = []
    taken: list[float] = []  # the ranks' main threads' preemptions per step
    for _ in range(args.cells):
        parts.cpu.clear()
        parts.calls.clear()
        before = threads_cpu()
        ranks_before = [task_stats(pid) for pid, _ in rank_threads]
        preempted_before = sum(preempted(pid, pid) for pid, _ in rank_threads)
        run = cell.run(args.steps, args.warmup, 10, args.bare)
        taken.append(
            (sum(preempted(pid, pid) for pid, _ in rank_threads) - preempted_before)
            / (args.steps + args.warmup)
        )
        after = threads_cpu()
        ranks_after = [task_stats(pid) for pid, _ in rank_threads]
        named = names()
        steps = args.steps + args.warmup
        sums: defaultdict[str, float] = defaultdict(float)
        for tid, cpu in after.items():
            sums[group(named.get(tid, "os:?"))] += cpu - before.get(tid, 0.0)
        for key, value in sums.items():
            per_thread.setdefault(key, []).append(1e3 * value / steps)
        rank_sums: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for (pid, named_r), was, now in zip(rank_threads, ranks_before, ranks_after, strict=True):
            for tid, (cpu, runs) in now.items():
                cpu0, runs0 = was.get(tid, (0.0, 0))
                sums_r = rank_sums[rank_group(pid, tid, named_r)]
                sums_r[0] += cpu - cpu0
                sums_r[1] += runs - runs0
        for key, (cpu, runs) in rank_sums.items():
            per_rank.setdefault(key, []).append((1e6 * cpu / steps, runs / steps))
        kernel.append(run.kernel_ms)
        per_thread.setdefault("steps/s", []).append(run.rate)
        for key in parts.cpu:
            per_thread.setdefault(f"  {key}", []).append(1e3 * parts.cpu[key] / steps)
            per_thread.setdefault(f"  {key}, calls/step", []).append(parts.calls[key] / steps)
    print(
        f"{args.ranks} ranks, {'bare' if args.bare else 'report() + a line / 10 steps'}, "
        f"{args.cells} cells of {args.steps}+{args.warmup} steps, load {os.getloadavg()[0]:.1f}"
    )
    print(f"kernel process CPU ms/step: {' '.join(f'{k:.3f}' for k in kernel)}")
    print("| what | per step (median of cells) | each cell |\n|---|---|---|")
    for key in sorted(per_thread, key=lambda k: (k.startswith("  "), k)):
        xs = per_thread[key]
        print(f"| {key} | {statistics.median(xs):.4f} | {' '.join(f'{x:.4f}' for x in xs)} |")
    print(
        f"\nthe ranks' threads, summed over {args.ranks} ranks (median of cells)\n"
        "| thread | CPU µs/step | wake-ups/step | each cell (µs/step, wake-ups/step) |\n"
        "|---|---|---|---|"
    )
    for key in sorted(per_rank):
        pairs = per_rank[key]
        each = " ".join(f"{c:.1f}/{w:.2f}" for c, w in pairs)
        print(
            f"| {key} | {statistics.median(c for c, _ in pairs):.1f} "
            f"| {statistics.median(w for _, w in pairs):.3f} | {each} |"
        )
    nices: defaultdict[str, set[int | None]] = defaultdict(set)
    for pid, named_r in rank_threads:
        for tid in task_stats(pid):
            nices[rank_group(pid, tid, named_r)].add(task_nice(pid, tid))
    print(
        "the ranks' main threads taken off a core they wanted, per step (each cell): "
        + " ".join(f"{x:.3f}" for x in taken)
        + "\nnice values: ranks' "
        + ", ".join(f"{k} {sorted(v, key=str)}" for k, v in sorted(nices.items()))
        + f"; the kernel's I/O thread as it ticked {sorted(parts.nice)}"
    )
    total = sum(parts.sizes.values())
    mean = sum(k * v for k, v in parts.sizes.items()) / max(1, total)
    print(
        f"ROUTER batches (all cells): {total}, messages per batch {mean:.2f}: "
        f"{dict(sorted(parts.sizes.items()))}"
    )
    print(
        f"transactions (all cells, warm-up cell included): {sum(parts.records.values())}: "
        f"{dict(parts.records.most_common())}"
    )
    if parts.prof is not None:
        out = io.StringIO()
        pstats.Stats(parts.prof, stream=out).sort_stats(args.sort).print_stats(args.top)
        print(out.getvalue().replace(str(HERE.parent) + "/", ""))
    ip.magics_manager.registry["DistributedMagics"].session.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
