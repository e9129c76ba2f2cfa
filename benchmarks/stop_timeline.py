"""A stop's timeline, rank by rank and in the kernel (``bench_stop.py --timeline``, issue 26).

Every stamp is ``time.monotonic()``, which all processes of a machine share, so the ranks' and
the kernel's stamps read on one clock, from the moment the stop began:

- **kernel** (this process; its functions wrapped for the run): the Shutdowns written (first
  and last), ``wait_leaving``, ``terminate``, the router's close; each rank's end as the
  kernel's I/O thread first reports it (``exited``), and when its zombie was reaped (Popen's
  exit status handled); the kernel's threads' CPU and run-queue wait (``schedstat``);
- **ranks** (a cell wraps the worker's own functions in each rank): the Shutdown received, the
  control channel closed, the ``atexit`` handlers started, ``os._exit`` called, with the
  rank's CPU (``process_time``) at each;
- **the OS**: each rank's end, as a watcher process of its own sees its pidfd fire
  (:class:`Watcher`). Where the CPUs went: :mod:`stop_perf`.

What it prints: per stage, first / median / p90 / last; per rank, the time between stages
(median, p90); the ends per 100 ms; and where the kernel's threads spent the stop.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Run in each rank as a cell: wraps the worker's functions (the class attributes the rank's
# loop looks up at each call), writing the marks to FOLDER/PID just before the process ends.
RANK_MARKS = """\
def _jd_marks(folder={folder!r}):
    import os, time
    from jupyter_distributed.worker import cellsocket, channel
    from jupyter_distributed.protocol.commands import Shutdown
    marks = {{}}
    def now():
        return (time.monotonic(), time.process_time())
    recv, close, real_exit = cellsocket.CellSocket.recv, channel.Channel.close, os._exit
    def stamped_recv(self):
        out = recv(self)
        if isinstance(out[0], Shutdown):
            marks["shutdown"] = now()
        return out
    def stamped_close(self, *args, **kwargs):
        close(self, *args, **kwargs)
        marks["closed"] = now()
    def stamped_exit(code):
        marks["exit"] = now()
        with open(os.path.join(folder, str(os.getpid())), "w") as f:
            f.write(repr(marks))
        real_exit(code)
    def at_exit():
        marks["atexit"] = now()
    import atexit
    atexit.register(at_exit)
    cellsocket.CellSocket.recv = stamped_recv
    channel.Channel.close = stamped_close
    os._exit = stamped_exit
_jd_marks()
del _jd_marks
"""

RANK_STAGES = ("shutdown", "closed", "atexit", "exit")

# A process of its own that notes when each pid ends (its pidfd fires): no GIL of the kernel's
# between a rank's end and its stamp. Prints "ready"; once its stdin closes, "PID TIME" per end,
# then "done" (it stays until then: its CPU is not reaped among the ranks' by whoever counts it).
WATCHER = """\
import os, resource, select, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # (a pidfd per rank)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, len(sys.argv) + 64)), hard))
fds = {os.pidfd_open(int(p)): int(p) for p in sys.argv[1:]}
poll = select.poll()
for fd in fds:
    poll.register(fd, select.POLLIN)
print("ready", flush=True)
out, deadline = [], time.monotonic() + 60
while len(out) < len(fds) and time.monotonic() < deadline:
    for fd, _ in poll.poll(1000):
        out.append(f"{fds[fd]} {time.monotonic()!r}")
        poll.unregister(fd)
