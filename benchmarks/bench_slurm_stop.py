"""Where a Slurm stop's time goes with node relays: from the stop's start, when the ranks'
``srun`` ends, when the relays' ``srun`` ends, when the stop returns and when ``squeue`` is
empty (issue 26: a relay leaves on its own once its ranks have).

    python benchmarks/bench_slurm_stop.py [--nodes 64] [--rounds 2] [--tree ROOT]

``--tree``: another checkout's root (its ``python/`` and ``tests/``, e.g. older code exported
with ``git archive``); by default this one. The test suite's Slurm harness
(``tests/python/engines/slurm.py``) with ``--nodes`` ``slurmd -N`` daemons on this machine, one
rank per node, relays on; every daemon is stopped by PID. Prints one line per round: a shape,
not a claim (every slurmd, rank and relay shares this machine's cores).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def _ended(proc: Any, ends: dict[str, float], name: str) -> threading.Thread:
    def watch() -> None:
        while proc.poll() is None:
            time.sleep(0.005)
        ends[name] = time.perf_counter()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.tree.resolve()
    sys.path[:0] = [str(root), str(root / "python")]
    os.environ["PYTHONPATH"] = str(root / "python")
    from tests.python.engines import slurm

    from jupyter_distributed.display import CellView
    from jupyter_distributed.history.store import Store
    from jupyter_distributed.layout import Layout
    from jupyter_distributed.session import Session
    from jupyter_distributed.spec import Spec

    if reason := slurm.missing():
        sys.exit(f"bench_slurm_stop: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="jd-bench-stop-"))
    (tmp / "slurm").mkdir()
    cluster = slurm.SlurmCluster(tmp / "slurm", nodes=args.nodes)
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        del os.environ[key]
    os.environ["SLURM_CONF"] = str(cluster.conf)
    layout = Layout(nodes=args.nodes, procs_per_node=1)
    spec = Spec(layout=layout, backend="slurm", relays="auto")
    try:
        with cluster.ns.entered():
            store = Store(tmp / "history.sqlite")
            session = Session(store)
            for _ in range(args.rounds):
                session.run_cell(spec, "pass", {}, view=CellView(out=io.StringIO()))
                procs = session.live["slurm"].cluster.processes  # type: ignore[attr-defined]
                ends: dict[str, float] = {}
                watches = [
                    _ended(procs.proc, ends, "ranks"),
                    _ended(procs.relays.launcher.proc, ends, "relays"),
                ]
                t0 = time.perf_counter()
                session.stop()
                returned = time.perf_counter() - t0
                for watch in watches:
                    watch.join()
                while cluster.jobs() and time.perf_counter() - t0 < 60:
                    time.sleep(0.02)
                empty = time.perf_counter() - t0
                print(
                    f"{args.nodes} nodes: ranks' srun ended {(ends['ranks'] - t0) * 1e3:.0f} ms, "
                    f"relays' srun {(ends['relays'] - t0) * 1e3:.0f} ms, stop returned "
                    f"{returned * 1e3:.0f} ms, squeue empty {empty * 1e3:.0f} ms "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
            session.shutdown()
            store.close()
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
