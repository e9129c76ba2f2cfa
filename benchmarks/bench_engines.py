"""The slurm and ray backends on real engines, next to local: engine up, cold start, warm round
trip, dead rank, stop.

    python benchmarks/bench_engines.py [--backends local slurm ray] [--runs 30]
                                       [--out benchmarks/RESULTS.md]

Needs root (network namespaces), Slurm's Debian packages and ``ray[default]``; a backend whose
engine is missing is skipped with the reason. The engines are the test suite's
(``tests/python/engines``): munged, slurmctld and two ``slurmd -N`` nodes, or a Ray head, each in
a network namespace with loopback only, started here and stopped by PID (never ``ray stop``).
Cells run through one in-process IPython shell and ``%%distributed``; the shell's main thread
enters the engine's namespace with its environment, as the ``in_slurm``/``in_ray`` fixtures do.

Measured per backend:

- engine up: the daemons started, until ready (Slurm: both nodes idle; Ray: "Ray runtime
  started");
- cold start → first cell done: no cluster, then a cell ``pass`` at N=2 (and 2 nodes × 2 for
  slurm); the first one (for ray it connects the driver, ``ray.init``) and the median of 3 more;
- warm round trip: ``pass`` on ranks that are up, median and p90 of ``--runs``;
- dead rank: rank 1 writes ``time.time()`` and calls ``os._exit(3)``; until the line naming
  rank 1 is written under the cell;
- stop: ``%distributed stop`` until it returns (slurm: and until ``squeue`` is empty), then the
  engine's daemons stopped by PID.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests.python.engines
SOURCE = str(HERE.parent / "python")
sys.path.insert(0, SOURCE)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))

from bench_core import machine, write_section  # noqa: E402
from common import capture, median, pct  # noqa: E402
from drivers import DIE_CELL, CellError, wait_for_file  # noqa: E402

from jupyter_distributed.backends.mpi.backend import descendants  # noqa: E402

SECTION = "## Slurm and Ray engines against local (`benchmarks/bench_engines.py`)"
LAYOUTS = {"local": ["-n 2"], "slurm": ["-n 2", "--nodes 2 --procs-per-node 2"], "ray": ["-n 2"]}


class Engine:
    """One engine's daemons (none for local): started by ``up()``, entered by ``entered()``."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.root = name, root
        self.handle: Any = None  # SlurmCluster or RayHead once up
        self.pids: set[int] = set()

    def missing(self) -> str:
        if self.name == "local":
            return ""
        from tests.python.engines import ray, slurm

        return slurm.missing() if self.name == "slurm" else ray.missing()

    def up(self) -> float:
        from tests.python.engines import ray, slurm

        t0 = time.perf_counter()
        if self.name == "slurm":
            self.handle = slurm.SlurmCluster(self.root)
            self.pids = {p.pid for p in self.handle.procs}
        elif self.name == "ray":
            self.handle = ray.RayHead(self.root)
            self.pids = {self.handle.proc.pid}
        return time.perf_counter() - t0

    @contextmanager
    def entered(self) -> Iterator[None]:
        if self.handle is None:
            yield
            return
        saved = dict(os.environ)
        for key in [k for k in os.environ if k.startswith("SLURM_")]:
            del os.environ[key]
        if self.name == "ray":
            os.environ["RAY_ADDRESS"] = self.handle.address
        os.environ.update(self.handle.env)
        try:
            with self.handle.ns.entered():
                yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def idle(self) -> None:
        if self.name == "slurm":
            self.handle.wait_idle()

    def everything(self) -> set[int]:
        """The daemons and every process below them, as now."""
        return {p for d in self.pids for p in (d, *descendants(d))}

    def down(self) -> float:
        t0 = time.perf_counter()
        if self.name == "ray":
            import ray

            with self.handle.ns.entered():
                ray.shutdown()  # our driver, connected by the first cell
        if self.handle is not None:
            self.handle.stop()
        return time.perf_counter() - t0


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.add(pid)
    return out


