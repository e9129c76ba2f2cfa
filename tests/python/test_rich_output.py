"""Notebook-native output from ranks, through a real kernel (nbclient): rich displays, figures,
progress bars, stdin and the always-distributed mode."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from traitlets.config import Config

from jupyter_distributed.figures import kernel_figures
from jupyter_distributed.protocol.figures import FigureConfig

pytestmark = pytest.mark.timeout(300)

TINY_PNG = (  # 1×1
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture
def store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(path))
    return path


def _run(*sources: str) -> list[Any]:
    nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    nb.cells = [nbformat.v4.new_code_cell("%load_ext jupyter_distributed")]  # type: ignore[no-untyped-call]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]  # type: ignore[no-untyped-call]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return [[o for o in c.outputs if not _startup(o)] for c in nb.cells[1:]]


def _startup(output: Any) -> bool:
    """The cluster's start-up line (emptied once it is ready; tests/python/test_wait_progress.py
    checks it): these tests look at the ranks' own outputs."""
    return bool(output.get("metadata", {}).get("jupyter_distributed", {}).get("startup"))


def _rich(outputs: list[Any], kind: str = "display_data") -> list[Any]:
    return [o for o in outputs if o.output_type in (kind, "update_display_data")]


def _line_at(text: str, rank: int, line: str) -> int:
    """Where ``rank``'s ``line`` is shown in ``text``: tagged ``[rank R]``, or once for several
    ranks, ``[ranks 0-1]`` (identical lines are collapsed); -1 if it is not."""
    for found in re.finditer(rf"\[ranks? ([0-9,-]+)\] {re.escape(line)}\n", text):
        for part in found[1].split(","):
            low, _, high = part.partition("-")
            if int(low) <= rank <= int(high or low):
                return found.start()
    return -1


def _text(outputs: list[Any]) -> str:
    return "".join(
        o.get("text", "") or "".join(o.get("data", {}).get("text/plain", "")) for o in outputs
    )


def test_display_bundles_arrive_as_display_data_labelled_by_rank(store_env: Path) -> None:
    cell = f"""%%distributed -n 2
from IPython.display import HTML, Image, display
import base64
print("before")
display(HTML(f"<b>rank {{rank}}</b>"))
display(Image(data=base64.b64decode("{TINY_PNG}")))
plotly = {{"data": [{{"y": [rank, 1]}}]}}
display({{"application/vnd.plotly.v1+json": plotly, "text/plain": "fig"}}, raw=True)
"""
    (outputs,) = _run(cell)
    shown = _rich(outputs)
    for r in range(2):
        mine = [o for o in shown if o.metadata["jupyter_distributed"]["rank"] == r]
        assert [sorted(o.data) for o in mine] == [
            ["text/html", "text/plain"],
            ["image/png", "text/plain"],
            ["application/vnd.plotly.v1+json", "text/plain"],
        ]
        assert mine[0].data["text/html"] == f"<b>rank {r}</b>"
        assert f"[rank {r}] image/png 1×1" in _text(outputs)
        # the rank's earlier print is shown before its first display
        text = _text(outputs)
        assert 0 <= _line_at(text, r, "before") < text.index(f"[rank {r}] text/html")


def test_update_display_replaces_a_ranks_display_in_place(store_env: Path) -> None:
    cell = """%%distributed -n 2
from IPython.display import HTML, display, update_display
handle = display(HTML("<i>first</i>"), display_id=True)
handle.update(HTML(f"<i>rank {rank} updated</i>"))
display(HTML("<i>named</i>"), display_id="status")
update_display(HTML("<i>named, updated</i>"), display_id="status")
"""
    (outputs,) = _run(cell)
    shown = [o for o in outputs if o.output_type == "display_data"]  # updates applied in place
    for r in range(2):
        mine = [
            o.data["text/html"] for o in shown if o.metadata["jupyter_distributed"]["rank"] == r
        ]
        assert mine == [f"<i>rank {r} updated</i>", "<i>named, updated</i>"]


def _mine(outputs: list[Any], rank: int) -> list[Any]:
    """The rank's displays as nbclient leaves them (updates applied in place)."""
    return [
        o
        for o in outputs
        if o.output_type == "display_data"
        and (o.metadata.get("jupyter_distributed", {}).get("rank") == rank or not o.data)
    ]


