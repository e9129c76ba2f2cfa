"""The kernel at rest on the default local cluster (issue 26): real ranks, no relays.

    PYTHONPATH=python python benchmarks/local_rest.py [--ranks 2 8] [--idle 10] [--repeats 1]
        [--cells 0] [--relays always]

Per size: a local cluster of N real ranks on one node (``Distributed.relays`` "never", the
kernel as the relay) runs ``pass``, rests a second, then S seconds are measured with no cell:
this process's CPU per second (``getrusage``), each thread's CPU and wake-ups per second (the
times the scheduler put it on a core, ``/proc/self/task/*/schedstat``), and what the I/O
thread's ticks did (their count and CPU by ``time.thread_time``: the tick, its look at the
controls, its look at the processes, the pings). With ``--cells N``, then N trivial cells
(``pass``) one after the other, each after a rest of 0.6 s (the I/O thread at its pace between
cells): per cell, the same figures (``per cell``), and the cells' walls. ``--relays always``:
the same cluster behind a node relay, for comparison. Runs the code ``PYTHONPATH`` names (an
A/B runs this same script with each arm's ``python/`` first).
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


class Window:
    """What this process spent from its start to :meth:`row` (``per``: divided by it)."""

    def __init__(self) -> None:
        self.spent, self.calls = dict(SPENT), dict(CALLS)
        self.threads, self.usage = threads(), resource.getrusage(resource.RUSAGE_SELF)

    def row(self, per: float, unit: str) -> dict[str, float]:
        t1, u1, u0 = threads(), resource.getrusage(resource.RUSAGE_SELF), self.usage
        cpu = u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime
        row = {f"process ms/{unit}": cpu * 1e3 / per}
        for name, (c, n) in t1.items():
            c0, n0 = self.threads.get(name, (0.0, 0))
            if name in ("main", "io") or c - c0 > 1e-5 * per:
                row[f"{name} ms/{unit}"] = (c - c0) * 1e3 / per
                row[f"{name} wakes/{unit}"] = (n - n0) / per
        for label in SPENT:
            row[f"{label}/{unit}"] = (CALLS[label] - self.calls.get(label, 0)) / per
            row[f"{label} ms/{unit}"] = (SPENT[label] - self.spent.get(label, 0.0)) * 1e3 / per
        return row


def measure(ranks: int, seconds: float, cells: int, folder: Path, relays: str) -> dict[str, float]:
    store = Store(folder / f"history-{ranks}.sqlite")
    session = Session(store)
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=ranks), relays=relays)
    view = CellView(out=out, err=out)
    try:
        session.run_cell(spec, "pass", {}, view=view)
        (live,) = session.live.values()
        assert bool(live.cluster.relays) == (relays == "always"), "relays or not as asked"
        time.sleep(1.0)
        window, w0 = Window(), time.perf_counter()
        time.sleep(seconds)
        row = window.row(time.perf_counter() - w0, "s")
        walls: list[float] = []
        for _ in range(cells):
            time.sleep(0.6)  # (at rest: the I/O thread at its pace between cells)
            window, w0 = Window(), time.perf_counter()
            session.run_cell(spec, "pass", {}, view=view)
            walls.append((time.perf_counter() - w0) * 1e3)
            for key, value in window.row(1.0, "cell").items():
                row[key] = row.get(key, 0.0) + value / cells
        if walls:
            row["cell wall ms (median)"] = statistics.median(walls)
    finally:
        session.shutdown()
        store.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--idle", type=float, default=10.0, metavar="S", help="seconds at rest")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cells", type=int, default=0, help="trivial cells after the rest")
    parser.add_argument("--relays", choices=("never", "always"), default="never")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="jd-local-rest-"))
    try:
        for ranks in args.ranks:
            rows = [
                measure(ranks, args.idle, args.cells, folder, args.relays)
                for _ in range(args.repeats)
            ]
            cells = f"relays {args.relays}, {args.cells} cells"
            print(f"{ranks} local ranks: {args.idle:g} s at rest (/s), {cells}")
            for key in sorted({k for r in rows for k in r}):
                values = [r.get(key, 0.0) for r in rows]
                each = " ".join(f"{v:.3f}" for v in values)
                print(f"  {key:24} {statistics.median(values):8.3f}   ({each})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
