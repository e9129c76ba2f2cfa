"""The kernel at rest on the default local cluster (issue 26): real ranks, no relays.

    PYTHONPATH=python python benchmarks/local_rest.py [--ranks 2 8] [--idle 10] [--repeats 1]

Per size: a local cluster of N real ranks on one node (``Distributed.relays`` "never", the
kernel as the relay) runs ``pass``, rests a second, then S seconds are measured with no cell:
this process's CPU per second (``getrusage``), each thread's CPU and wake-ups per second (the
times the scheduler put it on a core, ``/proc/self/task/*/schedstat``), and what the I/O
thread's ticks did (their count and CPU by ``time.thread_time``: the tick, its look at the
controls, its look at the processes, the pings). Runs the code ``PYTHONPATH`` names (an A/B
runs this same script with each arm's ``python/`` first).
"""

from __future__ import annotations

import argparse
import io
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout

use_checkout()
from jupyter_distributed.cluster import outbox, processwatch, router  # noqa: E402
from jupyter_distributed.display import CellView  # noqa: E402
from jupyter_distributed.history.store import Store  # noqa: E402
from jupyter_distributed.layout import Layout  # noqa: E402
from jupyter_distributed.session import Session  # noqa: E402
from jupyter_distributed.spec import Spec  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def timed(owner: Any, name: str, label: str) -> None:
    """``owner.name`` with its calls and its thread's CPU time counted under ``label``."""
    real: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real(*args, **kwargs)
        finally:
            SPENT[label] += time.thread_time() - t0
            CALLS[label] += 1

    setattr(owner, name, wrapper)


timed(router.Router, "_on_tick", "tick")
timed(processwatch.ProcessWatch, "_take_controls", "controls' look")
timed(processwatch.ProcessWatch, "_watch", "processes' look")
timed(outbox.Outbox, "ping", "pings")


def threads() -> dict[str, tuple[float, int]]:
    """(seconds of CPU, time slices) of each thread of this process by name (the I/O thread
    ``jd-c-…`` as "io"; ZeroMQ's and SQLite's by ``comm``, alike names summed)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    names[threading.main_thread().native_id] = "main"
    out: dict[str, tuple[float, int]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            ns, _, slices = (int(x) for x in (task / "schedstat").read_text().split())
            name = names.get(int(task.name)) or (task / "comm").read_text().strip()
        except (OSError, ValueError):  # (a thread that ended)
            continue
        name = "io" if name.startswith("jd-c-") else name
        cpu, n = out.get(name, (0.0, 0))
        out[name] = (cpu + ns / 1e9, n + slices)
    return out


def at_rest(ranks: int, seconds: float, folder: Path) -> dict[str, float]:
    store = Store(folder / f"history-{ranks}.sqlite")
    session = Session(store)
    try:
        out = io.StringIO()
        spec = Spec(layout=Layout(nodes=1, procs_per_node=ranks), relays="never")
        session.run_cell(spec, "pass", {}, view=CellView(out=out, err=out))
        (live,) = session.live.values()
        assert not live.cluster.relays, "the cluster has relays"
        time.sleep(1.0)
        spent, calls = dict(SPENT), dict(CALLS)
        t0, u0 = threads(), resource.getrusage(resource.RUSAGE_SELF)
        w0 = time.perf_counter()
        time.sleep(seconds)
        wall = time.perf_counter() - w0
        t1, u1 = threads(), resource.getrusage(resource.RUSAGE_SELF)
        spent1, calls1 = dict(SPENT), dict(CALLS)
    finally:
        session.shutdown()
        store.close()
    cpu = u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime
    row = {"process ms/s": cpu * 1e3 / wall}
    for name, (c, n) in t1.items():
        c0, n0 = t0.get(name, (0.0, 0))
        if name in ("main", "io") or c - c0 > 1e-5 * wall:
            row[f"{name} ms/s"] = (c - c0) * 1e3 / wall
            row[f"{name} wakes/s"] = (n - n0) / wall
    for label in spent1:
        row[f"{label}/s"] = (calls1[label] - calls.get(label, 0)) / wall
        row[f"{label} ms/s"] = (spent1[label] - spent.get(label, 0.0)) * 1e3 / wall
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--idle", type=float, default=10.0, metavar="S", help="seconds at rest")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="jd-local-rest-"))
    try:
        for ranks in args.ranks:
            rows = [at_rest(ranks, args.idle, folder) for _ in range(args.repeats)]
            print(f"{ranks} local ranks, no relays, {args.idle:g} s at rest (per second):")
            for key in sorted({k for r in rows for k in r}):
                values = [r.get(key, 0.0) for r in rows]
                each = " ".join(f"{v:.3f}" for v in values)
                print(f"  {key:24} {statistics.median(values):8.3f}   ({each})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
