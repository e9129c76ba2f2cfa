"""Through a real Jupyter kernel: the quickstart notebook, and no worker left behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from jupyter_distributed.pids import pid_alive

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(path))
    return path


def _text(cell: Any) -> str:
    return "".join(
        o.get("text", "") or "".join(o.get("data", {}).get("text/plain", ""))
        for o in cell.get("outputs", [])
    )


def test_quickstart_notebook_runs_as_it_is(store_env: Path) -> None:
    nb = nbformat.read(EXAMPLES / "01_quickstart.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    ).execute()
    texts = [_text(c) for c in nb.cells if c.cell_type == "code"]
    everything = "\n".join(texts)
    for r in range(4):
        assert f"[rank {r}] hello from rank {r} of 4" in everything
        assert f"[rank {r}] {r} {[i * i for i in range(r + 1)]}" in everything
    assert "-> 9900" in everything
    error_cell = next(c for c in nb.cells if "raises-exception" in c.metadata.get("tags", []))
    errors = [o for o in error_cell.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "RunFailed"
    assert "rank 2" in errors[0].evalue and "ValueError" in errors[0].evalue
    assert "[rank 1] only some ranks" not in everything
    assert "[rank 2] only some ranks run this: 2" in everything


def _start_ranks(km: KernelManager, n: int) -> list[int]:
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    code = (
        f"%load_ext jupyter_distributed\n"
        f"get_ipython().run_cell_magic('distributed', '-n {n} --pull pid', "
        f"'import os\\npid = os.getpid()')\nprint('PIDS', pid)"
    )
    reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: outputs.append(msg))
    assert reply["content"]["status"] == "ok", reply["content"]
    text = "".join(m["content"].get("text", "") for m in outputs)
    kc.stop_channels()
    line = next(ln for ln in text.splitlines() if ln.startswith("PIDS"))
    return [int(p) for p in line[5:].strip("[] ").split(",")]


outputs: list[Any] = []


def _wait_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if pid_alive(p)]


@pytest.mark.parametrize("how", ["shutdown", "restart", "sigkill"])
def test_no_worker_outlives_its_kernel(store_env: Path, how: str) -> None:
    outputs.clear()
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    try:
        pids = _start_ranks(km, 2)
        assert len(pids) == 2 and all(pid_alive(p) for p in pids)
        if how == "shutdown":
            km.shutdown_kernel(now=False)
        elif how == "restart":
            km.restart_kernel(now=False)
        else:
            assert km.provisioner is not None
            os.kill(km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        assert _wait_gone(pids) == []
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)