sys.stdin.read()
print("\\n".join(out), "done", sep="\\n", flush=True)
"""


class Watcher:
    """:data:`WATCHER` on ``pids``: when each ended, on the machine's monotonic clock."""

    def __init__(self, pids: list[int]) -> None:
        self.proc = subprocess.Popen(  # noqa: S603 (this Python, our own code)
            [sys.executable, "-c", WATCHER, *map(str, pids)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # "ready"

    def ended(self) -> dict[int, float]:
        out, _ = self.proc.communicate("", timeout=90)
        ends = {}
        for line in out.splitlines():
            if line != "done":
                pid, t = line.split()
                ends[int(pid)] = float(t)
        return ends


class KernelMarks:
    """The kernel's side of a stop, stamped by wrapping its functions while it runs."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}
        self.seen: dict[int, float] = {}  # rank → when the I/O thread's look reported its end
        self.reaped: dict[int, float] = {}  # pid → when its exit status was taken
        self.looks = 0
        self.look_time = 0.0
        self.sched: dict[str, tuple[float, float]] = {}  # the threads', as the router closes
        self._undo: list[Callable[[], None]] = []

    def _wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        old = getattr(owner, name)
        setattr(owner, name, make(old))
        self._undo.append(lambda: setattr(owner, name, old))

    def _span(self, label: str) -> Callable[[Any], Any]:
        def make(old: Any) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                self.t.setdefault(f"{label} began", time.monotonic())
                try:
                    return old(*args, **kwargs)
                finally:
                    self.t[f"{label} ended"] = time.monotonic()

            return run

        return make

    @contextlib.contextmanager
    def hooked(self) -> Iterator[KernelMarks]:
        from jupyter_distributed.backends.local import backend
        from jupyter_distributed.cluster import outbox, process, router
        from jupyter_distributed.protocol.commands import Shutdown

        def send(old: Any) -> Any:
            def run(box: Any, ranks: Any, message: Any, *args: Any) -> Any:
                if not isinstance(message, Shutdown):
                    return old(box, ranks, message, *args)
                return self._span("Shutdowns written")(old)(box, ranks, message, *args)

            return run

        def exited(old: Any) -> Any:
            def run(procs: Any) -> Any:
                t0 = time.monotonic()
                out = old(procs)
                t1 = time.monotonic()
                self.looks, self.look_time = self.looks + 1, self.look_time + t1 - t0
                for rank, _ in out:
                    self.seen.setdefault(rank, t1)
                return out

            return run

        def status(old: Any) -> Any:
            def run(proc: Any, *args: Any, **kwargs: Any) -> Any:
                self.reaped.setdefault(proc.pid, time.monotonic())
                return old(proc, *args, **kwargs)

            return run

        self._wrap(outbox.Outbox, "send", send)
        self._wrap(process, "wait_leaving", self._span("wait_leaving"))
        self._wrap(backend.LocalProcesses, "terminate", self._span("terminate"))
        self._wrap(backend.LocalProcesses, "exited", exited)

        def close(old: Any) -> Any:
            def run(router: Any) -> Any:
                self.sched = threads_sched()
                return self._span("router closed")(old)(router)

            return run

        self._wrap(router.Router, "close", close)
        self._wrap(subprocess.Popen, "_handle_exitstatus", status)
        try:
            yield self
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()


def threads_sched() -> dict[str, tuple[float, float]]:
    """This process's threads: name → (CPU seconds, seconds waiting for a CPU) so far."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, tuple[float, float]] = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            run, wait, _ = map(int, (task / "schedstat").read_text().split())
            name = names.get(int(task.name), (task / "comm").read_text().strip())
            cpu0, wait0 = out.get(name, (0.0, 0.0))
            out[name] = (cpu0 + run / 1e9, wait0 + wait / 1e9)
    return out


def rank_marks(folder: Path) -> dict[int, dict[str, tuple[float, float]]]:
    out = {}
    for path in folder.iterdir():
        with contextlib.suppress(ValueError, SyntaxError, OSError):
            out[int(path.name)] = ast.literal_eval(path.read_text())
    return out


def _ms(x: float) -> str:
    return f"{x * 1e3:,.0f}"


def _quantiles(values: list[float]) -> tuple[float, float, float, float]:
    """first, median, p90, last"""
    v = sorted(values)
    return v[0], statistics.median(v), v[min(len(v) - 1, round(0.9 * len(v)) - 1)], v[-1]


def _spread(values: list[float]) -> str:
    return " / ".join(map(_ms, _quantiles(values))) if values else "none"


def _gap(values: list[float]) -> str:
    if not values:
        return "none"
    _, mid, p90, _ = _quantiles(values)
    return f"{mid * 1e3:.2f} / {p90 * 1e3:.2f}"


def report(
    t0: float,
    n: int,
    kernel: KernelMarks,
    ranks: dict[int, dict[str, tuple[float, float]]],
    ended: dict[int, float],
    rank_of: dict[int, int],
    sched: tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]],
) -> list[str]:
    """The timeline as markdown lines."""
    lines = [
        f"Timeline of a stop of {n:,} ranks (ms after the stop began; first / median / p90 / "
        f"last; {len(ranks)} ranks' marks read, {len(ended)} pidfds fired, "
        f"{len(kernel.seen)} ends seen by the kernel, {len(kernel.reaped)} reaped):",
        "",
        "| stage | first / median / p90 / last |",
        "|---|---|",
    ]
    for label in sorted(kernel.t, key=kernel.t.__getitem__):
        lines.append(f"| kernel: {label} | {_ms(kernel.t[label] - t0)} |")
    for stage in RANK_STAGES:
        lines.append(
            f"| ranks: {stage} | "
            f"{_spread([m[stage][0] - t0 for m in ranks.values() if stage in m])} |"
        )
    lines.append(f"| ranks ended (pidfd) | {_spread([t - t0 for t in ended.values()])} |")
    lines.append(f"| ends seen by the kernel | {_spread([t - t0 for t in kernel.seen.values()])} |")
    reaped = [kernel.reaped[p] - t0 for p in rank_of if p in kernel.reaped]
    lines.append(f"| ranks reaped | {_spread(reaped)} |")
    lines += [
        "",
        "| per rank, between | wall median / p90 ms | CPU median / p90 ms |",
        "|---|---|---|",
    ]
    stages = list(RANK_STAGES)
    for a, b in itertools.pairwise(stages):
        have = [m for m in ranks.values() if a in m and b in m]
        lines.append(
            f"| {a} → {b} | {_gap([m[b][0] - m[a][0] for m in have])} | "
            f"{_gap([m[b][1] - m[a][1] for m in have])} |"
        )
    ex = [ended[p] - m["exit"][0] for p, m in ranks.items() if p in ended and "exit" in m]
    lines.append(f"| exit → pidfd | {_gap(ex)} | |")
    seen = [
        kernel.seen[rank_of[p]] - ended[p]
        for p in ended
        if p in rank_of and rank_of[p] in kernel.seen
    ]
    lines.append(f"| pidfd → seen by the kernel | {_gap(seen)} | |")
    reap = [kernel.reaped[p] - ended[p] for p in ended if p in kernel.reaped]
    lines.append(f"| pidfd → reaped | {_gap(reap)} | |")
    sent = kernel.t.get("Shutdowns written began")
    if sent is not None:
        got = [m["shutdown"][0] - sent for m in ranks.values() if "shutdown" in m]
        lines.append(f"| Shutdowns began → received | {_gap(got)} | |")
    # the shape: ends per 100 ms
    bins: dict[int, int] = {}
    for t in ended.values():
        bins[int((t - t0) / 0.1)] = bins.get(int((t - t0) / 0.1), 0) + 1
    if bins:
        row = " ".join(f"{bins.get(i, 0)}" for i in range(max(bins) + 1))
        lines += ["", f"Ranks ended per 100 ms from the stop: {row}"]
    before, after = sched[0], {**kernel.sched, **sched[1]}  # (the I/O thread's as it ended)
    lines += ["", "| kernel thread | CPU ms | waiting for a CPU ms |", "|---|---|---|"]
    for name, (cpu, wait) in sorted(after.items()):
        cpu0, wait0 = before.get(name, (0.0, 0.0))
        if cpu - cpu0 >= 0.001 or wait - wait0 >= 0.001:
            lines.append(f"| {name} | {_ms(cpu - cpu0)} | {_ms(wait - wait0)} |")
    lines.append(
        f"| (the I/O thread's looks at the processes: {kernel.looks}, "
        f"{_ms(kernel.look_time)} ms in them) | | |"
    )
    return lines
