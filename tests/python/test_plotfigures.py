"""plotly figures in the notebook: ``%distributed compare`` (through a real kernel) and
``%distributed probe`` display ``application/vnd.plotly.v1+json`` above their tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from jupyter_distributed.history.store import RunRecord
from jupyter_distributed.plotfigures import (
    PLOTLY_MIME,
    bundle,
    compare_figure,
    probe_figures,
)
from jupyter_distributed.probe import assemble
from jupyter_distributed.scaling import RunRate

pytestmark = pytest.mark.timeout(300)

CELL = "import time\nfor step in range(6):\n    time.sleep(0.05)\n    report(samples=32)\n"


def _valid(figure: dict[str, Any]) -> None:
    """The figure is JSON, and plotly's own validation accepts it when plotly is installed."""
    json.dumps(figure)
    try:
        import plotly.graph_objects as go  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return
    go.Figure(figure)  # raises on a property plotly does not know


def test_compare_figure_is_measured_and_ideal_against_world_size() -> None:
    one = RunRate(RunRecord("a", "local", 1, [0]), 1, {0: 100.0})
    two = RunRate(RunRecord("b", "local", 2, [0, 1]), 2, {0: 80.0, 1: 80.0})
    none = RunRate(RunRecord("c", "local", 4, [0, 1, 2, 3]), 4, {})
    figure = compare_figure([one, two, none])
    assert figure is not None
    _valid(figure)
    measured, ideal = figure["data"]
    assert measured["x"] == [1, 2] and measured["y"] == [100.0, 160.0]
    assert measured["customdata"] == ["a", "b"]
    assert ideal["y"] == [100.0, 200.0]
    assert compare_figure([none]) is None
    shown = bundle(figure)
    assert shown[PLOTLY_MIME] is figure and "samples/s" in shown["text/plain"]


def test_probe_figures_are_one_z_matrix_and_the_all_reduce_curve() -> None:
    n = 256
    link = {"latency_us": 5.0, "bandwidth_gbs": 1.5}
    measured = [
        {
            "library": "gloo",
            "seconds": 1.0,
            "pairs": {f"{r}-{r + 1}": link} if r < n - 1 else {},
            "allreduce": [{"bytes": 1024, "busbw_gbs": 0.5}, {"bytes": 1 << 20, "busbw_gbs": 2.0}],
        }
        for r in range(n)
    ]
    heatmap, curve = probe_figures(assemble(measured, dict.fromkeys(range(n), "h")))
    _valid(heatmap)
    _valid(curve)
    [trace] = heatmap["data"]
    assert trace["type"] == "heatmap" and "text" not in trace and "%{z" in trace["hovertemplate"]
    z = trace["z"]
    assert len(z) == n and all(len(row) == n for row in z)
    assert z[3][4] == z[4][3] == 1.5 and z[3][3] is None and z[0][9] is None
    assert curve["data"][0]["x"] == [1024, 1 << 20]
    assert curve["layout"]["xaxis"]["type"] == "log"
    no_curve = assemble([{**m, "allreduce": []} for m in measured[:2]], {0: "h", 1: "h"})
    assert len(probe_figures(no_curve)) == 1


def _execute(kc: Any, code: str) -> list[dict[str, Any]]:
    """Run ``code``; the iopub messages it produced, in order."""
    messages: list[dict[str, Any]] = []
    reply = kc.execute_interactive(code, timeout=180, output_hook=messages.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    return messages


def test_compare_in_a_real_kernel_displays_a_plotly_figure_above_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite3"))
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        _execute(kc, "%load_ext jupyter_distributed")
        _execute(kc, "%%distributed -n 1\n" + CELL)
        _execute(kc, "%%distributed -n 2\n" + CELL)
        _execute(
            kc,
            "store = get_ipython().magics_manager.registry['DistributedMagics'].session.store\n"
            "ids = [r.id for r in sorted(store.runs(), key=lambda r: r.world_size)]",
        )
        messages = _execute(kc, "%distributed compare {ids[0]} {ids[1]}")
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    kinds = [m["msg_type"] for m in messages]
    shown = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]
    assert len(shown) == 1, kinds
    figure = shown[0][PLOTLY_MIME]
    assert shown[0]["text/plain"].startswith("<plotly figure: samples/s")
    assert figure["data"][0]["x"] == [1, 2] and all(y > 0 for y in figure["data"][0]["y"])
    # Above the text table, which follows as it did.
    table = next(
        i
        for i, m in enumerate(messages)
        if m["msg_type"] == "stream" and "efficiency" in m["content"]["text"]
    )
    assert kinds.index("display_data") < table
