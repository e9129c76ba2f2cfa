"""The control plane at hundreds to thousands of ranks, with fake ranks (issue 26).

The kernel is real: an IPython shell with ``%%distributed`` loaded runs ``%%distributed -n N
--oversubscribe`` on the local backend (session, recorder, history store, router and its
ipc control channel and cell sockets, as in a notebook's kernel). Only the ranks are fake: the
local backend's rank processes are replaced by ``--helpers`` processes of ``fake_ranks.py``, each
serving many ranks that speak the real protocol (signed ``Stage``/``Hello``, ``Execute`` answered
with ``Done``). Per rank count it prints:

- **connect + hello**: from the first helper beginning to connect (its imports done, so "after
  the processes exist") to the kernel having every rank's hello (``wait_ready`` returning);
- **kernel CPU per trivial cell**: user + system time of the whole kernel process (every
  thread: the router's, ZeroMQ's) per trivial cell (``--code``: ``pass``, which the fake ranks
  answer with a value each, or ``None``, which they answer without one, as a real rank answers
  ``pass``), median and p90 over ``--cells`` cells;
- **kernel CPU per cluster cell over the whole loop**: the same process's CPU from the loop's
  start to 0.2 s after its last cell, less the do-nothing cells', per cluster cell (measured
  and unmeasured alike), a mean: it counts what runs between the cells (heartbeats, a record
  written after its cell, the rest's ticks), which the median above does not see;
- **trivial cell wall time** (median and p99: of up to 50 ``--cells``, the p99 is the
  slowest), which here shares 2 cores with the helpers: a shape only;
- **kernel descriptors** with the cluster up (``/proc/self/fd``);
- **IPython's own CPU per do-nothing cell magic between these cells**: a cell of a cell magic
  that returns at once, run after each measured trivial cell (which itself follows an
  unmeasured one, so that every measured cell follows a cluster's cell, caches as cold): the
  floor under the kernel's CPU per cell that any cell magic pays, not ours (not subtracted
  from the figure above; ``--no-floor`` leaves it out, and then every cell is measured);
- and, under the table, the same do-nothing cell back to back, caches hot.

``--floor`` has every other measured cell followed by the floor's cell instead of the do-nothing
one (``cellfloor.py``): only the work any implementation must do for a trivial cell (one signed
header out, one signed answer checked, the history's rows of the cell in one transaction), on
the main thread, in the same cold caches: what is above it in the kernel's figure is ours.
``--floor-hold`` is ``--floor`` with the floor's peer answering only after the wall of the
measured cell before it, both CPUs kept busy over buffers meanwhile (as the fakes, relays and
aggregators keep them while a real cell runs): the kernel then meets the answer in caches as cold
as a real cell's wall leaves them, which on 2 shared cores is part of the kernel's figure.
``--pin`` puts the kernel on the first CPU and the fakes, relays and aggregators on the others,
as the ranks and relays of a cluster run on other hosts than the kernel's.

``--mode`` picks the topology: ``star`` (the kernel holds every rank's connections),
``relay`` (``Distributed.relays = "always"``: ``--nodes`` real relay processes,
``python -m jupyter_distributed.cluster.relay``, between the fake ranks and the kernel; the
ranks' ends of a cell come as one reduction per relay) and ``tree`` (``Distributed.relays =
"tree"``: the same relays behind about √nodes aggregators, ``python -m
jupyter_distributed.cluster.aggregator``, the first of them the root the others dial where
there are several, so the kernel holds one connection; the figures add the kernel's peers).
Usage: ``PYTHONPATH=python python benchmarks/bench_scale.py [--ranks 100 300 1000] [--cells 30]
[--helpers 4] [--nodes 4] [--mode star relay tree] [--code pass] [--floor] [--floor-hold]
[--pin]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import bench_shell, median, pct, use_checkout  # noqa: E402

MODES = ("star", "relay", "tree")
CODE = ["pass"]  # the trivial cell (--code)
QUIET = [" --quiet"]  # (--shown: "", the cell's view shows what the ranks write, by default)
FLOOR = [True]  # (--no-floor: no do-nothing cell between the cluster's, see cluster())
#: A cell of a cell magic that does nothing (registered by main): IPython's own work on a cell.
NOTHING = "%%jd_bench_nothing --oversubscribe --quiet\npass"
#: A cell of the floor's magic (--floor, see cellfloor.py): the necessary work alone.
FLOOR_CELL = "%%jd_bench_floor --oversubscribe --quiet\nNone"
FLOORS: list[Any] = []  # (--floor: the Floor)
HOLD = [False]  # (--floor-hold: the floor's peer answers after the last cell's wall, cores busy)


class FakeRanks:
    """The local backend's ``LocalProcesses``, with helper processes of fake ranks instead (and
    the real node relays, where the cluster has them)."""

    helpers = 4
    nodes = 4  # (--mode relay: nodes, each behind its relay)
    whole_nodes = False  # (--whole-nodes: a helper serves whole nodes, not every helpers-th rank)
    pidfds = False  # (--pidfds: a pidfd per helper, as for ranks on the kernel's host)
    others_cpus: set[int] | None = None  # (--pin: the CPUs the fakes, relays and aggregators get)
    folder = Path()
    script = HERE / "fake_ranks.py"  # (--fakes: another checkout's, for an A/B of the fakes)
    last: FakeRanks | None = None  # the latest instance (its processes' CPU is read)

    def __init__(self, plan: Any, boot_env: dict[str, str]) -> None:
        mine = os.sched_getaffinity(0)
        if self.others_cpus is not None:  # (children inherit the starting thread's CPUs)
            os.sched_setaffinity(0, self.others_cpus)
        try:
            self._start(plan, boot_env)
        finally:
            os.sched_setaffinity(0, mine)

    def _start(self, plan: Any, boot_env: dict[str, str]) -> None:
        env = {**os.environ, **boot_env, "FAKE_DIR": str(self.folder)}
        if self.whole_nodes:
            env["FAKE_WHOLE_NODES"] = "1"
        from jupyter_distributed.cluster.relays import LocalRelays, relay_nodes

        nodes = relay_nodes(boot_env)
        self.relays = LocalRelays(nodes, env, self.folder) if nodes else None
        count = min(self.helpers, plan.spec.layout.nodes if self.whole_nodes else len(plan.ranks))
        self.procs = [
            subprocess.Popen(  # noqa: S603 (our own helper)
                [sys.executable, str(self.script), str(i), str(count)],
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            for i in range(count)
        ]
        self._reported: set[int] = set()
        self.every_sentinel = False  # (see sentinels)
        FakeRanks.last = self

    def cpu(self) -> dict[str, float]:
        """CPU seconds (user + system, every thread) of the helpers, the relays and the
        aggregators so far, by kind; and the relays' main threads' wake-ups (their voluntary
        context switches: each a wait that ended) per relay."""
        relays = self.relays
        kinds = {
            "fake ranks": [p.pid for p in self.procs],
            "relays": [p.pid for p in relays.procs.values()] if relays else [],
            "aggregators": [p.pid for p in relays.aggregators.values()] if relays else [],
        }
        out = {kind: sum(map(process_cpu, pids)) for kind, pids in kinds.items()}
        out["relay wakes"] = sum(map(wakes, kinds["relays"])) / max(1, len(kinds["relays"]))
        out["relays ZeroMQ I/O"] = sum(map(zmq_io_cpu, kinds["relays"]))
        return out

    def exited(self) -> list[tuple[int | None, int]]:
        out: list[tuple[int | None, int]] = []
        for i, proc in enumerate(self.procs):
            code = proc.poll()
            if code is not None and i not in self._reported:
                self._reported.add(i)
                out.append((None, code))
        return out

    def dead_relays(self) -> list[tuple[int, int]]:
        return self.relays.exited() if self.relays is not None else []

    def sentinels(self) -> list[int]:
        """A pidfd per relay, as the local backend gives. The fakes stand for ranks on other
        hosts, of which the kernel holds no pidfd (a helper that ends is seen by the kernel's
        look twice a second); with ``FakeRanks.pidfds`` (``--pidfds``) a pidfd per helper too,
        as the local backend gives one per rank on the kernel's host. ``every_sentinel`` as
        its."""
        from jupyter_distributed.pids import pidfds

        relays = self.relays.sentinels() if self.relays is not None else []
        mine = pidfds(p.pid for p in self.procs) if self.pidfds else []
        fds = relays + mine
        hops = len(self.relays.procs) + len(self.relays.aggregators) if self.relays else 0
        self.every_sentinel = len(fds) == hops + len(self.procs)
        return fds

    def dead_aggregators(self) -> list[tuple[int, int]]:
        return self.relays.aggregators_exited() if self.relays is not None else []

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def terminate(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.running():
            time.sleep(0.01)
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):  # (it ended meanwhile)
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if self.relays is not None:
            self.relays.terminate(grace)

    def log_tail(self, rank: int | None) -> str:
        return ""


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def zmq_io_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid``'s ZeroMQ I/O threads (0 once it is gone)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        if stat[stat.index("(") + 1 :].startswith("ZMQbg/IO"):
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def wakes(pid: int) -> int:
    """The voluntary context switches of process ``pid``'s main thread (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M)
    return int(found.group(1)) if found else 0


