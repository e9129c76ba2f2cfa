"""A hang, a stop and a dead node at thousands of ranks, with fake ranks (issue 26's column).

    PYTHONPATH=python python benchmarks/bench_faults.py [--ranks 1000 10000] [--nodes 8]
        [--mode relay|tree] [--helpers 8]

The kernel is real (an IPython shell with ``%%distributed``), and so are the node relays (and,
with ``--mode tree``, the aggregators above them); the ranks are ``fake_ranks.py``'s, each
helper serving whole nodes (``bench_scale.py``'s machinery). Per rank count, on one clock:

- **stop**: ``%distributed stop`` returning, and every helper and relay process gone;
- **hang diagnosis** (a fresh cluster): a cell ``hang`` (rank 0 answers, the others hold it,
  as ranks in ``time.sleep`` would) under ``--timeout 3``: from the timeout firing to the
  diagnosis line under the cell (every rank's stacks asked through the relays, answered,
  grouped alike);
- **dead node named**: a fresh cluster runs ``sleep`` (no rank answers); one relay is
  SIGKILLed; from the kill to the line naming its node and ranks. (A fake rank has no process of
  its own, so a single rank's death is not what this measures; a relay's is: its node's ranks
  are cut off, and the kernel names them.)

Memory: a fake rank ~0.5 MB, a relay ~30 MB: 10,000 ranks on 8 nodes ~5.5 GB.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_hang import DIAGNOSIS, Stamped, run  # noqa: E402
from bench_scale import FakeRanks  # noqa: E402
from common import bench_shell, rank_table  # noqa: E402


class Tracked(FakeRanks):
    """:class:`FakeRanks` that keeps its last instance (its helpers' and relays' processes)."""

    last: Tracked | None = None

    def __init__(self, plan: Any, boot_env: dict[str, str]) -> None:
        super().__init__(plan, boot_env)
        Tracked.last = self

    def pids(self) -> list[int]:
        relays = self.relays._all() if self.relays is not None else []
        return [p.pid for p in (*self.procs, *relays)]


def alive(pids: list[int]) -> bool:
    return any(Path(f"/proc/{p}").exists() for p in pids)


def diagnosis(err: Stamped, after: float) -> str:
    """The diagnosis's lines under the cell (the first few)."""
    lines = [line for t, line in err.lines if t >= after and line.strip()]
    start = next((i for i, line in enumerate(lines) if DIAGNOSIS in line), None)
    return " / ".join(lines[start : start + 4]) if start is not None else "none"


def one(ip: Any, err: Stamped, n: int, nodes: int, folder: Path) -> dict[str, str]:
    folder.mkdir()
    Tracked.folder = folder
    shape = f"--nodes {nodes} --procs-per-node {n // nodes} --oversubscribe --quiet"
    t0 = time.monotonic()
    if not ip.run_cell(f"%%distributed {shape}\nNone").success:
        raise RuntimeError(f"{n} fake ranks did not start")
    start = time.monotonic() - t0
    pids = Tracked.last.pids() if Tracked.last else []
    t2 = time.monotonic()
    ip.run_line_magic("distributed", "stop")
    stop = time.monotonic() - t2
    while alive(pids) and time.monotonic() - t2 < 60:
        time.sleep(0.005)
    gone = time.monotonic() - t2
    ip.run_cell(f"%%distributed {shape}\nNone")  # a fresh cluster
    err.lines.clear()
    t1 = time.monotonic()
    run(ip, f"{shape} --timeout 3", "hang")
    fired = t1 + 3.0
    seen = err.first(DIAGNOSIS, fired)
    text = diagnosis(err, fired)
    with contextlib.suppress(Exception):  # (lost where the ranks did not yield in time)
        ip.run_line_magic("distributed", "stop")
    ip.run_cell(f"%%distributed {shape}\nNone")  # a fresh cluster
    killed: list[float] = []
    relays = Tracked.last.relays if Tracked.last else None
    victim = relays.procs[nodes - 1].pid if relays is not None else 0

    def kill() -> None:
        killed.append(time.monotonic())
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)

    timer = threading.Timer(1.0, kill)
    err.lines.clear()
    timer.start()
    run(ip, shape, "sleep")
    timer.join()
    named = err.first(f"relay of node {nodes - 1}", killed[0]) if killed else None
    with contextlib.suppress(Exception):
        ip.run_line_magic("distributed", "stop")
    return {
        "start (connect + hello + first cell)": f"{start:.1f} s",
        "hang: timeout → diagnosis shown": "not shown"
        if seen is None
        else f"{(seen - fired) * 1e3:,.0f} ms",
        "the diagnosis (first lines)": text[:300],
        "stop: stop() returned / every helper and relay gone": (
            f"{stop * 1e3:,.0f} / {gone * 1e3:,.0f} ms"
        ),
        "dead node named (relay SIGKILLed → the line naming it)": (
            "not named" if named is None else f"{(named - killed[0]) * 1e3:,.0f} ms"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--mode", choices=("relay", "tree"), default="relay")
    parser.add_argument("--helpers", type=int, default=8)
    args = parser.parse_args()
    import jupyter_distributed.backends.local.backend as local

    Tracked.helpers, Tracked.whole_nodes = args.helpers, True
    local.LocalProcesses = Tracked  # type: ignore[misc,assignment]
    ip, tmp = bench_shell("jd-faults-")
    ip.run_line_magic("config", f"Distributed.max_world_size = {max(args.ranks)}")
    ip.run_line_magic(
        "config", f"Distributed.relays = {'always' if args.mode == 'relay' else 'tree'!r}"
    )
    err = Stamped(sys.stderr)
    real_err, sys.stderr = sys.stderr, err  # type: ignore[assignment]
    load0 = os.getloadavg()[0]
    rows: dict[int, dict[str, str]] = {}
    try:
        for n in args.ranks:
            rows[n] = one(ip, err, n, args.nodes, tmp / f"faults-{n}")
            print(n, rows[n], file=real_err, flush=True)
    finally:
        sys.stderr = real_err
    print(
        f"{os.cpu_count()} CPUs, load {load0:.1f} → {os.getloadavg()[0]:.1f}; fake ranks in "
        f"{args.helpers} helpers (whole nodes each), {args.nodes} nodes, mode {args.mode}"
    )
    rank_table(rows, args.ranks)


if __name__ == "__main__":
    main()
