"""Where ``%distributed stop`` spends its time on hundreds of real idle ranks (issue 26).

    python benchmarks/bench_stop.py [--ranks 100 300] [--repeat 1]

Per run: N real ranks of the local backend (no torch strategy) start, idle for 5 s, then
``%distributed stop``. It prints, per run:

- **idle**: the CPU the idle ranks and their guardians take, and how often their threads are
  scheduled in (wake-ups), per rank and second, over the last 3 s before the stop;
- **stop, gone**: from the stop to ``stop()`` returning, and to no rank process left in the
  process table (a zombie counts, as in ``bench_real_ranks.py``);
- **kernel CPU**: this process's CPU (every thread) during ``stop()``;
- **ranks' CPU**: each rank's CPU from the stop to its end, its exit included, and its
  guardian's (this process is a child subreaper, so the guardians come back here and are
  reaped here: their CPU counts too; forked ranks are the fork server's children, and count
  from its children's time), per rank: what the ranks ask of the cores;
- **atexit / ended**: when the ranks' ``atexit`` handlers ran (a user handler stamps the time)
  and when their pidfds fired (first, median, last), after the stop began.

To compare two versions, run it alternately with each one first on ``PYTHONPATH``, on the same
load: on 2 shared cores the wall times are shapes, the CPU per rank is what carries.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import bench_shell  # noqa: E402
from stop_perf import Perf  # noqa: E402
from stop_timeline import (  # noqa: E402
    RANK_MARKS,
    KernelMarks,
    Watcher,
    rank_marks,
    report,
    threads_sched,
)

PR_SET_CHILD_SUBREAPER = 36
IDLE = 3.0  # seconds of idleness measured before the stop
STAMP = """\
import atexit, os, time
pid = os.getpid()
def _stamp(folder={folder!r}):
    with open(os.path.join(folder, str(os.getpid())), "w") as f:
        f.write(repr(time.monotonic()))
atexit.register(_stamp)
"""


def children_cpu() -> float:
    """CPU of this process's reaped children, and of those its children reaped: the ranks a fork
    server forked are its children, not ours (their guardians come back here all the same)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = 0
    for child in guardians([os.getpid()]):  # (this process's own children)
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return usage.ru_utime + usage.ru_stime + ticks / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sched(pid: int) -> tuple[float, int]:
    """CPU seconds of every thread of ``pid`` so far, and how many times they were scheduled
    in ((0, 0) once it is gone)."""
    total = runs = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                fields = (task / "schedstat").read_text().split()
                total, runs = total + int(fields[0]), runs + int(fields[2])
    return total / 1e9, runs


def spent(pid: int) -> float:
    """CPU seconds of every thread of ``pid`` so far (0 once it is gone)."""
    return sched(pid)[0]


