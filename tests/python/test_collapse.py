"""The collapsed form of many ranks' lines (:mod:`jupyter_distributed.collapse`), pure: the
clock is passed in."""

from __future__ import annotations

import pytest

from jupyter_distributed.collapse import Collapser, Run, label, ranks_brief, ranks_text


def _shown(runs: list[Run]) -> list[str]:
    shown = [f"{label(ranks)} {text}" for run in runs for ranks, text in run.lines()]
    assert "".join(run.render() for run in runs) == "".join(f"{s}\n" for s in shown)
    return shown


@pytest.mark.parametrize(
    ("ranks", "text"),
    [([3], "3"), ([0, 1, 2, 3, 5], "0-3,5"), ([7, 0, 6, 1], "0-1,6-7"), ([2, 4, 6], "2,4,6")],
)
def test_ranks_are_compressed_into_ranges(ranks: list[int], text: str) -> None:
    assert ranks_text(ranks) == text


def test_one_rank_is_labelled_as_today_several_as_ranks() -> None:
    assert label([2]) == "[rank 2]"
    assert label([1, 0]) == "[ranks 0-1]"


def test_the_same_line_of_every_rank_is_shown_once_as_soon_as_all_wrote_it() -> None:
    c = Collapser(range(8))
    for rank in range(7):
        c.add(rank, "stdout", ["epoch 1 done"], now=0.0)
        assert c.due(0.001) == []  # rank 7 may still write it
    c.add(7, "stdout", ["epoch 1 done"], now=0.002)
    assert _shown(c.due(0.002)) == ["[ranks 0-7] epoch 1 done"]
    assert not c


def test_a_line_waits_at_most_its_window() -> None:
    c = Collapser(range(4), window=0.1)
    c.add(0, "stdout", ["a warning"], now=0.0)
    c.add(1, "stdout", ["a warning"], now=0.05)
    assert c.due(0.099) == []
    assert _shown(c.due(0.1)) == ["[ranks 0-1] a warning"]
    c.add(2, "stdout", ["a warning"], now=0.11)  # too late to join: a line of its own
    assert _shown(c.due(0.22)) == ["[rank 2] a warning"]


def test_lines_that_differ_stay_per_rank() -> None:
    c = Collapser([0, 1])
    c.add(0, "stdout", ["loss 0.5"], now=0.0)
    c.add(1, "stdout", ["loss 0.7"], now=0.0)
    c.add(0, "stdout", ["next"], now=0.0)  # both moved past the first two lines
    assert _shown(c.due(0.0)) == ["[rank 0] loss 0.5", "[rank 1] loss 0.7"]
    assert _shown(c.drain()) == ["[rank 0] next"]


def test_streams_are_not_mixed() -> None:
    c = Collapser(None)
    c.add(0, "stdout", ["x"], now=0.0)
    c.add(1, "stderr", ["x"], now=0.0)
    assert [(run.stream, run.rank, run.joined) for run in c.drain()] == [
        ("stdout", 0, {}),
        ("stderr", 1, {}),
    ]


def test_each_ranks_order_is_kept() -> None:
    """Rank 1 writes a then b; rank 0 wrote b first: rank 1's b cannot join rank 0's b (it
    would show before rank 1's a), so it joins nothing older than its own a."""
    c = Collapser([0, 1])
    c.add(0, "stdout", ["b", "a"], now=0.0)
    c.add(1, "stdout", ["a", "b"], now=0.0)
    shown = _shown(c.drain())
    assert shown == ["[rank 0] b", "[ranks 0-1] a", "[rank 1] b"]
    for rank in (0, 1):  # each rank's own lines, in its own order
        mine = [s.split("] ")[1] for s in shown if str(rank) in s.split("]")[0]]
        assert mine == (["b", "a"] if rank == 0 else ["a", "b"])


