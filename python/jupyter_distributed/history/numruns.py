"""Lists of numbers as the history writes them from layout 8 on (issue 26): a run of
consecutive numbers as its ends, ``[first, last]``, every other number as itself.

A run's ``ranks`` (``runs.ranks``) and a span's pids (``staterows``) are such lists: 1,000
to 10,000 numbers each cell, mostly one run (``[[0, 9999]]``). Written whole they took 2 of a
1,000-rank cell's 16 WAL pages and 44 of a 10,000-rank cell's 59. A list written before
layout 8 (numbers only) reads as it is, so :func:`unpack` reads both layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RUN_MIN = 3  # the fewest consecutive numbers written as a run (two take less as themselves)


def pack(numbers: Sequence[int | None]) -> list[Any]:
    """``numbers`` with each run of :data:`RUN_MIN` or more consecutive ones as
    ``[first, last]`` (anything not an int, such as a pid not known, as itself)."""
    out: list[Any] = []
    i, n = 0, len(numbers)
    while i < n:
        first = numbers[i]
        j = i + 1
        if type(first) is int:
            while j < n and numbers[j] == first + (j - i):
                j += 1
        if j - i >= RUN_MIN:
            out.append([first, numbers[j - 1]])
        else:
            out.extend(numbers[i:j])
        i = j
    return out


def unpack(packed: Sequence[Any]) -> list[Any]:
    """:func:`pack`'s list as the numbers it holds, in order; a list of numbers alone (an
    older layout's) is returned as it is. Raises ValueError on a run that is not two
    ints, first ≤ last."""
    if not any(type(v) is list for v in packed):
        return list(packed)
    out: list[Any] = []
    for v in packed:
        if type(v) is list:
            if len(v) != 2 or type(v[0]) is not int or type(v[1]) is not int or v[0] > v[1]:
                raise ValueError(f"not a run of numbers: {v!r}")
            out.extend(range(v[0], v[1] + 1))
        else:
            out.append(v)
    return out
