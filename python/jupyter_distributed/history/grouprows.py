"""How one group row of the ``events`` table is made (see :mod:`.eventrows`): its events'
text (output lines) or values (metric samples) joined, and per event after the first a pair of
varints, the seq step minus one and the time step in microseconds (zigzag), within
:data:`ROW_BYTES`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .rowkeys import Codes

#: The most bytes of text (or metric JSON) and gaps in one row, about: two such rows fill a
#: 4 KiB page (SQLite's), where a longer row would spill into overflow pages and leave much of
#: its own page empty, and shorter ones cost more in their own keys and index entries.
ROW_BYTES = 2000


class Item(NamedTuple):
    """One event as the table keeps it."""

    run_id: str
    kind: str
    rank: int | None
    t: float
    stream: str | None = None
    text: str | None = None
    data: str | None = None  # metric: the values' JSON; other kinds: the event's JSON


class Group:
    """The events of one row being made."""

    __slots__ = ("first", "first_seq", "gaps", "last_seq", "last_us", "parts", "size")

    def __init__(self, seq: int, it: Item) -> None:
        self.first, self.first_seq, self.last_seq = it, seq, seq
        self.last_us = round(it.t * 1e6)
        self.parts = [it.text or it.data or ""]  # the events' text (output) or values (metric)
        self.gaps = bytearray()
        self.size = len(self.parts[0].encode())

    @classmethod
    def joined(
        cls, seq: int, run_id: str, rank: int, stream: str, lines: Sequence[tuple[float, str]]
    ) -> Group | None:
        """The row :meth:`extend` would make of all of ``lines`` (from ``seq`` on), made from
        their text joined once, where they are at one time and fit one row; else None."""
        n = len(lines)
        times, texts = zip(*lines, strict=True)
        t = times[0]
        if times.count(t) != n:
            return None
        joined = "\n".join(texts)
        size = (len(joined) if joined.isascii() else len(joined.encode())) + 2 * (n - 1)
        if size > ROW_BYTES or joined.count("\n") != n - 1:
            return None
        group = cls(seq, Item(run_id, "output", rank, t, stream, texts[0]))
        group.parts, group.gaps, group.size = list(texts), bytearray(2 * (n - 1)), size
        group.last_seq = seq + n - 1
        return group

    def add(self, seq: int, it: Item) -> bool:
        """Add ``it`` unless the row would pass ROW_BYTES."""
        us = round(it.t * 1e6)
        mark = len(self.gaps)
        _varint(self.gaps, seq - self.last_seq - 1)
        _varint(self.gaps, _zigzag(us - self.last_us))
        part = it.text or it.data or ""
        size = self.size + len(part.encode()) + 1 + len(self.gaps) - mark
        if size > ROW_BYTES:
            del self.gaps[mark:]
            return False
        self.parts.append(part)
        self.size, self.last_seq, self.last_us = size, seq, us
        return True

    def extend(self, seq: int, lines: Sequence[tuple[float, str]], i: int, stop: int) -> int:
        """Add ``lines[i:stop]``, the first at ``seq`` and the others at the seqs after it,
        while the row stays within ROW_BYTES and no line holds a ``\\n``; returns the index of
        the first line not added. :meth:`add`'s work per line, inlined; a line at the time of
        the one before it (the lines of one read of a rank's pipe) costs the least."""
        gaps, parts = self.gaps, self.parts
        size, last_us, step = self.size, self.last_us, seq - self.last_seq - 1
        last_t = None  # the time of the line before (in this call), as it came
        j, stop = i, min(stop, len(lines))
        while j < stop:
            t, text = lines[j]
            if "\n" in text:
                break
            grown = (len(text) if text.isascii() else len(text.encode())) + 1
            if t == last_t:  # the same time: its gaps are (0, 0)
                grown += 2
                if size + grown > ROW_BYTES:
                    break
                gaps += b"\0\0"
            else:
                us = round(t * 1e6)
                mark = len(gaps)
                _varint(gaps, step)
                _varint(gaps, _zigzag(us - last_us))
                grown += len(gaps) - mark
                if size + grown > ROW_BYTES:
                    del gaps[mark:]
                    break
                last_us, last_t, step = us, t, 0
            parts.append(text)
            size += grown
            j += 1
        if j > i:
            self.size, self.last_us, self.last_seq = size, last_us, seq + (j - i) - 1
        return j

    def row(self, codes: Codes) -> tuple[Any, ...]:
        first = self.first
        stream = codes.code(first.stream) if first.stream is not None else None
        run, kind = codes.run(first.run_id), codes.code(first.kind)
        span = self.last_seq - self.first_seq
        head = (self.last_seq, span, run, kind, first.rank, stream, first.t)
        if len(self.parts) == 1:
            return (*head, None, first.text, first.data)
        if first.kind == "metric":
            return (*head, bytes(self.gaps), None, "[" + ",".join(self.parts) + "]")
        return (*head, bytes(self.gaps), "\n".join(self.parts), None)


def _zigzag(step: int) -> int:
    return step * 2 if step >= 0 else -step * 2 - 1


def _varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
