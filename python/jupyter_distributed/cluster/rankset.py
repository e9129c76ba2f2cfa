"""A set of ranks kept as runs of consecutive ranks (issue 26).

What a cell awaits (the kernel's I/O thread, :mod:`.cellrun`) and what the notebook still waits
for (its main thread, :mod:`.tracker`) begins as every rank the cell went to and loses a
node's range at a time (a relay's reduction ends ``ranks 0-124``): as runs, each change costs
O(runs), not O(ranks), and the set a cell starts with is made once per route, not per cell.
A Python ``set`` of 10,000 ranks, built and emptied twice per cell, cost ~1.9 ms of the
kernel's CPU per cell (0.1 ms at 1,000).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence

from ..kept import Kept


class RankSet:
    """Ranks as sorted, disjoint runs of consecutive ranks ``[first, last]``."""

    __slots__ = ("_firsts", "_lasts", "_len")

    def __init__(self, ranks: Iterable[int] = ()) -> None:
        self._firsts: list[int] = []
        self._lasts: list[int] = []
        self._len = 0
        if isinstance(ranks, range) and ranks.step == 1:
            self._add_runs([(ranks.start, ranks.stop - 1)] if ranks else [])
        elif isinstance(ranks, Sequence) and _consecutive(ranks):
            self._add_runs([(int(ranks[0]), int(ranks[-1]))] if ranks else [])
        else:
            self._add_runs(_runs(sorted(set(ranks))))

    @classmethod
    def of(cls, ranks: Sequence[int]) -> RankSet:
        """``RankSet(ranks)``, made once while the same tuple comes again (a spec's ranks are
        one tuple per world size: what each cell of a cluster awaits), then copied: no look at
        each of 1,000 ranks per cell."""
        if not isinstance(ranks, tuple):  # (a tuple is immutable: the same object, same ranks)
            return cls(ranks)
        return _MADE.get(ranks, None, lambda r, _: cls(r)).copy()

    def _add_runs(self, runs: Iterable[tuple[int, int]]) -> None:
        for first, last in runs:
            self._firsts.append(first)
            self._lasts.append(last)
            self._len += last - first + 1

    def copy(self) -> RankSet:
        out = RankSet()
        out._firsts, out._lasts, out._len = list(self._firsts), list(self._lasts), self._len
        return out

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[int]:
        for first, last in zip(self._firsts, self._lasts, strict=True):
            yield from range(first, last + 1)

    def __contains__(self, rank: object) -> bool:
        if not isinstance(rank, int):
            return False
        i = bisect.bisect_left(self._lasts, rank)
        return i < len(self._firsts) and self._firsts[i] <= rank

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RankSet):
            return (self._firsts, self._lasts) == (other._firsts, other._lasts)
        if isinstance(other, set | frozenset):
            return self._len == len(other) and all(r in other for r in self)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (it changes)

    def __repr__(self) -> str:
        runs = zip(self._firsts, self._lasts, strict=True)
        return "RankSet(" + ",".join(f"{f}-{la}" if la > f else str(f) for f, la in runs) + ")"

    def clear(self) -> None:
        self._firsts.clear()
        self._lasts.clear()
        self._len = 0

    def discard(self, rank: int) -> None:
        self._remove(rank, rank)

    def difference_update(self, ranks: Iterable[int]) -> None:
        """Remove ``ranks``: a range of step 1 at once, anything else rank by rank."""
        if isinstance(ranks, range) and ranks.step == 1:
            if ranks:
                self._remove(ranks.start, ranks.stop - 1)
            return
        for rank in ranks:
            self._remove(rank, rank)

    def _remove(self, first: int, last: int) -> None:
        firsts, lasts = self._firsts, self._lasts
        i = j = bisect.bisect_left(lasts, first)  # the first run that ends at or after first
        kept_firsts, kept_lasts = [], []
        while j < len(firsts) and firsts[j] <= last:
            f, la = firsts[j], lasts[j]
            if f < first:
                kept_firsts.append(f)
                kept_lasts.append(first - 1)
            if la > last:
                kept_firsts.append(last + 1)
                kept_lasts.append(la)
            self._len -= min(la, last) - max(f, first) + 1
            j += 1
        if j > i:
            firsts[i:j], lasts[i:j] = kept_firsts, kept_lasts


_MADE: Kept[tuple[int, ...], None, RankSet] = Kept(most=64)  # (see RankSet.of)


def _consecutive(ranks: Sequence[int]) -> bool:
    """Whether ``ranks`` are ``first, first + 1, ..., last`` (compared in C, no step per rank)."""
    if not ranks:
        return True
    first, n = ranks[0], len(ranks)
    if not isinstance(first, int) or ranks[-1] != first + n - 1:
        return False
    return list(ranks) == list(range(first, first + n))


def _runs(ordered: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for rank in ordered:
        if out and out[-1][1] == rank - 1:
            out[-1] = (out[-1][0], rank)
        else:
            out.append((rank, rank))
    return out
