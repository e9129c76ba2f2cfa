"""One contract, every backend: the same tests run on each case of ``backend_cases.CASES``.

Everything is real: rank processes (and mpirun for ``mpi``; moto's server and the local training
platform for ``sagemaker``), the signed control channel and the SQLite history. A backend that
cannot run here (no mpirun, no mpi4py) is skipped with the reason; a test that needs a capability
a backend lacks by design (``BackendCase.lacks``) is skipped for it with that reason.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.mpi.backend import descendants
from jupyter_distributed.cluster.zygote import server_pids
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed, SpecError
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import pid_alive
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .backend_cases import CAPABILITIES, CASES, BackendCase
from .engines.fixtures import engine_processes


def wait_gone(pids: set[int], within: float = 15.0) -> set[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if pid_alive(p)}


@dataclass
class Harness:
    """A Session on a fresh store, running cells on one backend with captured output."""

    case: BackendCase
    session: Session
    store: Store
    user_ns: dict[str, Any] = field(default_factory=dict)
    out: io.StringIO = field(default_factory=io.StringIO)
    platform: Any = None  # the value of the case's first fixture (sagemaker: LocalSageMaker)

    def needs(self, capability: str) -> None:
        """Skip, with the case's reason, a test that does not apply to this backend by design."""
        if reason := self.case.lacks.get(capability):
            pytest.skip(f"not for {self.case.name} ({CAPABILITIES[capability]}): {reason}")

    def spec(self, n: int = 2, **kwargs: Any) -> Spec:
        return Spec(
            layout=Layout(procs_per_node=n),
            backend=self.case.name,
            options=self.case.options(),
            relays=self.case.relays,
            **kwargs,
        )

    def run(self, code: str, n: int = 2, **kwargs: Any) -> Any:
        view = CellView(out=self.out, err=self.out)
        return self.session.run_cell(
            self.spec(n, **kwargs), textwrap.dedent(code), self.user_ns, view=view
        )

    def processes(self) -> set[int]:
        """Every process the session started (launchers and ranks), not the engines' daemons
        nor the kernel's fork servers (they serve its next cluster too)."""
        return set(descendants(os.getpid())) - engine_processes() - server_pids()


@pytest.fixture(params=CASES, ids=lambda c: c.id)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    case: BackendCase = request.param
    test = request.node.originalname
    if (
        case.reduced is not None
        and test not in case.reduced
        and not request.config.getoption("--slow")
    ):
        pytest.skip(f"slow on {case.name} (beyond its reduced contract subset): run with --slow")
    if reason := case.missing():
        pytest.skip(f"{case.name} backend unavailable: {reason}")
    platforms = [request.getfixturevalue(name) for name in case.fixtures]
    store = Store(tmp_path / "history.sqlite")
    session = Session(store)
    harness = Harness(case, session, store, platform=platforms[0] if platforms else None)
    try:
        yield harness
    finally:
        session.shutdown()
        store.close()


def test_output_is_tagged_per_rank_and_recorded(backend: Harness) -> None:
    outcome = backend.run("print(f'hello from {rank} of {world_size}')", n=3)
    shown = backend.out.getvalue()
    for r in range(3):
        assert f"[rank {r}] hello from {r} of 3" in shown
    run = backend.store.runs(limit=1)[0]
    assert run.backend == backend.case.name
    lines = {(line.rank, line.text) for line in backend.store.logs(run.id)}
    assert lines == {(r, f"hello from {r} of 3") for r in range(3)}
    assert outcome.state.value == "completed"


def test_variables_persist_between_cells(backend: Harness) -> None:
    backend.needs("persistent")
    backend.run("x = rank * 10")
    outcome = backend.run("x + 1")
    assert outcome.values == {0: "1", 1: "11"}


def test_push_and_pull(backend: Harness) -> None:
    backend.user_ns["base"] = {"offset": 5}
    backend.run("y = base['offset'] + rank", push=("base",), pull=("y",))
    assert backend.user_ns["y"] == [5, 6]


def test_targets_run_on_selected_ranks_only(backend: Harness) -> None:
    backend.needs("targets")
    backend.run("z = 'set'", n=3)
    outcome = backend.run("print('picked', rank); z", n=3, targets=(0, 2))
    assert set(outcome.values) == {0, 2}
    shown = backend.out.getvalue()
    assert "[rank 2] picked 2" in shown and "[rank 1] picked" not in shown


def test_error_reports_the_root_cause_first(backend: Harness) -> None:
    with pytest.raises(RunFailed) as info:
        backend.run("""
            import time
            if rank == 1:
                raise ValueError('bad shard on rank one')
            time.sleep(0.5)
            raise RuntimeError('rank zero gave up later')
        """)
    failed = info.value
    assert failed.root.rank == 1
    assert failed.root.ename == "ValueError"
    assert failed.run_id == backend.store.runs(limit=1)[0].id
    assert backend.store.runs(limit=1)[0].state.value == "failed"
    assert any("bad shard on rank one" in line for line in failed.root.traceback)
    frames = [line for line in failed.root.traceback if line.lstrip().startswith("File ")]
    assert frames[0].lstrip().startswith('File "<cell')  # the cell's frame, not the runtime's
    assert [f.rank for f in failed.failures] == [1, 0]
    assert backend.run("rank").values == {0: "0", 1: "1"}  # the ranks survive an exception


