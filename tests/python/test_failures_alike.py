"""Many ranks failing alike: listed once when the cell ends, and not one live line per rank."""

from __future__ import annotations

import io

from jupyter_distributed.display import LIVE_FAILURES, CellView
from jupyter_distributed.errors import RankFailure, RunFailed
from jupyter_distributed.events import ErrorEvent

TRACEBACK = ("Traceback (most recent call last):\n", "ValueError: bad\n")


def _failure(rank: int, evalue: str = "bad", host: str = "h0") -> RankFailure:
    return RankFailure(
        rank, t=float(rank), host=host, pid=100 + rank, ename="ValueError", evalue=evalue,
        traceback=(*TRACEBACK[:1], f"ValueError: {evalue}\n"),
    )  # fmt: skip


def test_failures_alike_are_listed_once_with_their_ranks() -> None:
    failures = [_failure(r, host=f"h{r % 2}") for r in range(12)]
    failures += [_failure(r, evalue="other") for r in (20, 21)] + [_failure(30, evalue="lone")]
    text = "\n".join(RunFailed(failures, run_id="r1")._render_traceback_())
    assert text.count("ValueError: bad") == 3  # the headline, the root's summary and traceback
    assert "--- [ranks 1-11] also: the same on 11 ranks (2 hosts)" in text
    assert "--- [ranks 20-21] also: 2 ranks (1 host) raised ValueError: other" in text
    assert text.count("ValueError: other") == 2  # that line, and its traceback once
    assert "--- [rank 30] also: rank 30 on h0 (pid 130) raised ValueError: lone" in text
    assert "(and 14 more ranks)" in text.splitlines()[0]


def test_a_cell_shows_the_first_failures_live_then_one_line() -> None:
    err = io.StringIO()
    view = CellView("r1", out=io.StringIO(), err=err)
    for rank in range(100):
        view.on_event(ErrorEvent("r1", _failure(rank)))
    view.flush()
    lines = err.getvalue().splitlines()
    assert len(lines) == LIVE_FAILURES + 1
    assert lines[0] == "[rank 0] rank 0 on h0 (pid 100) raised ValueError: bad"
    assert lines[-1] == (
        "[jupyter-distributed] more ranks failed: all are listed when the cell ends"
    )