def descriptors() -> int:
    return sum(1 for _ in Path("/proc/self/fd").iterdir()) - 1


def star(ip: Any, n: int, cells: int, tmp: Path) -> dict[str, str]:
    """One cluster of ``n`` fake ranks, the kernel holding all their connections."""
    return cluster(ip, n, cells, tmp / f"star-{n}", f"-n {n}")


def relay(ip: Any, n: int, cells: int, tmp: Path, mode: str = "always") -> dict[str, str]:
    """One cluster of ``n`` fake ranks on ``--nodes`` nodes, each node's behind its relay
    (``mode`` "tree": the relays behind about √nodes aggregators)."""
    nodes = min(FakeRanks.nodes, n)
    ip.run_line_magic("config", f"Distributed.relays = {mode!r}")
    try:
        shape = f"--nodes {nodes} --procs-per-node {n // nodes}"
        return cluster(ip, n // nodes * nodes, cells, tmp / f"{mode}-{n}", shape)
    finally:
        ip.run_line_magic("config", 'Distributed.relays = "auto"')


def tree(ip: Any, n: int, cells: int, tmp: Path) -> dict[str, str]:
    """:func:`relay`, with a second level of aggregators above the relays."""
    return relay(ip, n, cells, tmp, "tree")


def cluster(ip: Any, n: int, cells: int, folder: Path, shape: str) -> dict[str, str]:
    """Start ``n`` fake ranks (``shape``: the magic's arguments), run trivial cells, stop."""
    import jupyter_distributed.backends.local.backend as local
    import jupyter_distributed.cluster.process as process

    folder.mkdir()
    FakeRanks.folder = folder
    local.LocalProcesses = FakeRanks  # type: ignore[misc,assignment]
    ready: list[float] = []
    real_wait: Callable[..., None] = process.wait_ready

    def timed_wait(*args: Any) -> None:
        real_wait(*args)
        ready.append(time.time())

    process.wait_ready = timed_wait  # type: ignore[assignment]
    line = f"%%distributed {shape} --oversubscribe{QUIET[0]}\n{CODE[0]}"
    try:
        if not ip.run_cell(line).success:
            raise RuntimeError(f"{n} fake ranks did not start")
        began = min(float(p.read_text()) for p in folder.glob("*.start"))
        fds = descriptors()
        status = io.StringIO()
        with contextlib.redirect_stdout(status):
            ip.run_line_magic("distributed", "status")
        peers = re.search(r"kernel connections to the ranks: (\d+)", status.getvalue())
        spent, walls, floors, necessary = [], [], [], []
        if FLOORS:
            FLOORS[0].size(n, int(re.search(r"--nodes (\d+)", shape + " --nodes 1")[1]))
        assert FakeRanks.last is not None
        # (one more cell first: the cluster's first cell after its start records its ranks'
        # shape, once per cluster, ~0.1 s of the I/O thread at 10,000 ranks: not a cell's cost)
        if not ip.run_cell(line).success:
            raise RuntimeError("a trivial cell failed")
        others = FakeRanks.last.cpu()
        loop = cpu()
        for _ in range(cells):
            # (an unmeasured cell first, with the floor: the measured one follows a cluster's)
            if FLOOR[0] and not ip.run_cell(line).success:
                raise RuntimeError("a trivial cell failed")
            c0, w0 = cpu(), time.perf_counter()
            if not ip.run_cell(line).success:
                raise RuntimeError("a trivial cell failed")
            walls.append(time.perf_counter() - w0)
            spent.append(cpu() - c0)
            if FLOOR[0]:  # (IPython's own, caches as a cluster's cell leaves them)
                after = FLOOR_CELL if FLOORS and len(spent) % 2 == 0 else NOTHING
                if after == FLOOR_CELL and HOLD[0]:  # (--floor-hold: the cell's own wall)
                    FLOORS[0].hold = walls[-1]
                c0 = cpu()
                ip.run_cell(after)
                (necessary if after == FLOOR_CELL else floors).append(cpu() - c0)
        ran = max(1, cells * (2 if FLOOR[0] else 1))  # (the cluster's cells in the loop)
        time.sleep(0.2)  # (what a cell leaves to do after it ends: counted)
        loop = (cpu() - loop - sum(floors) - sum(necessary)) / ran
        others = {k: (v - others[k]) / ran for k, v in FakeRanks.last.cpu().items()}
    finally:
        process.wait_ready = real_wait  # type: ignore[assignment]
        ip.run_line_magic("distributed", "stop")
    if FakeRanks.script == HERE / "fake_ranks.py":  # (another checkout's writes no counts)
        reached(folder, n, 2 + cells * (2 if FLOOR[0] else 1))
    return {
        "connect + hello": f"{ready[0] - began:.2f} s",
        "kernel CPU per trivial cell (median / p90)": (
            f"{median(spent) * 1e3:.2f} / {pct(spent, 90) * 1e3:.2f} ms"
        ),
        "kernel CPU per cluster cell, the whole loop (mean, what runs between included)": (
            f"{loop * 1e3:.2f} ms"
        ),
        **(
            {
                "IPython's own CPU per do-nothing cell magic between these cells (median / p90)": (
                    f"{median(floors) * 1e3:.2f} / {pct(floors, 90) * 1e3:.2f} ms"
                )
            }
            if floors
            else {}
        ),
        **(
            {
                f"the necessary work alone per cell, IPython's included (--floor{held()}; median / "
                "p90)": (f"{median(necessary) * 1e3:.2f} / {pct(necessary, 90) * 1e3:.2f} ms")
            }
            if necessary
            else {}
        ),
        "trivial cell wall (median / p99; shares the cores)": (
            f"{median(walls) * 1e3:.1f} / {pct(walls, 99) * 1e3:.1f} ms"
        ),
        "kernel descriptors": f"{fds}",
        **{
            f"{kind}' CPU per rank per cell (the cells' mean)": f"{others[kind] / n * 1e6:.1f} µs"
            for kind in ("fake ranks", "relays")
        },
        "... of it ZeroMQ's I/O threads": f"{others['relays ZeroMQ I/O'] / n * 1e6:.1f} µs",
        "relays' wake-ups per relay per cell (main thread; mean)": f"{others['relay wakes']:.1f}",
        "aggregators' CPU per cell (mean)": f"{others['aggregators'] * 1e3:.1f} ms",
        "kernel peers (connections to ranks, relays or aggregators)": (
            peers.group(1) if peers else "?"
        ),
    }


def reached(folder: Path, n: int, cells: int) -> None:
    """Check that each of the ``cells`` cells reached each of the ``n`` ranks: the helpers'
    counts of the cells their ranks got (``fake_ranks.py`` writes them as it leaves)."""
    starts = sorted(folder.glob("*.start"))
    counts = [folder / f"{p.stem}.answered" for p in starts]
    missing = [p.stem for p in counts if not p.exists()]
    if missing:
        raise RuntimeError(f"helpers {missing} did not say how many cells their ranks got")
    got = sum(int(p.read_text()) for p in counts)
    if got != n * cells:
        raise RuntimeError(f"{n} ranks got {got} cells in all, not {n} x {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--cells", type=int, default=30)
    parser.add_argument("--helpers", type=int, default=4)
    parser.add_argument("--mode", choices=MODES, nargs="+", default=list(MODES))
    parser.add_argument("--nodes", type=int, default=4, help="relays in --mode relay")
    parser.add_argument("--code", choices=("pass", "None"), default="pass")
    parser.add_argument(
        "--whole-nodes",
        action="store_true",
        help="each helper serves whole nodes (a node's ranks answer together, as on a host of "
        "their own) instead of every --helpers-th rank",
    )
    parser.add_argument(
        "--shown",
        action="store_true",
        help="the cells without --quiet: their view shows what the ranks write (a notebook's "
        "default; a trivial cell writes nothing)",
    )
    parser.add_argument(
        "--pidfds",
        action="store_true",
        help="a pidfd per helper, as the local backend holds one per rank on the kernel's host "
        "(by default none: the fakes stand for ranks on other hosts)",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="no do-nothing cell magic between the cluster's cells (by default one follows each "
        "measured cell, which itself follows an unmeasured cell, so that it follows a cluster's "
        "cell as IPython's part of a cluster's cell does)",
    )
    parser.add_argument(
        "--fakes",
        type=Path,
        help="another checkout's fake_ranks.py, for an A/B of the fakes' own cost (then the "
        "count of cells that reached each rank is not checked: an older one writes none)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the kernel on the first CPU, the fakes, relays and aggregators on the others (as "
        "on a cluster, where the ranks and relays run on other hosts than the kernel's)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="every other measured cell is followed by the floor's cell instead of the "
        "do-nothing one: only the work any implementation must do for a trivial cell "
        "(cellfloor.py), in the same cold caches",
    )
    parser.add_argument(
        "--floor-hold",
        action="store_true",
        help="--floor, its peer answering only after the wall of the cell before, both CPUs "
        "kept busy meanwhile (as the cluster keeps them in a real cell): the floor in caches "
        "as cold as a real cell's wall leaves them",
    )
    args = parser.parse_args()
    args.floor = args.floor or args.floor_hold
    HOLD[0] = args.floor_hold
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            parser.error("--pin needs at least 2 CPUs")
        os.sched_setaffinity(0, {cpus[0]})
        FakeRanks.others_cpus = set(cpus[1:])
    if args.fakes:
        FakeRanks.script = args.fakes.resolve()
    FLOOR[0] = not args.no_floor
    CODE[0] = args.code
    QUIET[0] = "" if args.shown else " --quiet"
    use_checkout()
    FakeRanks.nodes = args.nodes
    FakeRanks.helpers = args.helpers
    FakeRanks.whole_nodes = args.whole_nodes
    FakeRanks.pidfds = args.pidfds
    ip, tmp = bench_shell("jd-bench-scale-")
    ip.register_magic_function(lambda line, cell: None, "cell", "jd_bench_nothing")
    if args.floor:
        from cellfloor import register

        FLOORS.append(register(ip, tmp / "floor"))
    if max(args.ranks) > 1024:  # (the default cap on a cluster's size)
        ip.run_line_magic("config", f"Distributed.max_world_size = {max(args.ranks)}")
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {args.helpers} helper processes "
        f"of fake ranks{' (whole nodes each)' if args.whole_nodes else ''}, {args.cells} "
        f"trivial cells ({args.code!r}) per row; kernel "
        f"descriptors before any cluster: {descriptors()}"
    )
    modes: dict[str, Callable[[Any, int, int, Path], dict[str, str]]]
    modes = {"star": star, "relay": relay, "tree": tree}
    rows: dict[str, dict[str, str]] = {}
    columns = []
    for mode in args.mode:
        for n in args.ranks:
            column = f"{mode} {n:,}"
            columns.append(column)
            for metric, text in modes[mode](ip, n, args.cells, tmp).items():
                rows.setdefault(metric, {})[column] = text
            print(f"  {column} done", file=sys.stderr, flush=True)
    hot = floor(ip, args.cells)
    if FLOORS:
        FLOORS[0].close()
    print(f"IPython's own CPU per cell of a cell magic that does nothing, back to back: {hot}")
    print("| metric | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for metric, cells in rows.items():
        print(f"| {metric} | " + " | ".join(cells.get(c, "") for c in columns) + " |")


def held() -> str:
    """The floor row's note: whether its peer held the answer for the cell's wall (--floor-hold)."""
    return ", answered after the cell's wall, cores busy" if HOLD[0] else ""


def floor(ip: Any, cells: int) -> str:
    """The same shell's CPU per cell for a cell magic that returns at once, back to back (caches
    hot): what IPython itself spends on a cell (transform, compile, run, history)."""
    spent = []
    for _ in range(max(cells, 30)):
        c0 = cpu()
        ip.run_cell(NOTHING)
        spent.append(cpu() - c0)
    return f"{median(spent) * 1e3:.2f} / {pct(spent, 90) * 1e3:.2f} ms (median / p90)"


if __name__ == "__main__":
    main()