def test_clear_output_on_a_rank_clears_that_ranks_displays(store_env: Path) -> None:
    now = """%%distributed -n 2
from IPython.display import HTML, display, clear_output
display(HTML(f"a{rank}"))
display(HTML(f"b{rank}"))
if rank == 0:
    clear_output()
    display(HTML("c0"))
"""
    wait = """%%distributed -n 2
import time
from IPython.display import HTML, display, clear_output
from tqdm.auto import trange
for _ in trange(20, mininterval=0):
    time.sleep(0.01)
for i in range(6):
    clear_output(wait=True)
    display(HTML(f"<i>frame {i} of rank {rank}</i>"))
    time.sleep(0.05)
"""
    cleared, frames = _run(now, wait)
    html = [o.data.get("text/html") for o in cleared if o.output_type == "display_data"]
    # rank 0's two displays were emptied in place; its next display took the first place
    assert sorted(map(str, html)) == sorted(["c0", "None", "a1", "b1"])
    assert [o.data for o in cleared if o.output_type == "display_data" and not o.data] == [{}]
    shown = [o for o in frames if o.output_type == "display_data"]
    for r in range(2):
        # each rank's progress line and earlier frames were emptied; one place shows the last
        last = [o for o in shown if o.data.get("text/html") == f"<i>frame 5 of rank {r}</i>"]
        assert len(last) == 1
        assert not any(f"frame {i} of rank {r}" in str(o.data) for o in shown for i in range(5))
        assert not any(f"[rank {r}]" in o.data.get("text/plain", "") for o in shown)  # no bar
        assert _text(frames).count(f"[rank {r}] text/html") == 1  # one label, not one per frame
    assert len(shown) == 2 * 2  # per rank: its emptied bar, one place for the frames


def test_rich_last_expression_display_only_and_the_cap(store_env: Path) -> None:
    cell = """%%distributed -n 2 --display 1
class T:
    def _repr_html_(self):
        return f"<table><tr><td>{rank}</td></tr></table>"
    def __repr__(self):
        return f"T({rank})"
T()
"""
    big = """%%distributed -n 1 --display-max-mb 0.01
from IPython.display import HTML, display
display(HTML("x" * 100_000))
"""
    result, capped = _run(cell, big)
    rich = _rich(result, "display_data")
    assert [o.metadata["jupyter_distributed"]["rank"] for o in rich] == [1]
    assert rich[0].data["text/html"] == "<table><tr><td>1</td></tr></table>"
    assert "Out[rank 1]:" in _text(result) and "T(1)" not in _text(result).replace(
        rich[0].data["text/plain"], ""
    )
    assert "Out[rank 0]: T(0)" in _text(result)  # not shown rich: its text result stays
    note = _text(capped)
    assert "over the cap" in note and "--display-max-mb" in note
    assert not any("text/html" in o.get("data", {}) for o in capped)


def test_matplotlib_show_and_open_figures_arrive_as_png(store_env: Path) -> None:
    cell = """%%distributed -n 1
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()
plt.figure()
plt.plot([3, 2, 1]);
"""
    (outputs,) = _run(cell)
    pngs = [o for o in _rich(outputs) if "image/png" in o.data]
    assert len(pngs) == 2
    assert "Figure size" in pngs[0].data["text/plain"]


def test_figure_settings_are_read_from_the_shell_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib_inline.config import InlineBackend

    before = getattr(InlineBackend, "_instance", None)
    monkeypatch.setattr(InlineBackend, "initialized", lambda: False)
    config = Config()
    config.InlineBackend.figure_format = "svg"
    config.InlineBackend.rc = {"figure.figsize": (2.0, 1.0)}
    shell = type("Shell", (), {"config": config})()
    assert kernel_figures(shell) == FigureConfig(("svg",), {"figure.figsize": [2.0, 1.0]})
    shell.config = Config()
    assert kernel_figures(shell) == FigureConfig()
    assert getattr(InlineBackend, "_instance", None) is before  # the singleton is not made
    from IPython.core.interactiveshell import InteractiveShell

    # Outside IPython (no shell made in this process: other tests may have made one).
    monkeypatch.setattr(InteractiveShell, "initialized", classmethod(lambda cls: False))
    assert kernel_figures() is None


