"""What a rank costs beside the user's code while a cell runs (issue 26: the cost we add to a
training step), against ipyparallel's engine in the same run.

    PYTHONPATH=python python benchmarks/bench_rank_busy.py [--ranks 2] [--seconds 10]
        [--repeat 2] [--systems ours ipyparallel] [--cells sleep report print]

Each cell runs for S seconds on every rank and measures itself from inside, by Linux's
``/proc/self/task/*/schedstat``: the CPU and the wake-ups (times put on a core) per second of
the rank's main thread (the user's code) and of every other thread of its process (ours: the
I/O thread, the two capture threads, ZeroMQ's; ipyparallel's: the engine's heartbeat, I/O and
ZeroMQ threads), and, for ours, of the rank's guardian process (``worker/guard.py``). On a
training node each wake-up takes a core from a rank's step for a moment; with as many ranks as
cores, the partner waits in the all-reduce. The cells:

- ``sleep``: ``time.sleep(S)``, a rank waiting (a long collective, a data load);
- ``report``: a step every 5 ms calling ``report(loss=..., step=...)`` (ipyparallel has no
  ``report``: there it is a no-op);
- ``print``: a line every 50 ms.

Median over repeats, per rank. Runs the code ``PYTHONPATH`` names, so an A/B runs this same
script with each tree's ``python/`` first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_shell, use_checkout
from drivers import IPP, JD

MEASURE = textwrap.dedent("""
    import os as _os, threading as _th, time as _time
    def _snap():
        main = _th.get_native_id()  # (the cell runs on the main thread)
        out = {}
        for tid in _os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    run, _, n = map(int, f.read().split())
            except OSError:
                continue
            out[("main" if int(tid) == main else "added", tid)] = (run, n)
        try:
            from jupyter_distributed.worker import guard as _guard
            pid = _guard._made[0] if _guard._made else None
        except ImportError:
            pid = None
        if pid:
            with open(f"/proc/{pid}/schedstat") as f:
                run, _, n = map(int, f.read().split())
            out[("guardian", str(pid))] = (run, n)
        return out
    try:
        report
    except NameError:
        def report(**metrics):
            pass
    _a, _t0 = _snap(), _time.monotonic()
    BODY
    _b, _dt = _snap(), _time.monotonic() - _t0
    _busy = {}
    for (kind, tid), (run, n) in _b.items():
        run0, n0 = _a.get((kind, tid), (0, 0))
        cpu, wakes = _busy.get(kind, (0.0, 0.0))
        _busy[kind] = (cpu + (run - run0) / 1e6 / _dt, wakes + (n - n0) / _dt)
""")

CELLS = {
    "sleep": "_time.sleep(SECONDS)",
    "report": textwrap.dedent("""
        _stop, _i = _time.monotonic() + SECONDS, 0
        while _time.monotonic() < _stop:
            report(loss=0.5, step=_i)
            _i += 1
            _time.sleep(0.005)
    """),
    "print": textwrap.dedent("""
        _stop, _i = _time.monotonic() + SECONDS, 0
        while _time.monotonic() < _stop:
            print(f"step {_i} loss 0.5")
            _i += 1
            _time.sleep(0.05)
    """),
}
KINDS = ("main", "added", "guardian")


def cell(kind: str, seconds: float) -> str:
    body = CELLS[kind].strip().replace("SECONDS", repr(seconds))
    return MEASURE.replace("BODY", body)


def busy(system: JD | IPP, code: str) -> list[dict[str, tuple[float, float]]]:
    """Run the measuring cell on every rank; what each measured."""
    if isinstance(system, JD):
        system.cell(code, "--pull _busy")
        return list(system.ip.user_ns["_busy"])
    system.dv.execute(code, block=True)
    return list(system.dv.pull("_busy", block=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--systems", nargs="+", default=["ours", "ipyparallel"])
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    args = parser.parse_args()
    use_checkout()
    ip, _tmp = bench_shell("jd-bench-busy-")
    systems: dict[str, type[JD] | type[IPP]] = {"ours": JD, "ipyparallel": IPP}
    rows: dict[tuple[str, str], dict[str, list[tuple[float, float]]]] = {}
    for name in args.systems:
        system = systems[name](ip, args.ranks)
        system.start()
        try:
            for _ in range(args.repeat):
                for kind in args.cells:
                    for measured in busy(system, cell(kind, args.seconds)):
                        row = rows.setdefault((name, kind), {k: [] for k in KINDS})
                        for k in KINDS:
                            row[k].append(tuple(measured.get(k, (0.0, 0.0))))
        finally:
            system.stop()
    print(
        f"\n{args.ranks} ranks, cells of {args.seconds:g} s, {args.repeat} repeat(s); per rank, "
        f"median: CPU ms/s, wake-ups/s ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n"
    )
    print("| system | cell | main thread (the user's code) | other threads | guardian |")
    print("|---|---|---|---|---|")
    for (name, kind), row in rows.items():
        cells = []
        for k in KINDS:
            if name != "ours" and k == "guardian":
                cells.append("–")
                continue
            cpu = statistics.median(c for c, _ in row[k])
            wakes = statistics.median(w for _, w in row[k])
            cells.append(f"{cpu:.2f} ms/s, {wakes:.1f}/s")
        print(f"| {name} | {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
