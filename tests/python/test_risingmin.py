"""The least of values that only rise (each rank's latest line in the collapser): the same
answers as a scan of every value, whatever order the rises come in."""

from __future__ import annotations

import io
import random

from jupyter_distributed.display import CellView
from jupyter_distributed.events import RankState, RankStates
from jupyter_distributed.risingmin import RisingMin


def test_least_is_the_scan_of_every_value() -> None:
    rnd = random.Random(7)  # noqa: S311 (a test's repeatable order, not a secret)
    values = dict.fromkeys(range(50), -1.0)
    least = RisingMin(frozenset(values))  # (the keys given are kept: never changed after)
    for _ in range(5_000):  # (enough rises to rebuild the heap several times)
        key = rnd.randrange(60)  # (keys past 50 are new ones)
        value = rnd.uniform(-1, 100)
        values[key] = max(values.get(key, value), value)  # (a lower value is ignored)
        least.rise(key, value)
        assert least.least(float("inf")) == min(values.values())
        assert least.get(key, -2) == values[key]


def test_no_key_gives_the_default() -> None:
    assert RisingMin([]).least(float("inf")) == float("inf")
    assert RisingMin([]).get(3, -1) == -1


def test_a_cells_view_of_many_ranks_is_made_without_an_entry_per_rank() -> None:
    """Each cell's view of a cluster makes one (its collapser's ranks): the ranks given start
    at ``start`` without an entry each (before: 10,000 entries and a heap, ~2 ms per cell)."""
    ranks = frozenset(range(10_000))
    least = RisingMin(ranks)
    assert not least._values and not least._heap  # nothing per rank until it rises
    assert least.least(float("inf")) == -1.0 and least.get(9_999, -2) == -1.0
    assert least.get(10_000, -2) == -2  # (not one of them)
    for rank in range(10_000):
        least.rise(rank, 3.0 if rank else 5.0)
    assert least.least(float("inf")) == 3.0
    least.rise(12_345, 1.0)  # a new key
    assert least.least(float("inf")) == 1.0 and least.get(12_345, -2) == 1.0


def test_spans_raised_to_the_top_give_the_scans_answers() -> None:
    """A node's ranks' ends raise a span at once (:meth:`RisingMin.top`); whatever the order
    of rises and spans, the answers are a scan's of every value, for a range and a set of
    keys alike."""
    inf = float("inf")
    for keys in (range(40), frozenset(range(0, 80, 2))):
        rnd = random.Random(11)  # noqa: S311 (a test's repeatable order, not a secret)
        values = dict.fromkeys(keys, -1.0)
        least = RisingMin(keys)
        for _ in range(3_000):
            if rnd.random() < 0.1:  # a span's ranks end
                first = rnd.randrange(-5, 90)
                last = first + rnd.randrange(0, 12)
                for k in range(first, last + 1):
                    values[k] = inf
                least.top(first, last)
            else:
                key, value = rnd.randrange(90), rnd.uniform(-1, 100)
                values[key] = max(values.get(key, value), value)
                least.rise(key, value)
            assert least.least(-7.0) == min(values.values())
            probe = rnd.randrange(-5, 95)
            assert least.get(probe, -2) == values.get(probe, -2)
            if rnd.random() < 0.01:  # the cell ends: every key, then a new cell's view
                least.top(-10, 100)
                assert least.least(-7.0) == inf and least.get(3, -2) == inf
                values, least = dict.fromkeys(keys, -1.0), RisingMin(keys)


def test_a_cells_ends_at_ten_thousand_ranks_cost_its_view_no_entry_per_rank() -> None:
    """A cell's view (shown, not --quiet) takes its nodes' ends as spans: no entry per rank
    (before: 10,000 rises and heap pushes per cell, ~4 ms), and lines wait for no ended rank."""
    ranks = tuple(range(10_000))
    spans = [(f, f + 124, (RankState.DONE,), "h", tuple(range(f, f + 125))) for f in ranks[::125]]
    view = CellView(ranks=ranks, out=io.StringIO(), err=io.StringIO())
    view.on_events([RankStates("r", 1.0, (), spans)])
    held = view.lines.held
    assert held is not None and not held._last._values and not held._last._heap
    assert held._last.least(-1.0) == float("inf")  # every rank ended: no line waits
