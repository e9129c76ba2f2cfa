"""examples/06_sagemaker.ipynb through a real kernel, pointed at the local AWS API server by
configuration only (environment variables), and the magics with ``--backend sagemaker``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from .sagemaker_runtime import LocalSageMaker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = pytest.mark.timeout(300)


def _text(cell: Any) -> str:
    return "".join(
        o.get("text", "") or "".join(o.get("data", {}).get("text/plain", ""))
        for o in cell.get("outputs", [])
    )


def test_sagemaker_notebook_runs_against_local_server(configured: LocalSageMaker) -> None:
    before = len(configured.requests)
    nb = nbformat.read(EXAMPLES / "06_sagemaker.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    ).execute()
    everything = "\n".join(_text(c) for c in nb.cells if c.cell_type == "code")
    assert '"sagemaker_mpi_num_of_processes_per_host": "2"' in everything
    for r in range(4):
        assert f"[rank {r}] rank {r} of 4 on algo-{r // 2 + 1}" in everything
    assert "-> 14850" in everything
    assert "answers: [40, 41]" in everything
    error_cell = next(c for c in nb.cells if "raises-exception" in c.metadata.get("tags", []))
    errors = [o for o in error_cell.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "RunFailed"
    assert "rank 1" in errors[0].evalue and "ValueError" in errors[0].evalue
    assert len(configured.requests) == before + 3  # the dry run created nothing


def test_magics_with_sagemaker_backend(configured: LocalSageMaker, shell: Any) -> None:
    shell.run_cell("%%distributed --backend sagemaker --nodes 2 --pull v --no-wait\nv = rank * 2")
    session = shell.user_ns["_jd_session"]
    job = session.store.runs(limit=1)[0].external_id
    result = shell.run_cell(f"%distributed attach {job}")
    assert result.success and shell.user_ns["v"] == [0, 2]
    result = shell.run_cell("%distributed release")
    assert result.success
    bad = shell.run_cell("%%distributed --backend sagemaker --spot\n1")
    assert not bad.success and "--spot needs --max-wait" in str(bad.error_in_exec)
