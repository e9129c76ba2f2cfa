"""Samples/s: the one definition every view uses, and the straggler rule.

A rank's rate over an interval is the samples it reported after the interval's first report, up
to and including its last, divided by the time between those two reports. A finished run's rate
is first report to last (:class:`RankRate`, O(1) memory); the live view slides a window of that
form (:func:`window_rate`): its last report is the rank's latest, its first the latest report
at least ``window`` seconds before that (or the rank's first report). One report alone has no
rate. The panel's ``labextension/src/rates.ts`` is the TypeScript mirror of this module; both are
checked against the same fixture, ``tests/rates/rates.json``.

A run's total counts one rank per data-parallel replica (pipeline and tensor-parallel ranks of
one replica report the same samples): the mean rank rate × the data-parallel degree.

A rank below ``threshold`` × the median rank's rate is a straggler (with at least two ranks);
the threshold is ``c.Distributed.straggler_threshold``, which the panel reads from the server.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence

#: The live view's window, in seconds (the panel's ``RATE_WINDOW_SECONDS``).
WINDOW_SECONDS = 5.0

#: The default of ``c.Distributed.straggler_threshold``.
STRAGGLER_THRESHOLD = 0.8


def rate_between(samples: float, first: float, last: float) -> float | None:
    """``samples`` reported after the report at ``first`` up to the one at ``last``, per second."""
    return samples / (last - first) if last > first else None


class RankRate:
    """One rank's first-to-last rate, fed report by report (reports come in time order)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = -math.inf
        self.after = 0.0  # samples reported after the first report

    def add(self, t: float, samples: float) -> None:
        if self.first is None:
            self.first = t
        else:
            self.after += samples
        self.last = max(self.last, t)

    @property
    def rate(self) -> float | None:
        return None if self.first is None else rate_between(self.after, self.first, self.last)


def window_rate(
    reports: Sequence[tuple[float, float]], window: float = WINDOW_SECONDS
) -> float | None:
    """The live rate of one rank's ``(t, samples)`` reports (in time order): its latest report
    and the latest one at least ``window`` seconds before it (or its first report)."""
    if len(reports) < 2:
        return None
    times = [t for t, _ in reports]
    last = len(reports) - 1
    first = max(0, bisect.bisect_right(times, times[last] - window) - 1)
    samples = sum(n for _, n in reports[first + 1 : last + 1])
    return rate_between(samples, times[first], times[last])


def total(rank_rates: Mapping[int, float], data_parallel_degree: int) -> float:
    """A run's samples/s: one rank per data-parallel replica (mean rank rate × the degree)."""
    return statistics.fmean(rank_rates.values()) * data_parallel_degree if rank_rates else 0.0


def stragglers(rank_rates: Mapping[int, float], threshold: float) -> list[int]:
    """The ranks below ``threshold`` × the median rank's rate (none with fewer than two ranks)."""
    if len(rank_rates) < 2:
        return []
    median = statistics.median(rank_rates.values())
    if median <= 0:
        return []
    return sorted(r for r, v in rank_rates.items() if v < threshold * median)


def per_second(
    reports: Sequence[tuple[float, float]], window: float = WINDOW_SECONDS
) -> list[tuple[int, float]]:
    """The live view's line of one rank: per whole second from its first report to its last,
    the live rate at its latest report before the second's end, if that report is at most
    ``window`` seconds before it (the panel's plot and tiles)."""
    out: list[tuple[int, float]] = []
    if not reports:
        return out
    j = -1
    for second in range(math.floor(reports[0][0]), math.floor(reports[-1][0]) + 1):
        while j + 1 < len(reports) and reports[j + 1][0] < second + 1:
            j += 1
        value = window_rate(reports[: j + 1], window)
        if second + 1 - reports[j][0] <= window and value is not None:
            out.append((second, value))
    return out