def guardians(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                out += map(int, (task / "children").read_text().split())
    return out


def machine() -> str:
    """What else decides a stop's cost here: the OS, transparent huge pages, NVML."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return (
        f"Linux {os.uname().release}, THP {thp.read_text().strip() if thp.exists() else '?'}, "
        f"pynvml {'importable' if importlib.util.find_spec('pynvml') else 'absent'}, "
        f"Python {sys.version.split()[0]}"
    )


def reap_orphans() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def spread(values: list[float]) -> str:
    values = sorted(values)
    if not values:
        return "none"
    mid = statistics.median(values)
    return f"{values[0] * 1e3:.0f} / {mid * 1e3:.0f} / {values[-1] * 1e3:.0f} ms"


def one(ip: Any, n: int, folder: Path, timeline: bool, perf: bool) -> dict[str, str]:
    folder.mkdir()
    marks = folder / "marks"
    marks.mkdir()
    line = f"%%distributed -n {n} --oversubscribe --quiet --pull pid"
    cell = f"{line}\n{STAMP.format(folder=str(folder))}"
    if timeline:
        cell += RANK_MARKS.format(folder=str(marks))
    if not ip.run_cell(cell).success:
        raise RuntimeError(f"{n} ranks did not start")
    pids = [int(p) for p in ip.user_ns["pid"]]
    time.sleep(2)
    kin = guardians(pids)
    idle0 = [sched(p) for p in (*pids, *kin)]
    time.sleep(IDLE)
    idle1 = [sched(p) for p in (*pids, *kin)]
    idle_cpu = sum(b[0] - a[0] for a, b in zip(idle0, idle1, strict=True)) / n / IDLE
    idle_runs = sum(b[1] - a[1] for a, b in zip(idle0, idle1, strict=True)) / n / IDLE
    before = sum(spent(p) for p in (*pids, *kin))
    watcher = Watcher(pids)
    load = os.getloadavg()[0]
    reap_orphans()
    recorder = Perf.start(folder) if perf else None
    if recorder is not None:
        recorder.enable()
    kernel_marks, sched0 = KernelMarks(), threads_sched()
    with kernel_marks.hooked() if timeline else contextlib.nullcontext():
        c0, k0, t0 = children_cpu(), own_cpu(), time.monotonic()
        ip.run_line_magic("distributed", "stop")
        stop, kernel = time.monotonic() - t0, own_cpu() - k0
    sched1 = threads_sched()
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() - t0 < 30:
        time.sleep(0.005)
    gone = time.monotonic() - t0
    deadline = time.monotonic() + 5  # the guardians end after their ranks
    while any(Path(f"/proc/{g}/stat").exists() for g in kin) and time.monotonic() < deadline:
        reap_orphans()
        time.sleep(0.01)
    reap_orphans()
    ranks_cpu = (children_cpu() - c0 - before) / n  # (before perf and the watcher are reaped)
    kinds = {"ranks": pids, "guardians": kin, "kernel": [os.getpid()]}
    perf_lines = recorder.finish(kinds) if recorder else []
    ended = watcher.ended()
    stamps = [float(f.read_text()) - t0 for f in folder.iterdir() if f.name.isdigit()]
    split: dict[str, str] = {}
    if timeline:
        rank_of = {pid: rank for rank, pid in enumerate(pids)}
        got = rank_marks(marks)
        print("\n".join(report(t0, n, kernel_marks, got, ended, rank_of, (sched0, sched1))))
        own = [
            m["exit"][1] - m["shutdown"][1] for m in got.values() if {"exit", "shutdown"} <= set(m)
        ]
        if own:  # (a lock spun on in the exits counts as CPU here)
            python = statistics.mean(own)
            split = {
                "of which the ranks' own Python, Shutdown → os._exit": f"{python * 1e3:.1f} ms",
                "of which the rest: the OS's exits, guardians, wake-ups": (
                    f"{(ranks_cpu - python) * 1e3:.1f} ms"
                ),
            }
    print("\n".join(perf_lines))
    return {
        "load average at the stop": f"{load:.0f}",
        "idle: CPU per rank (guardian included) per second": f"{idle_cpu * 1e3:.2f} ms",
        "idle: wake-ups per rank (guardian included) per second": f"{idle_runs:.1f}",
        "stop() returned": f"{stop * 1e3:.0f} ms",
        "no rank process left": f"{gone * 1e3:.0f} ms",
        "kernel CPU in stop()": f"{kernel * 1e3:.0f} ms",
        "ranks' CPU from the stop to their end (guardians included), per rank": (
            f"{ranks_cpu * 1e3:.1f} ms"
        ),
        **split,
        "atexit handlers ran (first / median / last)": spread(stamps),
        "ranks ended (first / median / last)": spread([t - t0 for t in ended.values()]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--timeline", action="store_true", help="print each stop's timeline (stop_timeline.py)"
    )
    parser.add_argument(
        "--perf",
        action="store_true",
        help="record the stop with perf (system-wide) and print where the CPUs went",
    )
    args = parser.parse_args()
    # the ranks' guardians outlive their ranks a moment: adopted (and reaped) here, not by init
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    ip, tmp = bench_shell("jd-stop-")
    runs = [(n, i) for n in args.ranks for i in range(args.repeat)]
    rows = {
        run: one(ip, run[0], tmp / f"{run[0]}-{run[1]}", args.timeline, args.perf) for run in runs
    }
    code = Path(sys.modules["jupyter_distributed"].__file__ or "").parent
    print(
        f"{os.cpu_count()} CPUs; real idle ranks (local backend); the code in {code}; {machine()}"
    )
    print("| metric | " + " | ".join(f"{n:,} ranks" for n, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))
    for label in rows[runs[0]]:
        print(f"| {label} | " + " | ".join(rows[run].get(label, "") for run in runs) + " |")


if __name__ == "__main__":
    main()
