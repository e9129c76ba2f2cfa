"""A message's lines (:class:`OutputLines`) under the cell: shown in order in one pass, rate
limited line by line with every line not shown counted, and one by one for a view that
watches every event."""

from __future__ import annotations

import io

import pytest

from jupyter_distributed import cellstreams
from jupyter_distributed.display import CellView
from jupyter_distributed.events import (
    Event,
    OutputEvent,
    OutputLines,
    RankEvent,
    RankState,
    Stream,
)


def _lines(rank: int, stream: Stream, texts: list[str]) -> OutputLines:
    return OutputLines("r", rank, stream, [(1.0 + i, t) for i, t in enumerate(texts)])


def test_lines_are_shown_tagged_in_order_per_stream() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = CellView("r", out, err)
    view.on_events(
        [
            _lines(0, Stream.STDOUT, ["a", "", "b"]),
            _lines(1, Stream.STDERR, ["oops"]),
            OutputEvent("r", 1, 2.0, Stream.RESULT, "42"),
            _lines(1, Stream.STDOUT, ["c"]),
        ]
    )
    view.finish()
    assert out.getvalue() == "[rank 0] a\n[rank 0] \n[rank 0] b\nOut[rank 1]: 42\n[rank 1] c\n"
    assert err.getvalue() == "[rank 1] oops\n"


@pytest.mark.parametrize("ranks", [[0], [0, 1]], ids=["one rank", "collapsing"])
def test_lines_past_the_rate_limit_are_counted_not_shown(
    monkeypatch: pytest.MonkeyPatch, ranks: list[int]
) -> None:
    monkeypatch.setattr(cellstreams, "BYTES_PER_SECOND", 0)
    monkeypatch.setattr(cellstreams, "BURST_BYTES", 100)
    out = io.StringIO()
    view = CellView("r", out, io.StringIO(), ranks=ranks)
    texts = ["x" * 20, "y" * 70, "z", "w" * 45, "v"]  # each costs 10 more: "[rank 0] " "\n"
    view.on_events([_lines(0, Stream.STDOUT, texts), _lines(0, Stream.STDOUT, ["u"] * 50)])
    view.on_event(RankEvent("r", 1, 2.0, RankState.DONE))  # (no line waits for rank 1 then)
    view.flush()
    assert out.getvalue() == "[rank 0] " + "x" * 20 + "\n[rank 0] z\n[rank 0] " + "w" * 45 + "\n"
    assert view.suppressed == 2 + 50  # "y"*70 did not fit, "v" and the "u"s came too late


def test_a_view_that_watches_every_event_gets_each_line() -> None:
    seen: list[Event] = []

    class Watching(CellView):
        def on_event(self, event: Event) -> None:
            seen.append(event)
            super().on_event(event)

    out = io.StringIO()
    Watching("r", out, io.StringIO()).on_events([_lines(2, Stream.STDOUT, ["a", "b"])])
    assert seen == [
        OutputEvent("r", 2, 1.0, Stream.STDOUT, "a"),
        OutputEvent("r", 2, 2.0, Stream.STDOUT, "b"),
    ]


def test_output_hides_other_ranks_lines_before_the_rate_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cellstreams, "BYTES_PER_SECOND", 0)
    monkeypatch.setattr(cellstreams, "BURST_BYTES", 30)
    out, err = io.StringIO(), io.StringIO()
    view = CellView("r", out, err, output_ranks=[0], ranks=[0, 1])
    view.on_events([_lines(1, Stream.STDOUT, ["y" * 50] * 3), _lines(0, Stream.STDOUT, ["x" * 15])])
    view.finish()
    assert out.getvalue() == "[rank 0] " + "x" * 15 + "\n"  # rank 1's lines spent no tokens
    assert err.getvalue() == (
        "[jupyter-distributed] 3 line(s) of the ranks not in --output 0 were not shown; "
        "the history has them: %distributed logs r\n"
    )


def test_a_rate_limited_cell_ends_with_each_cut_ranks_last_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cellstreams, "BYTES_PER_SECOND", 0)
    monkeypatch.setattr(cellstreams, "BURST_BYTES", 200)
    out, err = io.StringIO(), io.StringIO()
    view = CellView("r", out, err, ranks=[0, 1, 2])
    view.on_events([_lines(2, Stream.STDOUT, ["quiet"])])  # (shown: not cut, not repeated)
    for rank in (0, 1):  # each floods: most of its lines, its last ones included, are cut
        view.on_events([_lines(rank, Stream.STDERR, [f"{rank} noise {i}" for i in range(100)])])
        view.on_event(OutputEvent("r", rank, 2.0, Stream.STDERR, f"{rank} done"))
    for rank in (0, 1, 2):
        view.on_event(RankEvent("r", rank, 3.0, RankState.DONE))
    view.finish()
    shown = err.getvalue().splitlines()
    tail = shown.index("[jupyter-distributed] the last lines of rank(s) 0-1:")
    assert shown[tail + 1 : tail + 11] == [
        *(f"[rank 0] 0 noise {i}" for i in range(96, 100)),
        "[rank 0] 0 done",
        *(f"[rank 1] 1 noise {i}" for i in range(96, 100)),
        "[rank 1] 1 done",
    ]
    assert out.getvalue() == "[rank 2] quiet\n"
    shown_before = sum(line.startswith("[rank ") for line in shown[:tail])
    assert shown[-1] == (
        f"[jupyter-distributed] {202 - shown_before} line(s) were not shown to keep the "
        "notebook responsive; the history has all 203 lines: %distributed logs r"
    )


def test_a_cell_the_limit_did_not_cut_shows_its_lines_once() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = CellView("r", out, err, ranks=[0])
    view.on_events([_lines(0, Stream.STDOUT, [f"line {i}" for i in range(20)])])
    view.finish()
    assert out.getvalue() == "".join(f"[rank 0] line {i}\n" for i in range(20))
    assert err.getvalue() == ""
