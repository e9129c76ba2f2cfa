"""Node relays on the local backend: a trivial cell with and without a relay per node, and how
soon a killed relay is named as a dead node.

    python benchmarks/bench_relays.py [--ranks 4 8] [--cells 40] [--rounds 3]

Each configuration is a live cluster of real ranks; the rounds alternate between relays
``auto`` (the ranks talk to the kernel) and ``always`` (through one relay process per node), so
a slow moment of a shared machine falls on both. Kernel CPU is this process's CPU time (all of
its threads, the I/O thread's verifying and signing included) per cell. Prints a table.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import use_checkout  # noqa: E402

use_checkout()

from jupyter_distributed.display import CellView  # noqa: E402
from jupyter_distributed.errors import RunFailed  # noqa: E402
from jupyter_distributed.history.store import Store  # noqa: E402
from jupyter_distributed.layout import Layout  # noqa: E402
from jupyter_distributed.session import Session  # noqa: E402
from jupyter_distributed.spec import Spec  # noqa: E402


def _spec(ranks: int, relays: str) -> Spec:
    return Spec(layout=Layout(nodes=2, procs_per_node=ranks // 2), relays=relays)


def _cells(session: Session, spec: Spec, cells: int) -> tuple[list[float], float]:
    """Wall ms of each trivial cell, and the kernel's CPU ms per cell."""
    view = CellView(out=io.StringIO(), err=io.StringIO())
    session.run_cell(spec, "x = 1", {}, view=view)  # (warm)
    walls = []
    cpu0 = time.process_time()
    for _ in range(cells):
        t = time.perf_counter()
        session.run_cell(spec, "x = 1", {}, view=view)
        walls.append((time.perf_counter() - t) * 1000)
    return walls, (time.process_time() - cpu0) * 1000 / cells


def _killed_relay_named(session: Session, spec: Spec) -> float:
    """ms from SIGKILL of node 0's relay, mid-cell, to the cell's failure naming it."""
    (live,) = session.live.values()
    relay = live.cluster.processes.relays.procs[0]  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as directory:  # (removed with its marker)
        return _named_after_kill(session, spec, relay.pid, Path(directory) / "started")


def _named_after_kill(session: Session, spec: Spec, pid: int, marker: Path) -> float:
    killed_at: list[float] = []

    def kill() -> None:
        while not marker.exists():
            time.sleep(0.005)
        killed_at.append(time.perf_counter())
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill, daemon=True).start()
    code = f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(60)"
    try:
        session.run_cell(spec, code, {}, view=CellView(out=io.StringIO(), err=io.StringIO()))
    except RunFailed as exc:
        if exc.root.kind != "relay":
            raise SystemExit(f"not a dead node: {exc.root.summary}") from None
        return (time.perf_counter() - killed_at[0]) * 1000
    raise AssertionError("the cell did not fail")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "history.sqlite")
        session = Session(store)
        try:
            for ranks in args.ranks:
                walls: dict[str, list[float]] = {"auto": [], "always": []}
                cpus: dict[str, list[float]] = {"auto": [], "always": []}
                peers: dict[str, int | None] = {}
                for _ in range(args.rounds):
                    for relays in ("auto", "always"):
                        spec = _spec(ranks, relays)
                        w, c = _cells(session, spec, args.cells)
                        walls[relays] += w
                        cpus[relays].append(c)
                        (live,) = session.live.values()
                        peers[relays] = live.cluster.peer_count()
                        session.stop()
                session.run_cell(_spec(ranks, "always"), "x = 1", {}, view=CellView())
                named = _killed_relay_named(session, _spec(ranks, "always"))
                session.stop()
                for relays in ("auto", "always"):
                    q = statistics.quantiles(walls[relays], n=10)
                    rows.append(
                        (
                            ranks, relays, peers[relays], statistics.median(walls[relays]),
                            q[-1], statistics.median(cpus[relays]),
                            f"{named:.0f}" if relays == "always" else "-",
                        )
                    )  # fmt: skip
        finally:
            session.shutdown()
            store.close()
    print(
        f"{'ranks':>5} {'relays':>7} {'kernel conns':>12} {'cell p50 ms':>11} "
        f"{'p90 ms':>7} {'kernel CPU ms/cell':>18} {'killed relay named ms':>21}"
    )
    for ranks, relays, peers_, p50, p90, cpu, named_ in rows:
        print(
            f"{ranks:>5} {relays:>7} {peers_!s:>12} {p50:>11.2f} {p90:>7.2f} {cpu:>18.2f} "
            f"{named_:>21}"
        )


if __name__ == "__main__":
    main()
