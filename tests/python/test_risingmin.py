"""The least of values that only rise (each rank's latest line in the collapser): the same
answers as a scan of every value, whatever order the rises come in."""

from __future__ import annotations

import random

from jupyter_distributed.risingmin import RisingMin


def test_least_is_the_scan_of_every_value() -> None:
    rnd = random.Random(7)  # noqa: S311 (a test's repeatable order, not a secret)
    values = dict.fromkeys(range(50), -1.0)
    least = RisingMin(values)
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
