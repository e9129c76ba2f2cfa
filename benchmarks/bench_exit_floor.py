"""The floor under a stop of N idle ranks (issue 26): N Python processes told to leave at once,
and the time until the last is reaped. Any launcher's stop ends with its ranks' exits, so on a
machine ``forked`` is about the least a stop of N Python ranks can take; ``bench_stop.py`` gives
ours.

    python benchmarks/bench_exit_floor.py [--procs 300 1000] [--repeat 2] [--how spawned forked]
        [--imports MODULE ...]

Every process reads a pipe they all share; closing its write end tells all of them at once.

- ``spawned``: ``python -c`` that reads its stdin, then leaves as a Python program does (the
  interpreter's finalization, then its pages unmapped): a script's rank under a launcher such
  as torchrun;
- ``forked``: children forked from this process that read the pipe, then ``os._exit(0)``: no
  finalization, only the kernel's teardown of a process that shares its pages with its parent,
  as a rank forked from a zygote can leave.

``--imports`` has this process (and each spawned one) import modules first, as a rank holds
them (e.g. ``zmq torch``): a bigger process unmaps more. It prints, per run: from the word to
the last process reaped; each process's CPU from the word to its end (``getrusage`` of the
reaped children less what ``/proc/PID/schedstat`` counted before the word: the exit alone); and
that CPU over the wall, against the machine's cores: near the core count, the exits ran side by
side; near 1, one after another.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(procs: int, imports: list[str], how: str) -> tuple[float, float]:
    """One round: (wall from the word to the last reaped, each process's exit CPU), in s."""
    for module in imports:  # (forked: the processes hold them as this one does)
        __import__(module)
    code = "".join(f"import {m}\n" for m in imports) + "import sys\nsys.stdin.buffer.read()\n"
    read, write = os.pipe()
    pids, spawned = [], []  # (the Popen objects kept: reaped by their own wait, not by ours)
    for _ in range(procs):
        if how == "spawned":
            child = subprocess.Popen([sys.executable, "-c", code], stdin=read, close_fds=True)  # noqa: S603
            spawned.append(child)
            pids.append(child.pid)
            continue
        pid = os.fork()
        if pid == 0:  # (forked: waits for the word, then leaves at once, as a rank can)
            os.close(write)
            os.read(read, 1)
            os._exit(0)
        pids.append(pid)
    os.close(read)
    time.sleep(1.0 + procs * (0.004 + 0.02 * len(imports)))  # (every one started and reading)
    lived = sum(map(ran, pids))  # (their CPU so far: start-up, imports)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    os.close(write)
    for child in spawned:
        child.wait()
    for pid in pids[len(spawned) :]:
        os.waitpid(pid, 0)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) - lived
    return wall, spent / procs


def ran(pid: int) -> float:
    """A live single-threaded process's CPU so far (s), to the nanosecond (Linux schedstat)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


HOW = ("spawned", "forked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--imports", nargs="*", default=[])
    parser.add_argument("--how", choices=HOW, nargs="+", default=list(HOW))
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(
        f"{cores} CPUs, load {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}"
        f"{'; each imports ' + ', '.join(args.imports) if args.imports else ''}"
    )
    print(
        "| processes | how | word → last reaped (ms) | CPU per process's exit (ms) | CPU ÷ wall |"
    )
    print("|---|---|---|---|---|")
    for procs in args.procs:
        for how in args.how:
            rounds = [run(procs, args.imports, how) for _ in range(args.repeat)]
            walls = [w for w, _ in rounds]
            cpus = [c for _, c in rounds]
            print(
                f"| {procs} | {how} | {', '.join(f'{w * 1e3:.0f}' for w in walls)} | "
                f"{', '.join(f'{c * 1e3:.2f}' for c in cpus)} | "
                f"{statistics.median(c * procs / w for w, c in rounds):.2f} of {cores} |"
            )


if __name__ == "__main__":
    main()
