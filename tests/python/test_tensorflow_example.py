"""``examples/09_tensorflow.ipynb`` runs as it is, in a real kernel, on real TensorFlow servers
(skipped without TensorFlow)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (make test installs it)")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "09_tensorflow.ipynb"
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def test_09_tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite3"))
    source = str(NOTEBOOK.parents[1] / "python")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=400, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    out = "\n".join(
        o.get("text", "") or "".join(o.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        for o in cell.get("outputs", [])
    )
    assert "[rank 0] 0 ps 0 True" in out
    assert "[rank 2] 2 worker 1 True" in out
    assert "ParameterServerStrategy over 1 ps and 2 workers" in out
    assert "loss " in out  # (the notebook asserts it is below 1e-3)
    assert "grpc" not in out.lower() and "Connection refused" not in out
    assert "rank 0 and rank 1 hold the same weights" in out  # multi-worker model.fit
