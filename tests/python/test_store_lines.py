"""A message's lines (:class:`OutputLines`, the kernel's hot path) go straight into the
history's group rows: read back exactly as the same lines written one event at a time."""

from __future__ import annotations

import random
from pathlib import Path

from jupyter_distributed.events import (
    MetricEvent,
    OutputEvent,
    OutputLines,
    RankEvent,
    RankState,
    Recorded,
    Stream,
    count,
    each,
)
from jupyter_distributed.history import eventrows, grouprows
from jupyter_distributed.history.store import RunRecord, Store


def _store(path: Path, ranks: int = 3) -> Store:
    store = Store(path)
    for run_id in ("a", "b"):
        store.create_run(RunRecord(run_id, "local", ranks, list(range(ranks)), started=1.0))
    return store


def test_a_large_message_is_stored_exactly_in_order_to_the_microsecond(tmp_path: Path) -> None:
    store = _store(tmp_path / "h.sqlite3")
    t0 = 1763887500.123456789
    lines = [(t0 + i * 3.7e-6, f"JDB 0 {i} {t0 + i:.6f}") for i in range(3 * eventrows.SPAN + 5)]
    assert store.append([OutputLines("a", 1, Stream.STDOUT, lines)]) == len(lines)
    got = store.logs("a", limit=len(lines) + 1)
    assert [(ln.rank, ln.stream, ln.text) for ln in got] == [(1, "stdout", s) for _, s in lines]
    assert [round(ln.t * 1e6) for ln in got] == [round(t * 1e6) for t, _ in lines]
    assert got[0].t == t0  # a row's first time is exact
    assert [ln.seq for ln in got] == list(range(got[0].seq, got[0].seq + len(lines)))
    rows, span = store._query("SELECT COUNT(*), MAX(span) FROM events WHERE kind != 1")[0]
    assert rows < len(lines) / 20 and span < eventrows.SPAN  # grouped, never too wide


def _batches(rng: random.Random) -> list[list[Recorded]]:
    """Batches as the kernel records them: messages' lines of interleaved ranks and streams
    (odd texts, long lines, time steps back and forth) among single events."""
    t = 1000.0
    texts = ["", "step 1 loss", "a\nb", "ü€ 𝄞 caf\u00e9", "x" * 1500, "y" * 3000]
    batches: list[list[Recorded]] = []
    for size in [1, 5, 40, 3, 300, 2, 100]:
        batch: list[Recorded] = []
        for _ in range(size):
            run_id, rank = rng.choice("ab"), rng.randrange(3)
            t += rng.choice([0.0, 1e-6, 2e-5, 0.25, 3600.0, -0.5])
            roll = rng.random()
            if roll < 0.3:
                n = rng.choice([1, 2, 50, 400])
                stream = rng.choice([Stream.STDOUT, Stream.STDERR])
                lines = []
                for _ in range(n):
                    t += rng.choice([1e-6, 3e-6, 1e-4, 0.0, -2e-6])
                    lines.append((t, f"{rng.choice(texts)} {rng.random()}"))
                batch.append(OutputLines(run_id, rank, stream, lines))
            elif roll < 0.8:
                batch.append(OutputEvent(run_id, rank, t, Stream.STDOUT, f"one {rng.random()}"))
            elif roll < 0.95:
                batch.append(MetricEvent(run_id, rank, t, {"loss": rng.random()}))
            else:
                batch.append(RankEvent(run_id, rank, t, RankState.RUNNING, "h", 7))
        if size == 300:  # a message wider than a row's span
            # (lines read from a pipe at once share their time)
            big = [
                (t + i // 90 * 1e-6, f"{rng.choice(texts)} {i}") for i in range(eventrows.SPAN + 99)
            ]
            batch.insert(150, OutputLines("a", 1, Stream.STDOUT, big))
        batches.append(batch)
    return batches


def test_lines_read_back_as_the_same_events_written_one_by_one(tmp_path: Path) -> None:
    batches = _batches(random.Random(12))  # noqa: S311 - a reproducible history
    fast, slow = _store(tmp_path / "fast.sqlite3"), _store(tmp_path / "slow.sqlite3")
    for batch in batches:
        assert fast.append(batch) == slow.append(each(batch)) == count(batch)
    total = sum(count(b) for b in batches)
    assert fast.last_seq() == slow.last_seq() > total
    got, want = fast.events_after(0, None, total + 10), slow.events_after(0, None, total + 10)
    assert [s for s, _ in got] == [s for s, _ in want]
    for (_, g), (_, w) in zip(got, want, strict=True):
        assert round(g.pop("t") * 1e6) == round(w.pop("t") * 1e6) and g == w
    for run_id in ("a", "b"):
        want_lines = [
            (ln.seq, ln.rank, ln.stream, ln.text) for ln in slow.logs(run_id, limit=total)
        ]
        got_lines = [(ln.seq, ln.rank, ln.stream, ln.text) for ln in fast.logs(run_id, limit=total)]
        assert got_lines == want_lines
    rows = "SELECT seq, span, run, kind, rank, stream, t, gaps, text, data FROM events"
    assert fast._query(rows) == slow._query(rows)  # the same rows: the same layout
    size = "LENGTH(CAST(text AS BLOB)) + LENGTH(gaps)"
    for store in (fast, slow):  # rows of several lines are never wider than ROW_BYTES
        span, widest = store._query(f"SELECT MAX(span), MAX({size}) FROM events")[0]  # noqa: S608
        assert span < eventrows.SPAN and widest <= grouprows.ROW_BYTES


def test_a_messages_lines_at_one_time_make_the_same_rows_as_one_by_one(tmp_path: Path) -> None:
    """A read of a rank's pipe (its lines at one time, issue 26: the row is made from their
    text joined once) gives the same rows as the lines written one by one: a message that
    fills a row, passes it, holds a line with a newline or non-ASCII text, or follows another
    message of the same rank in the batch."""
    texts = ["step 1 loss 0.25", "ü€ 𝄞 caf\u00e9", "a\nb", "x" * 190, ""]
    batch: list[Recorded] = []
    t = 2000.0
    for i, (n, text) in enumerate(
        [(10, texts[0]), (10, texts[0]), (5, texts[1]), (3, texts[2]), (10, texts[3]),
         (11, texts[3]), (40, texts[0]), (2, texts[4]), (1, texts[0]), (4, texts[0])]
    ):  # fmt: skip
        t += 0.001
        lines = [(t, f"{text} {j}") for j in range(n)]
        batch.append(OutputLines("a", i % 9, Stream.STDOUT, lines))  # (the last: rank 0 again)
    fast, slow = _store(tmp_path / "fast.sqlite3", 9), _store(tmp_path / "slow.sqlite3", 9)
    assert fast.append(batch) == slow.append(each(batch)) == count(batch)
    rows = "SELECT seq, span, run, kind, rank, stream, t, gaps, text, data FROM events"
    assert fast._query(rows) == slow._query(rows)
