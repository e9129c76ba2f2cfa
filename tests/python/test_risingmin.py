"""The least of values that only rise (each rank's latest line in the collapser): the same
answers as a scan of every value, whatever order the rises come in."""

from __future__ import annotations

import random

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
