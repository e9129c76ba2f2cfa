"""``examples/03_mpi4py.ipynb`` runs as it is, in a real kernel, on real mpirun ranks."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from .backend_cases import mpi_missing

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "03_mpi4py.ipynb"


@pytest.mark.skipif(bool(mpi_missing()), reason=f"mpi backend unavailable: {mpi_missing()}")
def test_mpi4py_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite"))
    nb = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = "\n".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "mpirun " in text  # the dry run shows the command line
    for r in range(4):
        assert f"[rank {r}] rank {r} of 4" in text
    assert "[rank 0] gathered" in text
    assert "pi ≈ 3.1415926535" in text