def test_a_rank_repeating_a_line_joins_the_others_repeats_in_turn() -> None:
    c = Collapser([0, 1])
    c.add(0, "stdout", ["tick", "tick"], now=0.0)
    c.add(1, "stdout", ["tick", "tick"], now=0.0)
    assert _shown(c.due(0.0)) == ["[ranks 0-1] tick", "[ranks 0-1] tick"]


def test_a_rank_that_ended_is_not_waited_for() -> None:
    c = Collapser([0, 1, 2])
    c.add(0, "stdout", ["bye"], now=0.0)
    c.add(1, "stdout", ["bye"], now=0.0)
    assert c.due(0.0) == []
    c.done(2)
    assert _shown(c.due(0.0)) == ["[ranks 0-1] bye"]


def test_new_lines_are_paid_from_the_budget_joining_lines_are_free() -> None:
    c = Collapser([0, 1])
    left, dropped = c.add(0, "stdout", ["abcd", "efgh"], now=0.0, budget=12, cost=3)
    assert (left, dropped) == (5, 1)  # "abcd" cost 4 + 3; "efgh" did not fit
    left, dropped = c.add(1, "stdout", ["abcd"], now=0.0, budget=0, cost=3)
    assert (left, dropped) == (0, 0)  # joined rank 0's line: nothing to pay
    assert _shown(c.drain()) == ["[ranks 0-1] abcd"]


def test_a_line_alone_keeps_its_ranks_order_and_collapses_with_nothing() -> None:
    c = Collapser([0, 1])
    c.add(0, "stdout", ["done"], now=0.0)
    c.add(0, "result", ["42"], now=0.0, alone=True)
    c.add(1, "stdout", ["done"], now=0.0)
    c.add(1, "result", ["42"], now=0.0, alone=True)
    assert _shown(c.due(0.0)) == ["[ranks 0-1] done", "[rank 0] 42"]
    assert _shown(c.drain()) == ["[rank 1] 42"]  # (rank 0 may still write)


def test_after_a_line_of_its_own_a_rank_joins_nothing_held_before_it() -> None:
    c = Collapser([0, 1])
    c.add(0, "stdout", ["start", "mine 0", "end"], now=0.0)
    c.add(1, "stdout", ["start", "mine 1", "end"], now=0.0)
    assert _shown(c.drain()) == [
        "[ranks 0-1] start",
        "[rank 0] mine 0",
        "[rank 0] end",  # rank 1's "end" would show before its "mine 1"
        "[rank 1] mine 1",
        "[rank 1] end",
    ]


def test_equal_lines_written_seconds_apart_stay_per_rank_though_they_arrive_together() -> None:
    # Two ranks print "end" 4 s apart; rank 0's line waited behind a pdb prompt and arrives
    # with rank 1's: by the ranks' own clocks they are two lines, not one.
    c = Collapser(range(2))
    c.add(0, "stdout", ["end"], now=10.0, times=[1000.0])
    c.add(1, "stdout", ["end"], now=10.001, times=[1004.0])
    c.done(0)
    c.done(1)
    assert _shown(c.due(10.002)) == ["[rank 0] end", "[rank 1] end"]


def test_equal_lines_written_together_collapse_though_one_arrives_late() -> None:
    c = Collapser(range(2))
    c.add(0, "stdout", ["step", "end"], now=10.0, times=[1000.0, 1000.01])
    c.add(1, "stdout", ["end"], now=10.05, times=[1000.03])
    assert _shown(c.due(10.05)) == ["[rank 0] step", "[ranks 0-1] end"]


def test_ranks_brief_keeps_short_lists_and_bounds_long_ones() -> None:
    assert ranks_brief([0, 1, 2, 5]) == ranks_text([0, 1, 2, 5]) == "0-2,5"
    scattered = range(0, 100, 2)
    assert ranks_brief(scattered, most=4) == "0,2,…,96,98 (50 in all)"
    assert ranks_text(scattered).count(",") == 49  # the exact form stays exact