@pytest.mark.parametrize(
    ("death", "expected"),
    [
        ("os._exit(3)", {"exit_code": 3, "signal": None}),
        ("os.kill(os.getpid(), signal.SIGKILL)", {"exit_code": None, "signal": 9}),
    ],
)
def test_dead_rank_is_named_with_its_exit(
    backend: Harness, death: str, expected: dict[str, Any]
) -> None:
    backend.needs("local_ranks")
    backend.run("pass", n=3)
    started = backend.processes()
    with pytest.raises(RunFailed) as info:
        backend.run(
            f"""
            import os, signal, time
            if rank == 1:
                time.sleep(0.2)
                {death}
            time.sleep(120)
        """,
            n=3,
        )
    root = info.value.root
    assert (root.rank, root.kind) == (1, "exit")
    assert {"exit_code": root.exit_code, "signal": root.signal} == expected
    assert not wait_gone(started), "processes left after a rank died"
    assert backend.run("rank", n=3).values == {0: "0", 1: "1", 2: "2"}  # a new cluster starts


def _interrupt_when(marker: Path, backend: Harness, running: set[int]) -> threading.Thread:
    """Interrupt the main thread once the cell has started, noting the processes running it."""
    main = threading.main_thread().ident
    assert main is not None

    def fire() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        running.update(backend.processes())
        signal.pthread_kill(main, signal.SIGINT)

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    return thread


def test_interrupt_stops_the_cell(backend: Harness, tmp_path: Path) -> None:
    """A live cluster keeps its ranks; a job-shaped run is stopped and leaves nothing."""
    persistent = "persistent" not in backend.case.lacks
    if persistent:
        backend.run("kept = rank + 100")
    marker, running = tmp_path / "started", set[int]()
    thread = _interrupt_when(marker, backend, running)
    with pytest.raises(KeyboardInterrupt):
        backend.run(f"""
            import pathlib, time
            pathlib.Path({str(marker)!r}).touch()
            time.sleep(120)
        """)
    thread.join()
    run = backend.store.runs(limit=1)[0]
    assert run.state.value in ("interrupted", "stopped")
    if persistent:
        assert backend.run("kept").values == {0: "100", 1: "101"}
        return
    assert running, "no process ran the cell"
    assert not wait_gone(running), "processes left after the run was stopped"
    if backend.case.name == "sagemaker":
        assert backend.platform.jobs[run.external_id].fake.training_job_status == "Stopped"
    assert backend.run("rank").values == {0: "0", 1: "1"}


def test_timeout_interrupts_and_keeps_the_ranks(backend: Harness) -> None:
    backend.needs("timeout")
    backend.run("kept = rank")
    with pytest.raises(RunFailed) as info:
        backend.run("import time; time.sleep(120)", timeout=0.5)
    assert {f.kind for f in info.value.failures} == {"timeout"}
    assert backend.run("kept").values == {0: "0", 1: "1"}


@pytest.mark.parametrize("flag", ["targets", "timeout"])
def test_flags_a_backend_lacks_are_refused_in_one_line(backend: Harness, flag: str) -> None:
    if flag not in backend.case.lacks:
        pytest.skip(f"{backend.case.name} supports --{flag}")
    with pytest.raises(SpecError, match=f"--{flag}") as info:
        backend.run("rank", **({"targets": (0,)} if flag == "targets" else {"timeout": 5.0}))
    assert "\n" not in str(info.value)
    assert backend.store.runs(limit=1) == []  # refused before anything was started


def test_no_process_left_after_stop(backend: Harness) -> None:
    backend.needs("local_ranks")
    backend.run("pass", n=3)
    started = backend.processes()
    assert len(started) >= 3
    backend.session.stop()
    assert not wait_gone(started, within=5.0)


KERNEL = """
import os, sys
from jupyter_distributed.display import CellView
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.layout import Layout
from jupyter_distributed.history.store import Store
sys.path.insert(0, {tests!r})
from backend_cases import CASES
case = next(c for c in CASES if c.id == {name!r})
session = Session(Store({store!r}))
spec = Spec(
    layout=Layout(procs_per_node=2), backend=case.name, options=case.options(),
    relays=case.relays,
)
session.run_cell(spec, "import os; print('pid', os.getpid())", {{}}, view=CellView())
print("ready", flush=True)
sys.stdin.readline()
if sys.argv[1] == "kill":
    os.kill(os.getpid(), 9)
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_no_process_left_after_the_kernel_ends(backend: Harness, tmp_path: Path, how: str) -> None:
    backend.needs("local_ranks")
    script = KERNEL.format(
        tests=str(Path(__file__).parent),
        name=backend.case.id,
        store=str(tmp_path / "kernel.sqlite"),
    )
    kernel = subprocess.Popen(
        [sys.executable, "-c", script, how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert kernel.stdout is not None and kernel.stdin is not None
    family: set[int] = set()
    for line in kernel.stdout:
        if line.startswith("ready"):
            family = set(descendants(kernel.pid))
            break
    assert family, "the kernel did not start its ranks"
    kernel.stdin.write("go\n")
    kernel.stdin.close()
    kernel.wait(30)
    assert not wait_gone(family), "processes outlived the kernel"
