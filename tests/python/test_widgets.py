"""The inline view: widgets under a ``%%distributed --widget`` cell, kept in the saved notebook,
and the throughput series it plots."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_distributed.liveplot import MAX_RANK_LINES, Throughput
from jupyter_distributed.store import STORE_ENV

EXAMPLE = Path(__file__).parents[2] / "examples" / "06_inline_widget.ipynb"


def test_throughput_buckets_samples_per_second_per_rank() -> None:
    tp = Throughput()
    for i in range(30):  # 10 calls a second, 64 samples each, on two ranks
        tp.add(0, 100.0 + i / 10, 64)
        tp.add(1, 100.0 + i / 10, 32)
    x, lines = tp.series()
    assert x == [0.0, 1.0, 2.0]
    assert lines == {"rank 0": [640.0] * 3, "rank 1": [320.0] * 3, "total": [960.0] * 3}
    assert tp.latest() == 960.0
    fig = tp.figure()
    assert [t["name"] for t in fig["data"]] == ["rank 0", "rank 1", "total"]
    assert tp.svg().count("<polyline") == 3


def test_many_ranks_plot_total_and_mean_only() -> None:
    tp = Throughput()
    for r in range(MAX_RANK_LINES + 1):
        tp.add(r, 0.5, 10)
    assert list(tp.series()[1]) == ["total", "mean per rank"]


@pytest.mark.timeout(180)
def test_widget_state_is_saved_in_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "history.sqlite3"))
    nb = nbformat.read(EXAMPLE, as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, saved)  # type: ignore[no-untyped-call]
    nb = nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]

    cell = nb.cells[2]
    views = [
        o for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(views) == 1
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    box = state[views[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]]
    assert box["model_name"] == "VBoxModel"
    children = [state[ref.removeprefix("IPY_MODEL_")] for ref in box["state"]["children"]]
    header, strip, progress, plot = children
    assert "2 done" in header["state"]["value"]
    assert strip["state"]["value"].count('data-state="done"') == 2
    assert (progress["state"]["value"], progress["state"]["bar_style"]) == (1.0, "success")
    (output,) = plot["state"]["outputs"]
    figure = output["data"]["application/vnd.plotly.v1+json"]
    assert [t["name"] for t in figure["data"]] == ["rank 0", "rank 1", "total"]
    assert "<svg" in output["data"]["text/html"]
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert "[rank 1] rank 1 finished 20 steps" in text
    assert json.dumps(nb).count("IPY_MODEL_") >= 4
