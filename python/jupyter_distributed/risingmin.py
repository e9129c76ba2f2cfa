"""The least of many values that only rise: each rank's latest line in :mod:`.collapse`.

A scan of every value per question costs O(ranks): at 10,000 ranks behind 1,250 relays the
cell's view asked it once per relay's batch, ~1 ms each. Here a rise costs O(log n) (a heap
entry) and a question pops only the entries that a later rise made stale.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Collection, Hashable

_SLACK = 4  # the heap is rebuilt from the values when it holds this many entries per key


class RisingMin:
    """Values by key, each of which only rises (a lower value given is ignored). The ``keys``
    given (distinct, e.g. a set or a ``range``; kept, never copied or changed) start at
    ``start`` without an entry each: a cell's view of 10,000 ranks is made in O(1), not
    10,000 entries and a heap per cell (~2 ms at 10,000 ranks); a key gets its entry when it
    first rises. :meth:`top` raises a span of int keys to the top (+inf) at once (a node's
    ranks' ends: O(1) for keys without an entry where ``keys`` is a ``range``)."""

    def __init__(self, keys: Collection[Hashable], start: float = -1.0) -> None:
        self._keys, self._start = keys, start
        self._unrisen = len(keys)  # given keys still at start (none has an entry yet)
        self._values: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._top_firsts: list[int] = []  # spans of int keys at the top (sorted, disjoint)
        self._top_lasts: list[int] = []

    def get(self, key: Hashable, default: float) -> float:
        if self._top_firsts and self._topped(key):
            return _TOP
        value = self._values.get(key)
        if value is not None:
            return value
        return self._start if key in self._keys else default

    def rise(self, key: Hashable, value: float) -> None:
        """``key``'s value is ``value`` now (a new key is added)."""
        if self._top_firsts and self._topped(key):
            return
        old = self._values.get(key)
        if old is None and key in self._keys:
            if value <= self._start:
                return
            self._unrisen -= 1  # (its first rise: an entry from now on)
        elif old is not None and value <= old:
            return
        self._values[key] = value
        heapq.heappush(self._heap, (value, id(key), key))
        if len(self._heap) > _SLACK * len(self._values) + 64:
            self._rebuild()

    def top(self, first: int, last: int) -> None:
        """Keys ``first`` to ``last`` rise to the top (+inf, a rank that writes no more)."""
        if last < first:
            return
        for a, b in self._top_spans(first, last):  # (the parts not at the top yet)
            self._unrisen -= self._unrisen_in(a, b)
        self._add_top(first, last)

    def least(self, default: float) -> float:
        """The least value (``default``: no key)."""
        heap, values = self._heap, self._values
        while heap and (
            values[heap[0][2]] != heap[0][0] or (self._top_firsts and self._topped(heap[0][2]))
        ):
            heapq.heappop(heap)  # (a value that has risen since)
        if self._unrisen:
            return min(self._start, heap[0][0]) if heap else self._start
        if heap:
            return heap[0][0]
        return _TOP if self._top_firsts else default

    def _topped(self, key: Hashable) -> bool:
        if type(key) is not int:
            return False
        i = bisect.bisect_left(self._top_lasts, key)
        return i < len(self._top_firsts) and self._top_firsts[i] <= key

    def _top_spans(self, first: int, last: int) -> list[tuple[int, int]]:
        """The parts of ``first..last`` not at the top yet."""
        out, at = [], first
        i = bisect.bisect_left(self._top_lasts, first)
        while i < len(self._top_firsts) and self._top_firsts[i] <= last:
            if self._top_firsts[i] > at:
                out.append((at, self._top_firsts[i] - 1))
            at = max(at, self._top_lasts[i] + 1)
            i += 1
        if at <= last:
            out.append((at, last))
        return out

    def _unrisen_in(self, first: int, last: int) -> int:
        """How many given keys in ``first..last`` (none at the top) have no entry yet."""
        keys, values = self._keys, self._values
        if not (isinstance(keys, range) and keys.step == 1):
            return sum(1 for k in range(first, last + 1) if k in keys and k not in values)
        lo, hi = max(first, keys.start), min(last, keys.stop - 1)
        if hi < lo:
            return 0
        if len(values) < hi - lo + 1:  # (the few keys that rose: look at their entries)
            risen = sum(1 for k in values if type(k) is int and lo <= k <= hi)
        else:
            risen = sum(1 for k in range(lo, hi + 1) if k in values)
        return hi - lo + 1 - risen

    def _add_top(self, first: int, last: int) -> None:
        firsts, lasts = self._top_firsts, self._top_lasts
        i = bisect.bisect_left(lasts, first - 1)  # the first span that ends at or after first-1
        j = i
        while j < len(firsts) and firsts[j] <= last + 1:
            first, last = min(first, firsts[j]), max(last, lasts[j])
            j += 1
        firsts[i:j], lasts[i:j] = [first], [last]

    def _rebuild(self) -> None:
        self._heap = [(v, id(k), k) for k, v in self._values.items() if not self._topped(k)]
        heapq.heapify(self._heap)


_TOP = float("inf")
