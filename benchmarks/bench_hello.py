"""Control connect + hello at thousands of fake ranks, and whose CPU it is (issue 26).

Starts ``bench_scale.py``'s cluster (a real kernel in an IPython shell, real relays and
aggregators, fake ranks in ``--helpers`` processes) once per rank count and topology, runs no
cell after the first, and prints per row:

- **connect + hello**: from the first helper beginning to connect (its imports done) to the
  kernel having every rank's hello (``wait_ready`` returning), as ``bench_scale.py`` says it;
- **CPU in that span**, split by whose it is: the kernel's main thread (the start-up loop that
  takes each rank's ``Ready``), its I/O thread(s) (receive, verify, decode, record), its other
  threads (ZeroMQ's), the relays and aggregators together, the helpers of fake ranks together.
  Read from ``/proc`` (utime + stime, per thread of the kernel, per process otherwise) by a
  sampler thread every ``--every`` seconds: a figure is good to about one sample.

``--profile main`` (or ``io``) prints a cProfile of that kernel thread over the start, with
``time.thread_time`` as its clock (a wall-clock profile on shared cores charges a thread for
the time it waits). The relays and helpers: ``py-spy record --pid`` on them, or their split.

    PYTHONPATH=python python benchmarks/bench_hello.py [--ranks 1000 2000 4000] [--mode tree]
        [--nodes 80] [--helpers 12] [--profile main]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scale  # noqa: E402
from common import bench_shell, use_checkout  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PARTS = ("kernel main", "kernel I/O", "kernel other", "relays + aggregators", "helpers")


def _cpu(stat: Path) -> float:
    """utime + stime of a process or thread, in seconds (0 once it is gone)."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


class Sampler(threading.Thread):
    """Every ``every`` seconds, the CPU spent so far by each part (see the module's text)."""

    def __init__(self, every: float) -> None:
        super().__init__(daemon=True, name="bench-sampler")
        self.every = every
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.ranks: list[Any] = []  # the clusters' FakeRanks, as they are made
        self.stopped = threading.Event()

    def snapshot(self) -> dict[str, float]:
        out = dict.fromkeys(PARTS, 0.0)
        main, me = threading.main_thread().native_id, threading.get_native_id()
        io_threads = {t.native_id for t in threading.enumerate() if t.name.startswith("jd-c-")}
        for task in Path("/proc/self/task").iterdir():
            tid = int(task.name)
            if tid == me:
                continue
            part = "kernel main" if tid == main else "kernel other"
            out["kernel I/O" if tid in io_threads else part] += _cpu(task / "stat")
        for fake in self.ranks[-1:]:
            hops = (
                [*fake.relays.procs.values(), *fake.relays.aggregators.values()]
                if (fake.relays is not None)
                else []
            )
            out["relays + aggregators"] = sum(_cpu(Path(f"/proc/{p.pid}/stat")) for p in hops)
            out["helpers"] = sum(_cpu(Path(f"/proc/{p.pid}/stat")) for p in fake.procs)
        return out

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            self.samples.append((time.time(), self.snapshot()))

    def between(self, began: float, ended: float) -> dict[str, float]:
        """CPU of each part from the last sample at or before ``began`` to the first after
        ``ended``."""
        before = [s for t, s in self.samples if t <= began] or [self.samples[0][1]]
        after = [s for t, s in self.samples if t >= ended] or [self.samples[-1][1]]
        return {part: after[0][part] - before[-1][part] for part in PARTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--mode", choices=("relay", "tree"), nargs="+", default=["tree"])
    parser.add_argument("--nodes", type=int, default=8, help="relays (nodes)")
    parser.add_argument(
        "--per-node", type=int, default=0, help="ranks per node instead (nodes: ranks / this)"
    )
    parser.add_argument("--helpers", type=int, default=8)
    parser.add_argument("--every", type=float, default=0.1, help="seconds between samples")
    parser.add_argument("--profile", choices=("main", "io"))
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    use_checkout()
    bench_scale.CODE[0] = "None"  # (the start's cell: no value per rank to print)
    bench_scale.FakeRanks.nodes, bench_scale.FakeRanks.helpers = args.nodes, args.helpers
    sampler = Sampler(args.every)
    made: Callable[..., None] = bench_scale.FakeRanks.__init__

    def recorded(fake: Any, *a: Any) -> None:
        made(fake, *a)
        sampler.ranks.append(fake)

    bench_scale.FakeRanks.__init__ = recorded  # type: ignore[method-assign]
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    if profile is not None:
        _profile(profile, args.profile)
    ip, tmp = bench_shell("jd-bench-hello-")
    ip.run_line_magic("config", f"Distributed.max_world_size = {max(max(args.ranks), 1024)}")
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start, {args.helpers} "
        f"helpers of fake ranks, mode and nodes (relays) per row; CPU split sampled every "
        f"{args.every} s"
    )
    sampler.start()
    header = f"| ranks | mode | connect + hello | {' | '.join(PARTS)} | load |"
    print(header + "\n" + "|---" * (header.count("|") - 1) + "|", flush=True)
    for mode in args.mode:
        for n in args.ranks:
            if args.per_node:
                bench_scale.FakeRanks.nodes = max(1, n // args.per_node)
            print(row(ip, tmp, n, mode, sampler), flush=True)  # (each as it comes)
    sampler.stopped.set()
    if profile is not None:
        print(_top(profile, args.top))


def row(ip: Any, tmp: Path, n: int, mode: str, sampler: Sampler) -> str:
    """Start a cluster of ``n`` fake ranks (``mode``), stop it; its row of the table."""
    spans: list[tuple[float, float]] = []
    real: Callable[..., dict[str, str]] = bench_scale.cluster

    def spanned(ip: Any, n: int, cells: int, folder: Path, shape: str) -> dict[str, str]:
        out = real(ip, n, cells, folder, shape)
        began = min(float(p.read_text()) for p in folder.glob("*.start"))
        spans.append((began, began + float(out["connect + hello"].split()[0])))
        return out

    bench_scale.cluster = spanned  # type: ignore[assignment]
    try:
        bench_scale.relay(ip, n, 0, tmp, mode)
    finally:
        bench_scale.cluster = real  # type: ignore[assignment]
    split = sampler.between(*spans[0])
    cells = " | ".join(f"{split[p]:.2f} s" for p in PARTS)
    took = spans[0][1] - spans[0][0]
    shape = f"{mode} {bench_scale.FakeRanks.nodes}"
    return f"| {n:,} | {shape} | {took:.2f} s | {cells} | {os.getloadavg()[0]:.1f} |"


def _profile(profile: cProfile.Profile, thread: str) -> None:
    """Profile the kernel's ``thread`` while a cluster starts (``main``: ``wait_ready``;
    ``io``: the I/O thread's batches and ticks, as ``profile_kernel.py`` does)."""
    if thread == "main":
        from jupyter_distributed.cluster import process

        real = process.wait_ready
        process.wait_ready = lambda *a: profile.runcall(real, *a)  # type: ignore[assignment]
        return
    from jupyter_distributed import ioloop as loop

    init = loop.IoLoop.__init__

    def profiled(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        for name in ("_on_batch", "_tick", "_drain", "_serve_ready"):
            real = getattr(self, name)
            setattr(self, name, lambda *x, real=real: profile.runcall(real, *x))

    loop.IoLoop.__init__ = profiled  # type: ignore[method-assign]


def _top(profile: cProfile.Profile, count: int) -> str:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(count)
    return out.getvalue()


if __name__ == "__main__":
    main()