def test_inline_backend_settings_reach_the_ranks_figures(store_env: Path) -> None:
    draw = """%%distributed -n 1
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()
"""
    outputs = _run(
        "%config InlineBackend.figure_formats = {'svg', 'retina'}",
        "%config InlineBackend.rc = {'figure.figsize': (2.0, 1.0), 'figure.dpi': 50}",
        draw,
        "%config InlineBackend.rc = {'figure.figsize': (2.0, 1.0), 'figure.dpi': 20}",
        "%config InlineBackend.figure_format = 'png'",
        draw,
    )
    (figure,) = [o for o in _rich(outputs[2]) if "text/plain" in o.data]
    assert sorted(figure.data) == ["image/png", "image/svg+xml", "text/plain"]
    assert figure.data["image/svg+xml"].lstrip().startswith(("<?xml", "<svg"))
    assert figure.data["text/plain"] == "<Figure size 100x50 with 1 Axes>"  # the rc's size
    width = figure.metadata["image/png"]["width"]  # retina: drawn twice as large, shown at 1×
    assert 0 < width <= 110
    (later,) = [o for o in _rich(outputs[5]) if "text/plain" in o.data]
    assert sorted(later.data) == ["image/png", "text/plain"]
    assert later.data["text/plain"] == "<Figure size 40x20 with 1 Axes>"  # the rc changed


def test_tqdm_redraws_in_place_and_ends_at_100_percent(store_env: Path) -> None:
    cell = """%%distributed -n 2
import time
from tqdm.auto import trange
for i in trange(300, mininterval=0.05):
    time.sleep(0.004)
print("after")
"""
    (outputs,) = _run(cell)
    lines = [o for o in outputs if o.output_type == "stream"]
    progress = [o for o in outputs if o.output_type in ("display_data", "update_display_data")]
    text = _text(outputs)
    assert "\r" not in text
    assert sum("%|" in o.get("text", "") for o in lines) <= 2  # at most a finished short bar
    for r in range(2):
        mine = [o for o in progress if f"[rank {r}]" in o.data["text/plain"]]
        assert mine, f"rank {r} showed no live bar"
        assert "100%" in mine[-1].data["text/plain"] and "300/300" in mine[-1].data["text/plain"]
        assert sum(o.output_type == "display_data" for o in mine) == 1  # one line, updated
    assert len(progress) <= 2 * 20  # updates at most 5 per second per rank
    assert _line_at(text, 0, "after") >= 0


def test_input_fails_at_once_with_what_to_do(store_env: Path) -> None:
    cell = '%%distributed -n 1\ntry:\n    input("name? ")\nexcept Exception as e:\n    print(e)\n'
    (outputs,) = _run(cell)
    assert "[rank 0] ranks have no stdin; pass values with --push" in _text(outputs)


def test_distributed_on_runs_every_cell_on_the_ranks_until_off(store_env: Path) -> None:
    on, first, magic, second, off, local = _run(
        "%distributed on -n 2",
        "x = rank * 10",
        "%distributed status",
        "print(x + 1)",
        "%distributed off",
        "print('kernel', 'x' in dir())",
    )
    assert "distributed on" in _text(on) and "-n 2" in _text(on)
    assert "[distributed on: -n 2" in _text(first)
    assert "cluster" in _text(magic).lower() and "[rank" not in _text(magic)
    assert "[rank 0] 1" in _text(second) and "[rank 1] 11" in _text(second)
    assert "cells run in the kernel" in _text(off)
    assert _text(local).strip() == "kernel False"


def test_example_notebook_shows_a_figure_a_table_and_progress(store_env: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    nb = nbformat.read(examples / "08_rich_output.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(examples)}}
    ).execute()
    figure, table, progress = [c.outputs for c in nb.cells if c.cell_type == "code"][1:]
    assert sum("image/png" in o.get("data", {}) for o in figure) == 2
    tables = [o for o in table if "text/html" in o.get("data", {})]
    assert len(tables) == 1 and "<td>world_size</td><td>2</td>" in tables[0].data["text/html"]
    bars = [o.data["text/plain"] for o in _rich(progress)]
    for r in range(2):
        assert any(f"[rank {r}] rank {r}: 100%" in b for b in bars)
