"""Collapsed output and ``--output`` through a real IPython shell and real local ranks: the
same line of 8 ranks is shown once, lines that differ stay per rank, the history keeps every
rank's line, ``--output`` shows chosen ranks' lines with a note, ``--no-collapse`` is as before.

The window a line waits for the same line of other ranks is made long here (a group is shown as
soon as every rank wrote it or moved past it, so nothing waits for it): what is collapsed then
does not depend on how loaded the machine is."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed import collapse

pytestmark = pytest.mark.timeout(120)

RANKS = "-n 8 --oversubscribe"  # (8 ranks on a machine of few cores)


@pytest.fixture(autouse=True)
def _long_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collapse, "WINDOW", 60.0)


def _history(shell: Any) -> list[tuple[int, str]]:
    store = shell.user_ns["_jd_session"].store
    run_id = store.runs(limit=1)[0].id
    return [(line.rank, line.text) for line in store.logs(run_id, limit=1000)]


def _labelled(out: str, text: str) -> list[str]:
    """The labels (``rank 3``, ``ranks 0-7``) of each shown line whose text is ``text``."""
    return re.findall(rf"^\[(ranks? [0-9,-]+)\] {re.escape(text)}$", out, re.MULTILINE)


def test_eight_ranks_printing_the_same_line_show_it_once(shell: Any, capsys: Any) -> None:
    assert shell.run_cell(f"%%distributed {RANKS}\nprint('epoch 1 done')").success
    assert _labelled(capsys.readouterr().out, "epoch 1 done") == ["ranks 0-7"]
    assert sorted(_history(shell)) == [(r, "epoch 1 done") for r in range(8)]  # all 8 kept

    cell = "print('start')\nprint(f'loss {rank}')\nprint('end')"
    assert shell.run_cell(f"%%distributed {RANKS}\n{cell}").success
    out = capsys.readouterr().out
    assert _labelled(out, "start") == ["ranks 0-7"]  # every rank's first line
    for r in range(8):  # lines that differ stay per rank, each rank's in its order
        assert _labelled(out, f"loss {r}") == [f"rank {r}"]
        ends = [m.start() for m in re.finditer(r"^\[ranks? ([0-9,-]+)\] end$", out, re.M)]
        mine = [at for at in ends if r in _ranks(out[at:].split("]")[0])]
        assert len(mine) == 1, f"rank {r}'s end is shown {len(mine)} times"
        assert out.index("] start") < out.index(f"[rank {r}] loss {r}") < mine[0]
    assert len(_history(shell)) == 24

    assert shell.run_cell(f"%%distributed {RANKS} --no-collapse\nprint('epoch 1 done')").success
    assert sorted(_labelled(capsys.readouterr().out, "epoch 1 done")) == [
        f"rank {r}" for r in range(8)
    ]


def _ranks(label: str) -> set[int]:
    out: set[int] = set()
    for part in label.split(" ")[-1].split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def test_output_shows_the_chosen_ranks_lines_with_a_note(shell: Any, capsys: Any) -> None:
    cell = "print('same')\nprint(f'from {rank}')\nrank"
    assert shell.run_cell(f"%%distributed -n 4 --output 0,3\n{cell}").success
    captured = capsys.readouterr()
    assert _labelled(captured.out, "same") == ["ranks 0,3"]
    assert _labelled(captured.out, "from 0") == ["rank 0"]
    assert _labelled(captured.out, "from 3") == ["rank 3"]
    assert "from 1" not in captured.out and "from 2" not in captured.out
    assert all(f"Out[rank {r}]: {r}" in captured.out for r in range(4))  # results still show
    run_id = shell.user_ns["_jd_session"].store.runs(limit=1)[0].id
    assert (
        f"[jupyter-distributed] 4 line(s) of the ranks not in --output 0,3 were not shown; "
        f"the history has them: %distributed logs {run_id}"
    ) in captured.err
    assert len(_history(shell)) == 12  # every rank's lines (and results) are kept

    assert shell.run_cell(f"%%distributed -n 4 --output 0 --quiet\n{cell}").success
    captured = capsys.readouterr()
    assert "same" not in captured.out and "not shown" not in captured.err  # --quiet: nothing

    assert shell.run_cell("%%distributed -n 4 --output all\nprint('same')").success
    assert _labelled(capsys.readouterr().out, "same") == ["ranks 0-3"]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--output 4", "--output: rank 4 does not exist; ranks are 0-3"),
        ("--output x", "--output: 'x' is not a rank or a range like 2-3"),
        ("--output ,", "--output selects no rank; give ranks like 0,3, or use --quiet"),
    ],
)
def test_a_bad_output_is_a_one_line_error(shell: Any, flag: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        shell.run_cell_magic("distributed", f"-n 4 {flag}", "pass")
    assert not shell.user_ns["_jd_session"].live  # nothing was started
