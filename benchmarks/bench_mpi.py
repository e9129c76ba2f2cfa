"""The mpi backend next to local: warm round trip of a trivial cell, cold start, and how long
a dead rank takes to be reported. Run: ``python benchmarks/bench_mpi.py [--runs N]``.

Round trip: from ``Session.run_cell`` to its return, for a cell ``pass`` on ranks that are
already up (median and p90 over N runs). Cold start: the first cell, including starting the ranks.
Dead rank: from a rank's ``os._exit(3)`` (its own timestamp) to the failure's timestamp.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_distributed.backends.mpi.options import MpiOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.store import Store
from jupyter_distributed.interface import RunOutcome
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

DIE = """
import os, time
if rank == 1:
    open({marker!r}, 'w').write(repr(time.time()))
    os._exit(3)
time.sleep(60)
"""


def _run(session: Session, spec: Spec, code: str) -> RunOutcome:
    return session.run_cell(
        spec, code, {}, view=CellView(out=io.StringIO(), err=io.StringIO(), quiet=True)
    )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(backend: str, ranks: int, runs: int, workdir: Path) -> dict[str, float]:
    store = Store(workdir / f"{backend}-{ranks}.sqlite")
    session = Session(store)
    spec = Spec(
        layout=Layout(procs_per_node=ranks),
        backend=backend,
        options=MpiOptions() if backend == "mpi" else None,
    )
    try:
        t0 = time.perf_counter()
        _run(session, spec, "pass")
        cold = time.perf_counter() - t0
        for _ in range(5):
            _run(session, spec, "pass")
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            _run(session, spec, "pass")
            times.append(time.perf_counter() - t0)
        marker = workdir / f"died-{backend}-{ranks}"
        try:
            _run(session, spec, DIE.format(marker=str(marker)))
            detect = float("nan")
        except RunFailed as failed:
            detect = failed.root.t - float(marker.read_text())
    finally:
        session.shutdown()
        store.close()
    return {
        "median": statistics.median(times),
        "p90": _percentile(times, 0.9),
        "cold": cold,
        "detect": detect,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    print(f"warm round trip of a trivial cell over {args.runs} runs (ms)")
    print(
        f"{'backend':<8} {'ranks':>5} {'median':>8} {'p90':>8} {'cold start':>11} {'dead rank':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            for backend in ("local", "mpi"):
                m = measure(backend, ranks, args.runs, Path(tmp))
                print(
                    f"{backend:<8} {ranks:>5} {m['median'] * 1e3:>8.2f} {m['p90'] * 1e3:>8.2f} "
                    f"{m['cold'] * 1e3:>11.0f} {m['detect'] * 1e3:>10.0f}"
                )


if __name__ == "__main__":
    main()
