"""How a relay's reduction of rank states lies in the ``events`` table (see :mod:`.eventrows`):
one row of kind ``rank`` for many ranks' states, each state its own seq."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from ..kept import Kept
from .numruns import pack
from .rowkeys import Codes

#: A span of rank states as :class:`States` holds it: (first, last, states, host, pids).
SpanRow = tuple[int, int, list[str], str, Sequence[int | None]]


class States(NamedTuple):
    """Rank states of one run at one time, as one relay's reduction brought them (a node's
    ranks' ends of a cell): ONE row of kind ``rank`` whatever their number (up to SPAN), one
    seq each. Its ``rank`` is NULL, ``data`` the JSON list of each state as ``[rank, state,
    host, pid]``, then of each span as ``{"first": 0, "last": 124, "states": ["running",
    "done"], "host": ..., "pids": [...]}`` (each of its ranks in turn took those states:
    layout 7; the pids as runs of numbers, ``[[1000, 1124]]``, from layout 8: :mod:`.numruns`),
    and ``gaps`` zeros (consecutive seqs, one time; from layout 8 an empty blob, which says the
    same without a page of zeros per 2,048 states); readers make each state's
    :class:`~..events.RankEvent` of it (see ``eventmerge.expand``)."""

    run_id: str
    t: float
    events: Sequence[tuple[int, str, str, int | None]]  # (rank, state, host, pid)
    spans: Sequence[SpanRow] = ()

    def size(self) -> int:
        """How many seqs (states) these take."""
        spans = self.spans
        if type(spans) is tuple:  # (a kept chunk, see write_states)
            return len(self.events) + _SIZES.get(spans, None, lambda s, _: _size(s))
        return len(self.events) + _size(spans)


def _size(spans: Sequence[SpanRow]) -> int:
    return sum((s[1] - s[0] + 1) * len(s[2]) for s in spans)


def write_states(
    seq: int,
    it: States,
    start: int,
    span: int,
    flush: Callable[[], None],
    rows: list[tuple[Any, ...]],
    codes: Codes,
) -> int:
    """``eventrows.write``'s work for ``it`` at ``seq`` on: one row per ``span`` seqs of its
    states (one in practice), added to ``rows`` (``flush`` writes what is held first, where
    a row would reach past the current span of rows). Returns where that span now starts."""
    run, kind = codes.run(it.run_id), codes.code("rank")
    for i in range(0, len(it.events), span):
        part = it.events[i : i + span]
        first, last = seq + i, seq + i + len(part) - 1
        if last - start >= span:
            flush()
            start = first
        if len(part) == 1:  # as one RankEvent's row
            (rank, state, host, pid), t = part[0], it.t
            one = {"kind": "rank", "run_id": it.run_id, "rank": rank, "t": t, "state": state,
                   "host": host, "pid": pid}  # fmt: skip
            rows.append((last, 0, run, kind, rank, None, t, None, None, json.dumps(one)))
            continue
        rows.append((last, last - first, run, kind, None, None, it.t, b"", None, json.dumps(part)))
    seq += len(it.events)
    spans = it.spans
    # (a tuple: a node's or aggregator's kept chunk, the same each cell)
    kept = type(spans) is tuple
    groups = _GROUPS.get(spans, span, _grouped) if kept else _grouped(spans, span)
    for size, data in groups:  # (one row in practice)
        start = _span_row(seq, it.t, data, size, start, span, flush, rows, (run, kind))
        seq += size
    return start


def _grouped(spans: Sequence[SpanRow], span: int) -> tuple[tuple[int, str], ...]:
    """The spans' entries as rows' data, each row's taking at most ``span`` seqs: (seqs, JSON)
    per row."""
    groups: list[tuple[int, str]] = []
    entries: list[str] = []
    size = 0
    for first, last, states, text in _span_entries(spans, span):
        n = (last - first + 1) * len(states)
        if entries and size + n > span:
            groups.append((size, "[" + ", ".join(entries) + "]"))
            entries, size = [], 0
        entries.append(text)
        size += n
    if entries:
        groups.append((size, "[" + ", ".join(entries) + "]"))
    return tuple(groups)


def _span_entries(
    spans: Sequence[SpanRow], span: int
) -> Iterator[tuple[int, int, Sequence[str], str]]:
    """Each span of ranks as a row's entry, cut where one would take more than ``span``: its
    first and last rank, its states and its JSON."""
    for first, _last, states, host, pids in spans:
        step = max(1, span // len(states))
        for i in range(0, len(pids), step):
            part = pids[i : i + step]
            last = first + i + len(part) - 1
            yield first + i, last, states, _entry(first + i, last, states, host, part)


#: (writers) the JSON of the span entries written last, by their ranks, states, host and pids'
#: tuple (kept: a live cluster's node gives the same tuple for every cell, see RankSpans.ident)
_WRITTEN: dict[tuple[int, int, tuple[str, ...], str, int], tuple[object, str]] = {}
_WRITTEN_MAX = 4096
#: (writers) a kept chunk's rows' data and its size, by the chunk's tuple (see :mod:`..kept`)
_GROUPS: Kept[Sequence[SpanRow], int, tuple[tuple[int, str], ...]] = Kept()
_SIZES: Kept[Sequence[SpanRow], None, int] = Kept()


def _entry(first: int, last: int, states: Sequence[str], host: str, pids: Sequence[Any]) -> str:
    """A span entry's JSON, encoded once while the same pids' tuple comes again (a node's
    125 pids per cell at 1,000 ranks: ~0.05 ms of the kernel's CPU per cell)."""
    key = (first, last, tuple(states), host, id(pids))
    kept = _WRITTEN.get(key)
    if kept is not None and kept[0] is pids:
        return kept[1]
    entry = {"first": first, "last": last, "states": states, "host": host, "pids": pack(pids)}
    text = json.dumps(entry)
    if type(pids) is tuple:  # (immutable: the same object is the same pids)
        if len(_WRITTEN) >= _WRITTEN_MAX:
            _WRITTEN.clear()
        _WRITTEN[key] = (pids, text)
    return text


def _span_row(
    seq: int,
    t: float,
    data: str,
    size: int,
    start: int,
    span: int,
    flush: Callable[[], None],
    rows: list[tuple[Any, ...]],
    codes: tuple[int, int],
) -> int:
    """One row of spans' entries (``data``, their JSON list) taking ``size`` seqs from ``seq``
    on."""
    last = seq + size - 1
    if last - start >= span:
        flush()
        start = seq
    rows.append((last, size - 1, *codes, None, None, t, b"", None, data))
    return start