class Cells:
    """``%%distributed`` cells through one IPython shell."""

    def __init__(self, ip: Any, backend: str) -> None:
        self.ip, self.backend = ip, backend
        self.session = ip.magics_manager.registry["DistributedMagics"].session

    def cell(self, flags: str, body: str, expect_error: bool = False) -> Any:
        result = self.ip.run_cell(f"%%distributed --backend {self.backend} {flags}\n{body}")
        if not expect_error and not result.success:
            raise CellError(f"{self.backend} {flags}: {result.error_in_exec!r}")
        return result

    def timed(self, fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def cold(self, flags: str, engine: Engine) -> float:
        self.session.stop()
        engine.idle()
        return self.timed(lambda: self.cell(flags, "pass"))

    def dead_rank(self, flags: str, tmp: Path) -> float | None:
        path = tmp / f"exit-{self.backend}-{time.monotonic_ns()}"
        with capture(sys) as (_out, err):
            result = self.cell(flags, DIE_CELL.format(path=str(path), secs=60), expect_error=True)
        exited = wait_for_file(path, 1)
        if result.success or exited is None:
            return None
        shown = [w for line, w, _f in err.lines if "rank 1" in line and w >= exited]
        return shown[0] - exited if shown else None


def measure(ip: Any, engine: Engine, runs: int, tmp: Path) -> dict[str, str]:
    """Every metric of one backend; its engine is stopped by PID whatever happens."""
    row: dict[str, str] = {}
    up = engine.up()
    row["engine up (daemons started → ready)"] = "—" if engine.name == "local" else f"{up:.2f} s"
    started: set[int] = set()
    try:
        with engine.entered():
            try:
                measure_cells(Cells(ip, engine.name), engine, runs, tmp, row)
            finally:
                started = engine.everything()
                ip.run_line_magic("distributed", "stop")  # after a failure: no cluster is left
    finally:
        t0 = time.perf_counter()
        down = engine.down()
        while (left := alive(started)) and time.perf_counter() - t0 < 20:
            time.sleep(0.05)  # Ray's workers leave a moment after the head
        gone = time.perf_counter() - t0
    if engine.name != "local":
        row["engine daemons stopped by PID (→ every process gone)"] = f"{down:.2f} s ({gone:.2f} s)"
    if left:
        raise RuntimeError(f"{engine.name}: processes left running: {sorted(left)}")
    return row


def measure_cells(cells: Cells, engine: Engine, runs: int, tmp: Path, row: dict[str, str]) -> None:
    for flags in LAYOUTS[engine.name]:
        shape = "N=2" if flags == "-n 2" else "2 nodes × 2"
        first = cells.cold(flags, engine)
        again = [cells.cold(flags, engine) for _ in range(3)]
        row[f"cold start → first cell done, {shape}, first"] = f"{first:.2f} s"
        row[f"cold start → first cell done, {shape}, again (median of 3)"] = (
            f"{median(again):.2f} s"
        )
    flags = "-n 2"
    cells.cold(flags, engine)
    for _ in range(3):
        cells.cell(flags, "pass")
    trips = [cells.timed(lambda: cells.cell(flags, "pass")) for _ in range(runs)]
    row[f"warm round trip, N=2 (median / p90 of {runs})"] = (
        f"{median(trips) * 1e3:.1f} / {pct(trips, 90) * 1e3:.1f} ms"
    )
    dead = cells.dead_rank(flags, tmp)
    row["dead rank (`os._exit(3)` on rank 1) → named under the cell"] = (
        "not named" if dead is None else f"{dead * 1e3:.0f} ms"
    )
    cells.cold(flags, engine)
    stop = cells.timed(lambda: cells.ip.run_line_magic("distributed", "stop"))
    text = f"{stop * 1e3:.0f} ms"
    if engine.name == "slurm":
        t0 = time.perf_counter()
        while engine.handle.jobs() and time.perf_counter() - t0 < 30:
            time.sleep(0.02)
        text += f" ({(stop + time.perf_counter() - t0) * 1e3:.0f} ms)"
    row["`%distributed stop` → returned (slurm: → squeue empty)"] = text


def shell(tmp: Path) -> Any:
    """An IPython shell with the extension loaded, its history store in ``tmp``."""
    from IPython.core.interactiveshell import InteractiveShell

    os.environ.setdefault("JUPYTER_DISTRIBUTED_STORE", str(tmp / "h.sqlite3"))
    ip: Any = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_distributed")
    ip.run_cell("raise KeyboardInterrupt")  # IPython's first traceback costs ~0.7 s: not ours
    return ip


def section(
    head: str,
    command: str,
    began: float,
    load0: float,
    note: str,
    measured: dict[str, dict[str, str]],
    after: Sequence[str] = (),
) -> str:
    """A RESULTS.md section: how it was run, the machine and its load, ``note``, then a table
    of ``measured`` (column -> metric -> text; a column without a metric shows it empty)."""
    names = list(measured)
    table = ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    order = max((list(m) for m in measured.values()), key=len, default=[])
    table += [f"| {m} | " + " | ".join(measured[n].get(m, "") for n in names) + " |" for m in order]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            head,
            "",
            f"Run `{command}` on {when}, {time.monotonic() - began:.0f} s.",
            "",
            f"Machine: {machine()}; load average (1 min) {load0:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end.",
            "",
            note,
            *(["", *after] if after else []),
            "",
            *table,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", nargs="+", default=["local", "slurm", "ray"])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jd-bench-engines-"))
    ip = shell(tmp)
    began, load0 = time.monotonic(), os.getloadavg()[0]
    measured: dict[str, dict[str, str]] = {}  # backend -> metric -> text
    skipped: list[str] = []
    try:
        for name in args.backends:
            # short: Ray's socket paths under it must stay within 107 bytes
            root = Path(tempfile.mkdtemp(prefix=f"jd-{name}-"))
            engine = Engine(name, root)
            try:
                if reason := engine.missing():
                    skipped.append(f"{name}: {reason}")
                    continue
                measured[name] = measure(ip, engine, args.runs, tmp)
                for metric, text in measured[name].items():
                    print(f"{name:<6} {metric}: {text}", file=sys.stderr)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        ip.run_line_magic("distributed", "stop")
        shutil.rmtree(tmp, ignore_errors=True)
    note = (
        "The test suite's engines (`tests/python/engines`), in network namespaces on "
        "loopback: munged, slurmctld and two `slurmd -N` nodes; a Ray head (4 CPUs). Cells "
        "through one IPython shell and `%%distributed --backend NAME` (see the script's "
        "docstring for each metric)."
    )
    text = section(
        SECTION, "python benchmarks/bench_engines.py", began, load0, note, measured,
        [f"Skipped: {s}." for s in skipped],
    )  # fmt: skip
    print(text)
    write_section(args.out, text)


if __name__ == "__main__":
    main()
