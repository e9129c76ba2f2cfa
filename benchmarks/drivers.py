"""The two systems under test, driven the way a notebook user drives them: cell magics run
through one IPython shell (``%%distributed`` and ipyparallel's ``%%px``), plus the APIs a user
calls for the same job (``DirectView.push``). Every wait is bounded."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import Arrivals, capture

SLEEP_CELL = (
    "import time\n"
    "with open(f'{path}-{{rank}}', 'w') as f:\n"
    "    f.write('sleeping')\n"
    "time.sleep({secs})"
)
PRINT_CELL = (
    "import time\nfor i in range({count}):\n    print(f'JDB {{rank}} {{i}} {{time.time():.6f}}')"
)
PACED_CELL = (
    "import time\n"
    "stop = time.time() + {secs}\n"
    "i = 0\n"
    "while time.time() < stop and i < {count}:\n"
    "    print(f'JDB {{rank}} {{i}} {{time.time():.6f}}')\n"
    "    i += 1\n"
    "    time.sleep({gap})"
)
DIE_CELL = (
    "import os, time\n"
    "if rank == 1:\n"
    "    time.sleep(0.3)\n"
    "    with open({path!r}, 'w') as f:\n"
    "        f.write(repr(time.time()))\n"
    "    os._exit(3)\n"
    "time.sleep({secs})"
)
REPORT_CELL = (
    "import time\n"
    "def _noop(**kw):\n"
    "    pass\n"
    "t0 = time.perf_counter()\n"
    "for i in range({count}):\n"
    "    report(step=i)\n"
    "t1 = time.perf_counter()\n"
    "for i in range({count}):\n"
    "    _noop(step=i)\n"
    "t2 = time.perf_counter()\n"
    "report_cost, noop_cost = (t1 - t0) / {count}, (t2 - t1) / {count}"
)


class CellError(RuntimeError):
    pass


def _interrupt_when_asleep(path: Path, n: int, fired: list[float]) -> threading.Thread:
    """SIGINT to this process (what the notebook's stop button does) once every rank has
    written ``path-RANK``, i.e. is inside the sleeping cell; gives up after 30 s."""

    def fire() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(Path(f"{path}-{r}").exists() for r in range(n)):
                time.sleep(0.05)  # well inside time.sleep()
                fired.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.005)

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    return thread


def wait_for_file(path: Path, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            text = path.read_text()
            if text:
                return float(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    return None


class JD:
    """jupyter-distributed's local backend through ``%%distributed``."""

    name = "jupyter-distributed"

    def __init__(self, ip: Any, n: int) -> None:
        self.ip, self.n = ip, n
        self.session = ip.magics_manager.registry["DistributedMagics"].session

    def cell(self, body: str, flags: str = "", expect_error: bool = False) -> Any:
        result = self.ip.run_cell(f"%%distributed -n {self.n} {flags}\n{body}")
        if not expect_error and not result.success:
            raise CellError(f"%%distributed cell failed: {result.error_in_exec!r}")
        return result

    def start(self) -> float:
        self.session.stop()
        t0 = time.perf_counter()
        self.cell("pass")
        return time.perf_counter() - t0

    def trivial(self) -> None:
        self.cell("pass")

    def last_run(self) -> str:
        return self.session.store.runs(limit=1)[0].id

    def flood(self, count: int) -> tuple[float, int, int, int]:
        """Each rank prints ``count`` lines as fast as it can. Returns (seconds until every line
        is in the store, lines in the store, distinct marked lines there, lines shown).

        The kernel records every line before the cell returns, so the clock stops when the
        cell returns; the store is read after that (its read-back is not timed) and must hold
        every line then. Should lines still be missing at that read, the reads go on and the
        clock stops at the read that completes them."""
        with capture(sys) as (out, _err):
            t0 = time.perf_counter()
            self.cell(PRINT_CELL.format(count=count))
            t_all = time.perf_counter()  # the cell returned
        run_id = self.last_run()
        want = self.n * count
        deadline = time.monotonic() + 10
        store, seq = self.session.store, 0
        rows: list[tuple[int, str]] = []
        reads = 0
        while True:  # the lines as they reach the store, each read once
            page = 100_000
            while page == 100_000:  # one read: every page the store holds now
                lines = store.logs(run_id, after=seq, limit=100_000)
                rows += [(ln.rank, ln.text) for ln in lines if ln.stream == "stdout"]
                seq, page = (lines[-1].seq if lines else seq), len(lines)
            reads += 1
            if reads > 1:  # lines were missing when the cell returned: the clock ran on
                t_all = time.perf_counter()
            if len(rows) >= want or time.monotonic() > deadline:
                break
            time.sleep(0.005)
        distinct = {(r, text.split(" ")[2]) for r, text in rows if text.startswith("JDB ")}
        return t_all - t0, len(rows), len(distinct), len(out.marked())

    def paced(self, secs: float, count: int, gap: float) -> Arrivals:
        with capture(sys) as (out, _err):
            self.cell(PACED_CELL.format(secs=secs, count=count, gap=gap))
        return out

    def report_cost(self, count: int) -> tuple[float, float, int]:
        self.cell(REPORT_CELL.format(count=count), "--pull report_cost,noop_cost")
        costs = self.ip.user_ns["report_cost"]
        noops = self.ip.user_ns["noop_cost"]
        run_id = self.last_run()
        deadline = time.monotonic() + 20
        want = self.n * count
        store, seq, got = self.session.store, 0, 0
        while True:  # the samples as they reach the store, each read once
            samples = store.metrics(run_id, after=seq, limit=100_000)
            got += sum("step" in m.values for _, m in samples)
            seq = samples[-1][0] if samples else seq
            if got >= want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return max(costs), max(noops), int(got)

    def push(self, value: Any) -> float:
        self.ip.user_ns["x"] = value
        t0 = time.perf_counter()
        self.cell("x.nbytes", "--push x")
        return time.perf_counter() - t0

    def interrupt(self, tmp: Path, secs: float) -> tuple[float, float, bool]:
        """(SIGINT -> cell returned, SIGINT -> next cell done, variables kept)."""
        self.cell("kept = rank")
        fired: list[float] = []
        path = tmp / f"jd-asleep-{self.n}-{time.monotonic_ns()}"
        timer = _interrupt_when_asleep(path, self.n, fired)
        with capture(sys):
            result = self.cell(SLEEP_CELL.format(path=str(path), secs=secs), expect_error=True)
        t1 = time.perf_counter()
        timer.join()
        if not fired or not isinstance(result.error_in_exec, KeyboardInterrupt):
            asleep = sorted(p.name for p in tmp.glob(f"{path.name}-*"))
            raise CellError(
                f"the interrupted cell ended with {result.error_in_exec!r} "
                f"(before exec: {result.error_before_exec!r}); signal sent: {bool(fired)}; "
                f"ranks asleep: {asleep}; SIGINT handler: {signal.getsignal(signal.SIGINT)}; "
                f"threads: {[t.name for t in threading.enumerate()]}"
            )
        self.cell("kept", "--pull kept")
        t2 = time.perf_counter()
        kept = self.ip.user_ns.get("kept") == list(range(self.n))
        return t1 - fired[0], t2 - fired[0], kept

    def dead_rank(self, tmp: Path, secs: float) -> tuple[float | None, float | None]:
        """(rank exit -> error line under the cell, rank exit -> cell returned)."""
        path = tmp / f"jd-exit-{self.n}"
        with capture(sys) as (_out, err):
            result = self.cell(DIE_CELL.format(path=str(path), secs=secs), expect_error=True)
            returned = time.time()
        exited = wait_for_file(path, 1)
        if result.success or exited is None:
            return None, None
        shown = [
            w for line, w, _f in err.lines if "rank 1" in line and "exited with code 3" in line
        ]
        self.session.stop()
        return (shown[0] - exited if shown else None), returned - exited

    def stop(self) -> None:
        self.session.stop()


class IPP:
    """ipyparallel: a local ``Cluster`` on loopback, ``%%px`` and its DirectView."""

    name = "ipyparallel"

    def __init__(self, ip: Any, n: int) -> None:
        self.ip, self.n = ip, n
        self.cluster: Any = None
        self.rc: Any = None
        self.dv: Any = None

    def start(self) -> float:
        import ipyparallel as ipp

        self.stop()
        t0 = time.perf_counter()
        self.cluster = ipp.Cluster(
            n=self.n,
            controller_ip="127.0.0.1",
            controller_location="127.0.0.1",
            engine_launcher_class="local",
            log_level=40,
        )
        self.rc = self.cluster.start_and_connect_sync()
        self.rc.wait_for_engines(self.n, timeout=120)
        self.dv = self.rc[:]
        self.dv.block = True
        self.rc.activate()
        self.px("pass")
        took = time.perf_counter() - t0
        for i, eid in enumerate(self.rc.ids):
            self.rc[eid].push({"rank": i}, block=True)
        return took

    def px(self, body: str, expect_error: bool = False) -> Any:
        result = self.ip.run_cell(f"%%px\n{body}")
        if not expect_error and not result.success:
            raise CellError(f"%%px cell failed: {result.error_in_exec!r}")
        return result

    def trivial(self) -> None:
        self.px("pass")

    def trivial_view(self) -> None:
        self.dv.execute("pass", block=True)

    def flood(self, count: int) -> tuple[float, int, int, int]:
        want = self.n * count
        with capture(sys) as (out, _err):
            t0 = time.perf_counter()
            self.px(PRINT_CELL.format(count=count))
            t1 = time.perf_counter()
            deadline = time.monotonic() + 10
            while len(out.marked()) < want and time.monotonic() < deadline:
                out.flush()
                time.sleep(0.05)
            t_all = time.perf_counter()  # every line arrived, or the wait ended
            out.flush()
        got = len(out.marked())
        return max(t_all, t1) - t0, got, got, got

    def paced(self, secs: float, count: int, gap: float) -> Arrivals:
        with capture(sys) as (out, _err):
            self.px(PACED_CELL.format(secs=secs, count=count, gap=gap))
        return out

    def push(self, value: Any) -> float:
        t0 = time.perf_counter()
        self.dv.push({"x": value}, block=True)
        return time.perf_counter() - t0

    def interrupt(self, tmp: Path, secs: float) -> tuple[float, float, bool]:
        self.dv.execute("kept = rank", block=True)
        fired: list[float] = []
        path = tmp / f"ipp-asleep-{self.n}-{time.monotonic_ns()}"
        timer = _interrupt_when_asleep(path, self.n, fired)
        with capture(sys):
            self.px(SLEEP_CELL.format(path=str(path), secs=secs), expect_error=True)
        t1 = time.perf_counter()
        timer.join()
        if not fired:
            raise CellError("the engines never reached the sleeping cell")
        ar = self.dv.pull("kept", block=False)
        ar.wait(secs + 10)
        t2 = time.perf_counter()
        kept = ar.ready() and ar.successful() and list(ar.get()) == list(range(self.n))
        return t1 - fired[0], t2 - fired[0], kept

    def dead_rank(self, tmp: Path, secs: float, wait: float) -> tuple[float | None, str]:
        """(rank exit -> its task reported failed, or None if not within ``wait``; how)."""
        path = tmp / f"ipp-exit-{self.n}"
        ars = [
            self.rc[eid].execute(DIE_CELL.format(path=str(path), secs=secs), block=False)
            for eid in self.rc.ids
        ]
        exited = wait_for_file(path, 10)
        if exited is None:
            return None, "the engine did not exit"
        deadline = time.monotonic() + wait
        while not ars[1].ready() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not ars[1].ready():
            return None, f"not reported within {wait:.0f}s"
        noticed = time.time()
        try:
            ars[1].get(0)
            how = "task finished?"
        except Exception as exc:  # noqa: BLE001 - whatever ipyparallel raises for it
            how = str(getattr(exc, "ename", type(exc).__name__))
        return noticed - exited, how

    def stop(self) -> None:
        if self.cluster is not None:
            try:
                self.rc.close()
            finally:
                self.cluster.stop_cluster_sync()
            self.cluster = self.rc = self.dv = None
