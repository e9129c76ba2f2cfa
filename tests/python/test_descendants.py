"""What a rank started in a session of its own (``setsid``) dies with the rank.

Such a child leaves the rank's process group, which the rank's guardian kills; it used to
outlive a SIGKILLed kernel. Through a real Jupyter kernel: a cell's rank starts a ``setsid``
sleeper and a double-forked one (its parent exits at once), the kernel is SIGKILLed, and both
are gone soon after; a normal stop of the cluster ends them too, even one started just before
the stop (before the guardian's next look).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from jupyter_distributed.display import CellView
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.worker.guard import last_pid
from jupyter_distributed.worker.lineage import descendants, kill_all

from .core_helpers import proc_alive

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc, prctl"),
]

# On a rank: a sleeper in its own session, and one whose setsid parent exits at once (it is
# adopted by the rank, a subreaper); their pids, written to PIDS; then time for the guardian's
# next look at the rank's tree (it looks every 0.25 s).
CELL = """
import subprocess, time
direct = subprocess.Popen(["sleep", "300"], start_new_session=True).pid
subprocess.run(["setsid", "sh", "-c", "sleep 300 & echo $! > {out}.orphan"], check=True)
orphan = int(open("{out}.orphan").read())
open("{out}", "w").write(f"[{{direct}}, {{orphan}}]")
time.sleep({wait})
"""


def _gone(pids: list[int], timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while any(proc_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(proc_alive(p) for p in pids)


def _sleepers(out: Path) -> list[int]:
    pids: list[int] = json.loads(out.read_text())
    assert len(pids) == 2 and all(proc_alive(p) for p in pids)
    return pids


def _cleanup(pids: list[int]) -> None:
    for pid in pids:
        if proc_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_guardians_lineage_finds_and_kills_a_setsid_child() -> None:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        known = descendants([os.getpid()])
        assert child.pid in known
        kill_all({child.pid: known[child.pid]})
        assert child.wait(timeout=10) == -signal.SIGKILL
        kill_all({child.pid: known[child.pid]})  # gone (and reaped): nothing else is hit
    finally:
        child.kill()
        child.wait()


def test_a_new_process_changes_the_last_pid_the_guardians_look_compares() -> None:
    """A guardian's look walks the rank's tree only when a pid was given out since its last
    walk: every new process (and thread) takes one, so an unchanged last pid means nothing
    new is below the rank."""
    before = last_pid()
    assert before is not None and before.isdigit()
    child = subprocess.Popen(["true"])
    child.wait()
    assert last_pid() != before


def test_setsid_children_die_with_a_sigkilled_kernel(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite3"))
    out = tmp_path / "sleepers"
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    pids: list[int] = []
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        cell = CELL.format(out=out, wait=1.5)  # the guardian looks in the meantime
        code = (
            "%load_ext jupyter_distributed\n"
            f"get_ipython().run_cell_magic('distributed', '-n 1', {cell!r})"
        )
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
        kc.stop_channels()
        assert reply["content"]["status"] == "ok", reply["content"]
        pids = _sleepers(out)
        assert km.provisioner is not None
        os.kill(km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        assert _gone(pids), "a rank's setsid children outlived the SIGKILLed kernel"
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)
        _cleanup(pids)


def test_a_normal_stop_of_the_cluster_ends_setsid_children(tmp_path: Path) -> None:
    out = tmp_path / "sleepers"
    session = Session(Store(tmp_path / "history.sqlite3"))
    pids: list[int] = []
    try:
        spec = Spec(layout=Layout(procs_per_node=1))
        cell = CELL.format(out=out, wait=0)  # the stop may come before the guardian's next look
        session.run_cell(spec, cell, {}, view=CellView(out=io.StringIO()))
        pids = _sleepers(out)
        session.shutdown()
        assert _gone(pids), "a rank's setsid children outlived the stopped cluster"
    finally:
        session.shutdown()
        _cleanup(pids)
