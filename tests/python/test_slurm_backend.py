"""``--backend slurm`` on a real Slurm cluster (two slurmd nodes on loopback, see engines/)."""

from __future__ import annotations

import io
import re
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.slurm.options import SlurmOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .engines.slurm import SlurmCluster
from .test_backend_contract import wait_gone

pytestmark = pytest.mark.slurm


def _run(session: Session, code: str, out: io.StringIO, **layout: Any) -> Any:
    spec = Spec(layout=Layout(**layout), backend="slurm")
    view = CellView(out=out, err=out)
    return session.run_cell(spec, textwrap.dedent(code), {}, view=view)


def test_two_nodes_two_ranks_each(in_slurm: SlurmCluster, tmp_path: Any) -> None:
    session, out = Session(Store(tmp_path / "h.sqlite")), io.StringIO()
    try:
        outcome = _run(
            session,
            """
            import os
            (rank, local_rank, node_rank, os.environ['SLURMD_NODENAME'],
             os.environ['MASTER_ADDR'], os.environ['LOCAL_WORLD_SIZE'])
            """,
            out,
            nodes=2,
            procs_per_node=2,
        )
        values = {r: eval(v) for r, v in outcome.values.items()}  # noqa: S307 (our own reprs)
        assert values == {
            0: (0, 0, 0, "node1", "127.0.0.1", "2"),
            1: (1, 1, 0, "node1", "127.0.0.1", "2"),
            2: (2, 0, 1, "node2", "127.0.0.1", "2"),
            3: (3, 1, 1, "node2", "127.0.0.1", "2"),
        }
        assert {r.host for r in session.live["slurm"].cluster.ranks()} == {"node1", "node2"}
        with pytest.raises(RunFailed) as info:
            _run(
                session,
                "import os, time\nif rank == 3: os._exit(7)\ntime.sleep(60)",
                out,
                nodes=2,
                procs_per_node=2,
            )
        root = info.value.root
        assert (root.rank, root.exit_code, root.host) == (3, 7, "node2")
    finally:
        session.shutdown()
    in_slurm.wait_idle()
    assert in_slurm.jobs() == []


def test_queued_job_is_shown_then_runs(in_slurm: SlurmCluster, tmp_path: Any) -> None:
    """Partition ``one`` (one node) is full: the cell says queued with squeue's reason, the
    history says queued, and once the blocking job ends the ranks start; no start timeout."""
    blocker = in_slurm.run(  # (its log in tmp_path: Slurm's default is slurm-N.out in the cwd)
        "sbatch", "-p", "one", "--exclusive", f"--output={tmp_path / 'blocker.out'}",
        "--wrap", "sleep 120",
    )  # fmt: skip
    blocker_id = blocker.stdout.split()[-1]
    store = Store(tmp_path / "h.sqlite")
    session, out = Session(store), io.StringIO()
    seen: list[str] = []

    def unblock() -> None:
        deadline = time.monotonic() + 30
        while "queued:" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append(out.getvalue())
        seen.append(store.runs(limit=1)[0].state.value)
        in_slurm.run("scancel", blocker_id)

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        spec = Spec(
            layout=Layout(procs_per_node=2), backend="slurm", options=SlurmOptions(partition="one")
        )
        outcome = session.run_cell(spec, "rank", {}, view=CellView(out=out, err=out))
    finally:
        session.shutdown()
    thread.join()
    assert re.search(r"queued: job \d+ PENDING \w+", seen[0]), seen[0]
    assert seen[1] == "queued"
    assert outcome.values == {0: "0", 1: "1"}
    assert store.runs(limit=1)[0].state.value == "completed"


def test_stop_and_a_killed_rank_leave_no_task(in_slurm: SlurmCluster, tmp_path: Any) -> None:
    session, out = Session(Store(tmp_path / "h.sqlite")), io.StringIO()
    try:
        _run(session, "pass", out, nodes=2, procs_per_node=1)
        assert len(in_slurm.rank_pids()) == 2
        with pytest.raises(RunFailed) as info:
            _run(
                session,
                "import os, signal, time\nif rank == 1: os.kill(os.getpid(), signal.SIGKILL)\n"
                "time.sleep(60)",
                out,
                nodes=2,
                procs_per_node=1,
            )
        root = info.value.root
        assert (root.rank, root.signal, root.host) == (1, 9, "node2")
        _run(session, "pass", out, nodes=2, procs_per_node=1)  # a new step starts
        session.stop()
        assert wait_gone(in_slurm.task_pids(), within=10) == set()
    finally:
        session.shutdown()


KERNEL = """
import os, sys
from jupyter_distributed.backends.slurm.options import SlurmOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.layout import Layout
from jupyter_distributed.history.store import Store
session = Session(Store(sys.argv[1]))
spec = Spec(layout=Layout(nodes=2, procs_per_node=1), backend="slurm")
print("plan:", session.plan(spec).render().replace("\\n", " | "), flush=True)
out = session.run_cell(spec, "import os; os.environ['SLURM_JOB_ID']", {}, view=CellView())
values = dict(sorted(out.values.items()))
print("values:", values, "kernel job:", os.environ["SLURM_JOB_ID"], flush=True)
"""


def test_kernel_inside_an_sbatch_allocation(in_slurm: SlurmCluster, tmp_path: Path) -> None:
    """As under Open OnDemand: the kernel is the batch script of a 2-node job; its ranks are a
    step of that job, not a new job."""
    script = tmp_path / "kernel.py"
    script.write_text(KERNEL)
    log = tmp_path / "kernel.out"
    submitted = in_slurm.run(
        "sbatch",
        "-N2",
        "--ntasks-per-node=1",
        f"--output={log}",
        "--wrap",
        f"{sys.executable} {script} {tmp_path / 'h.sqlite'}",
    )
    job = submitted.stdout.split()[-1]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(j.startswith(job + " ") for j in in_slurm.jobs()):
        time.sleep(0.2)
    text = log.read_text()
    assert f"job {job} (the kernel's allocation" in text, text
    assert f"values: {{0: \"'{job}'\", 1: \"'{job}'\"}} kernel job: {job}" in text, text


def test_doctor_and_dry_run(in_slurm: SlurmCluster, shell: Any, capsys: Any) -> None:
    shell.run_line_magic("distributed", "doctor --backend slurm")
    text = capsys.readouterr().out
    assert "MISSING" not in text and "--backend slurm: ready" in text, text
    # A job of an earlier test may still be completing: the dry run must add none.
    before = {line.split()[0] for line in in_slurm.jobs()}
    shell.run_cell_magic(
        "distributed",
        "--backend slurm --nodes 2 --procs-per-node 2 --partition debug --time 5 "
        '--slurm-options "-p one --qos=normal" --dry-run',
        "pass",
    )
    plan = capsys.readouterr().out
    assert (
        "command:      srun -v --nodes 2 --ntasks-per-node 2 --ntasks 4 --kill-on-bad-exit=1 "
        "--export=ALL --label --job-name=jupyter-distributed --time=5 -p one --qos=normal "
    ) in plan, plan
    assert {line.split()[0] for line in in_slurm.jobs()} <= before
