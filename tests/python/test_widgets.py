"""The inline view: the widget under a ``%%distributed --widget`` cell holds the run in the wire
format (the lab extension draws it with the panel's code), and its state is kept in the saved
notebook."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_distributed.history.store import STORE_ENV

EXAMPLE = Path(__file__).parents[2] / "examples" / "07_inline_widget.ipynb"


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
    assert (box["model_name"], box["model_module"]) == ("RunModel", "jupyter-distributed")
    assert (box["model_module_version"], box["state"]["_view_name"]) == ("^0.1.0", "RunView")
    run, ranks, items = box["state"]["run"], box["state"]["ranks"], box["state"]["events"]
    assert run["ranks"] == [0, 1] and run["world_size"] == 2
    assert [r["rank"] for r in ranks] == [0, 1]
    events = [item["event"] for item in items]
    assert all(e["run_id"] == run["id"] for e in events)
    seqs = [item["seq"] for item in items]
    assert seqs == sorted(seqs)
    print([(e["kind"], e.get("state"), e.get("rank")) for e in events if e["kind"] != "metric"])
    last_state = {e["rank"]: e["state"] for e in events if e["kind"] == "rank"}
    assert last_state == {0: "done", 1: "done"}
    assert [e["state"] for e in events if e["kind"] == "run"][-1] == "completed"
    samples = {e["rank"] for e in events if e["kind"] == "metric" and "samples" in e["values"]}
    assert samples == {0, 1}
    assert not [e for e in events if e["kind"] == "output"]  # the lines are under the cell
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert "[rank 1] rank 1 finished 20 steps" in text
