"""What a read of the history costs at thousands of ranks: each rank's line or sample now and
then is a row of its own, and a page of events must not read thousands of rows past it (the
live stream reads a page after another, issue 26)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jupyter_distributed.events import Event, MetricEvent, OutputEvent, Stream
from jupyter_distributed.history import eventrows
from jupyter_distributed.history.store import RunRecord, Store

RANKS = 3000


class Counting(Store):
    """A store that counts the rows its reads take from SQLite."""

    fetched = 0

    @contextmanager
    def _rows(self, sql: str, args: Any = ()) -> Iterator[Iterator[tuple[Any, ...]]]:
        with super()._rows(sql, args) as rows:

            def counted() -> Iterator[tuple[Any, ...]]:
                for row in rows:
                    self.fetched += 1
                    yield row

            yield counted()


def _sparse(store: Store) -> list[int]:
    """One line, then one sample, of each of RANKS ranks: a row each. Returns the seqs."""
    store.create_run(RunRecord("big", "local", RANKS, list(range(RANKS)), started=1.0))
    events: list[Event] = [
        OutputEvent("big", r, 10.0 + r / 1e4, Stream.STDOUT, f"line {r}") for r in range(RANKS)
    ]
    events += [MetricEvent("big", r, 11.0, {"samples": 64.0}) for r in range(RANKS)]
    top = store.last_seq()
    store.append(events)
    return list(range(top + 1, top + 1 + len(events)))


def test_a_page_of_events_reads_the_rows_of_that_page_not_a_span_past_it(tmp_path: Path) -> None:
    store = Counting(tmp_path / "h.sqlite3")
    seqs = _sparse(store)
    rows = store._query("SELECT COUNT(*) FROM events WHERE seq >= ?", (seqs[0],))[0][0]
    assert rows == len(seqs)  # (a row each: the case this is about)
    got: list[int] = []
    pages = 0
    store.fetched = 0
    while len(got) < len(seqs):  # the live stream's way: a page after another
        page = store.events_after(got[-1] if got else seqs[0] - 1, "big", 100)
        got += [s for s, _ in page]
        pages += 1
    assert got == seqs
    # each page took its 100 rows and a few around them, where the merge used to look a whole
    # span (4,096 seqs) past every page
    assert store.fetched < 2 * len(seqs) < pages * eventrows.SPAN


def test_a_page_back_from_the_end_reads_no_rows_after_it(tmp_path: Path) -> None:
    store = Counting(tmp_path / "h.sqlite3")
    seqs = _sparse(store)
    store.fetched = 0
    lines = store.logs("big", before=seqs[RANKS // 2], limit=50)
    assert [ln.seq for ln in lines] == seqs[RANKS // 2 - 50 : RANKS // 2]
    assert store.fetched <= 50
