"""The history's compact layout: lines grouped per rank yet read back exactly as written, in
order, under every filter; and a history written by the first layout migrated whole."""

from __future__ import annotations

import json
import random
import sqlite3
import stat
import string
from pathlib import Path

from jupyter_distributed.errors import RankFailure
from jupyter_distributed.events import (
    ErrorEvent,
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    Stream,
)
from jupyter_distributed.history import eventrows, storefile
from jupyter_distributed.history.store import RunRecord, Store


def _fold(text: str) -> str:
    """Search ignores the case of ASCII letters only, as SQLite's LIKE does."""
    return text.translate(str.maketrans(string.ascii_uppercase, string.ascii_lowercase))


def _record(store: Store, run_id: str, ranks: int) -> None:
    store.create_run(RunRecord(run_id, "local", ranks, list(range(ranks)), started=1.0))


def _random_history(store: Store, rng: random.Random) -> list[tuple[int, Event]]:
    """Batches of every kind of event from two runs; returns (seq, event) as written."""
    for run_id in ("a", "b"):
        _record(store, run_id, 5)
    written: list[tuple[int, Event]] = []
    t = 1000.0
    for size in [1, 300, 7, eventrows.SPAN + 900, 2500, 1, 600]:
        batch: list[Event] = []
        for _ in range(size):
            run_id, rank = rng.choice("ab"), rng.randrange(5)
            t += rng.choice([0.0, 1e-6, 0.25, 3600.0, -0.5])
            roll = rng.random()
            if roll < 0.8:
                stream = rng.choice(list(Stream))
                text = rng.choice(["", "step 1 loss", "Loss UP", "a\nb", "ü€ 𝄞 caf\u00e9"])
                batch.append(OutputEvent(run_id, rank, t, stream, f"{text} {rng.random()}"))
            elif roll < 0.95:
                batch.append(MetricEvent(run_id, rank, t, {"loss": rng.random(), "n": 1.0}))
            else:
                batch.append(RankEvent(run_id, rank, t, RankState.RUNNING, "h", 7))
        top = store.last_seq()
        store.append(batch)
        written += list(enumerate(batch, top + 1))
    return written


def test_grouped_rows_read_back_exactly_in_order_under_every_filter(tmp_path: Path) -> None:
    rng = random.Random(7)  # noqa: S311 - a reproducible history, not a secret
    store = Store(tmp_path / "h.sqlite3")
    written = _random_history(store, rng)
    assert store.last_seq() == written[-1][0]
    rows = store._query("SELECT COUNT(*), MAX(span) FROM events")[0]
    assert rows[0] < len(written) / 3 and rows[1] < eventrows.SPAN  # grouped, never too wide

    def lines(run_id: str) -> list[tuple[int, OutputEvent]]:
        return [(s, e) for s, e in written if isinstance(e, OutputEvent) and e.run_id == run_id]

    for _ in range(40):
        run_id = rng.choice("ab")
        ranks = rng.choice([None, [rng.randrange(5)], [0, 3]])
        stream = rng.choice([None, "stdout", "result"])
        search = rng.choice([None, None, "loss", "LOSS u", "CAFÉ", "é", "\n"])
        limit = rng.choice([1, 10, 500, 100_000])
        cursor = rng.randrange(written[-1][0] + 2)
        down = rng.random() < 0.5
        expected = [
            (s, e)
            for s, e in lines(run_id)
            if (ranks is None or e.rank in ranks)
            and (stream is None or e.stream == stream)
            and (search is None or _fold(search) in _fold(e.text))
            and (s < cursor if down else s > cursor)
        ]
        expected = expected[-limit:] if down else expected[:limit]
        kw = {"before": cursor} if down else {"after": cursor}
        got = store.logs(run_id, ranks=ranks, stream=stream, search=search, limit=limit, **kw)
        assert [(ln.seq, ln.rank, ln.stream, ln.text) for ln in got] == [
            (s, e.rank, e.stream.value, e.text) for s, e in expected
        ]
        assert all(abs(ln.t - e.t) <= 1e-6 for ln, (_, e) in zip(got, expected, strict=True))

        after, limit = rng.randrange(written[-1][0] + 1), rng.choice([1, 1000, 3000])
        everything = [(s, e) for s, e in written if s > after][:limit]
        events = store.events_after(after, None, limit)
        assert [s for s, _ in events] == [s for s, _ in everything]
        for (_, got_json), (_, ev) in zip(events, everything, strict=True):
            want = ev.to_json()
            assert abs(got_json.pop("t") - want.pop("t")) <= 1e-6 and got_json == want
        one_run = [s for s, e in written if s > after and e.run_id == run_id][:limit]
        assert [s for s, _ in store.events_after(after, run_id, limit)] == one_run
        samples = [(s, e) for s, e in written if isinstance(e, MetricEvent) and e.run_id == run_id]
        got_samples = store.metrics(run_id, after, limit)
        want_samples = [(s, e) for s, e in samples if s > after][:limit]
        assert [(s, m.rank, m.values) for s, m in got_samples] == [
            (s, m.rank, m.values) for s, m in want_samples
        ]


def test_first_time_of_a_group_is_exact_the_others_to_the_microsecond(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _record(store, "r", 1)
    times = [1763887500.123456789, 1763887500.5, 1763887499.25, 1763887600.000001]
    store.append(OutputEvent("r", 0, t, Stream.STDOUT, f"l{i}") for i, t in enumerate(times))
    got = [ln.t for ln in store.logs("r")]
    assert got[0] == times[0] and got[1:] == [round(t * 1e6) / 1e6 for t in times[1:]]


# -- the first layout (version 0), as its SQL made it ------------------------------------------

V0_SCHEMA = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY, cluster_id TEXT, backend TEXT, world_size INTEGER, ranks TEXT,
    state TEXT, spec TEXT, source TEXT, notebook TEXT, cell_id TEXT, host TEXT,
    kernel_pid INTEGER, external_id TEXT, started REAL, ended REAL, message TEXT, summary TEXT
);
CREATE INDEX runs_started ON runs (started);
CREATE TABLE ranks (
    run_id TEXT, rank INTEGER, host TEXT, pid INTEGER, state TEXT, coords TEXT,
    updated REAL, heartbeat REAL, PRIMARY KEY (run_id, rank)
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, kind TEXT, rank INTEGER,
    t REAL, stream TEXT, text TEXT, data TEXT
);
CREATE INDEX events_run ON events (run_id, seq);
CREATE INDEX events_kind ON events (run_id, kind, seq);
CREATE TABLE controls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, cluster_id TEXT, target TEXT, action TEXT,
    t REAL, taken REAL
);
CREATE TABLE follows (run_id TEXT PRIMARY KEY, host TEXT, pid INTEGER, heartbeat REAL);
INSERT INTO runs VALUES ('r1', 'c1', 'local', 2, '[0, 1]', 'failed', '{}', 'print(1)', 'nb',
    'cell', 'host', 4242, '', 10.0, 20.0, 'rank 1 failed', '{"lines": 4}');
INSERT INTO ranks VALUES ('r1', 0, 'host', 11, 'done', '{}', 12.0, 13.0);
INSERT INTO ranks VALUES ('r1', 1, 'host', 12, 'failed', '{}', 14.0, 13.5);
INSERT INTO events VALUES (3, 'r1', 'run', NULL, 10.0, NULL, NULL,
    '{"kind": "run", "run_id": "r1", "t": 10.0, "state": "running", "message": ""}');
INSERT INTO events VALUES (4, 'r1', 'output', 0, 11.0, 'stdout', 'epoch 1 loss 0.5', NULL);
INSERT INTO events VALUES (5, 'r1', 'output', 1, 11.5, 'stdout', 'epoch 1 loss 0.7', NULL);
INSERT INTO events VALUES (6, 'r1', 'metric', 0, 12.0, NULL, NULL,
    '{"kind": "metric", "run_id": "r1", "rank": 0, "t": 12.0, "values": {"loss": 0.5}}');
INSERT INTO events VALUES (8, 'r1', 'output', 0, 12.5, 'stdout', 'two\nlines', NULL);
INSERT INTO events VALUES (9, 'r1', 'output', 1, 13.0, 'stderr', CAST(X'626164ff' AS TEXT), NULL);
INSERT INTO events VALUES (10, 'r1', 'output', 0, 13.5, 'stdout', 'epoch 2 loss 0.4', NULL);
INSERT INTO events VALUES (12, 'r1', 'display', 0, 14.5, 'display', 'text/plain', '{"kind":
    "display", "run_id": "r1", "rank": 0, "t": 14.5, "mark": "text/plain", "data": {"text/plain":
    "42"}, "metadata": {}, "display_id": null, "update": false, "result": true}');
INSERT INTO controls (cluster_id, target, action, t) VALUES ('c1', 'r1', 'cancel', 15.0);
"""


def test_a_history_of_the_first_layout_is_migrated_whole(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(V0_SCHEMA)
    failure = RankFailure(1, 14.0, "host", 12, "ValueError", "bad")
    db.execute(
        "INSERT INTO events VALUES (11, 'r1', 'error', 1, 14.0, NULL, NULL, ?)",
        (json.dumps(ErrorEvent("r1", failure).to_json()),),
    )
    db.commit()
    db.close()
    path.chmod(0o600)

    store = Store(path)
    assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
    assert [r[0] for r in store._query("SELECT name FROM sqlite_master")].count("events_v1") == 0
    run = store.run("r1")
    assert run is not None and (run.state, run.summary, run.source, run.kernel_id) == (
        RunState.FAILED,
        {"lines": 4},
        "print(1)",
        "",
    )
    assert [(r.rank, r.state) for r in store.ranks("r1")] == [(0, "done"), (1, "failed")]
    logs = store.logs("r1")
    assert [(ln.seq, ln.rank, ln.stream, ln.text) for ln in logs] == [
        (4, 0, "stdout", "epoch 1 loss 0.5"),
        (5, 1, "stdout", "epoch 1 loss 0.7"),
        (8, 0, "stdout", "two\nlines"),
        (9, 1, "stderr", "bad\ufffd"),
        (10, 0, "stdout", "epoch 2 loss 0.4"),
        (12, 0, "display", "text/plain"),
    ]
    shown = store.display("r1", 12)
    assert shown is not None and shown["data"] == {"text/plain": "42"}
    assert [ln.seq for ln in store.logs("r1", ranks=[0], search="LOSS")] == [4, 10]
    assert [(s, m.values) for s, m in store.metrics("r1")] == [(6, {"loss": 0.5})]
    assert store.events_after(10)[0][1] == ErrorEvent("r1", failure).to_json()
    assert [s for s, _ in store.events_after(0)] == [3, 4, 5, 6, 8, 9, 10, 11, 12]
    assert store.events_after(5)[0][1] == MetricEvent("r1", 0, 12.0, {"loss": 0.5}).to_json()
    assert [c.action for c in store.take_controls("c1")] == ["cancel"]

    store.append([RunEvent("r1", 30.0, RunState.COMPLETED)])  # seqs go on after the old ones
    assert store.last_seq() == 13
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    reopened = Store(path)  # a second open finds nothing to migrate
    assert [s for s, _ in reopened.events_after(0)][-2:] == [12, 13]
    reopened.close()


def test_a_history_written_before_runs_named_their_kernel_gains_the_column(tmp_path: Path) -> None:
    """Version 2 had every table of today but no ``runs.kernel_id``: the column is added, its
    runs read with no kernel, new runs keep theirs, and the file says today's version."""
    path = tmp_path / "history.sqlite3"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(storefile.SCHEMA.replace(", kernel_id TEXT", ""))
    db.execute("PRAGMA user_version=2")
    db.execute(
        "INSERT INTO runs VALUES ('old', 'c1', 'local', 1, '[0]', 'completed', '{}', 'pass',"
        " '/srv/Untitled.ipynb', 'cell', 'host', NULL, '', 10.0, 20.0, '', '{}', '')"
    )
    db.commit()
    db.close()
    path.chmod(0o600)

    store = Store(path)
    assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
    assert "kernel_id" in [row[1] for row in store._query("PRAGMA table_info(runs)")]
    old = store.run("old")
    assert old is not None and (old.notebook, old.kernel_id) == ("/srv/Untitled.ipynb", "")
    store.create_run(RunRecord("new", "local", 1, [0], started=30.0, kernel_id="k-1"))
    assert [(r.id, r.kernel_id) for r in store.runs()] == [("new", "k-1"), ("old", "")]
    assert store.run("old") == old
    store.close()


def test_a_history_that_kept_a_probes_pairs_in_its_summary_moves_them_beside_it(
    tmp_path: Path,
) -> None:
    """Version 3 kept a probe's pairs (megabytes at 256 ranks) in its run's summary, read on
    every listing: opening it moves them to their own table; the list then counts them and
    the run reads them back whole, as before; other summaries are left as they were."""
    path = tmp_path / "history.sqlite3"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(storefile.SCHEMA.split("-- A probe's pairs")[0])
    db.execute("PRAGMA user_version=3")
    pairs = [{"a": 0, "b": 1, "bandwidth_gbs": 3.5}, {"a": 0, "b": 2, "bandwidth_gbs": 1.25}]
    probe = {"run_id": "probe", "groups": {"intra": {"pairs": 2}}, "pairs": pairs}
    summaries = {
        "probe": {"probe": probe, "global_batch": 8},
        "plain": {"pairs": "a user's own word", "sweep": {"lr": 0.1}},
    }
    for i, (run_id, summary) in enumerate(summaries.items()):
        db.execute(
            "INSERT INTO runs (id, backend, world_size, ranks, state, started, summary)"
            " VALUES (?, 'local', 3, '[0, 1, 2]', 'completed', ?, ?)",
            (run_id, float(i), json.dumps(summary)),
        )
    db.commit()
    db.close()
    path.chmod(0o600)

    store = Store(path)
    assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
    listed = {r.id: r.summary for r in store.runs()}
    assert listed["probe"] == {
        "probe": {"run_id": "probe", "groups": {"intra": {"pairs": 2}}, "pair_count": 2},
        "global_batch": 8,
    }
    assert listed["plain"] == summaries["plain"]
    whole = store.run("probe")
    assert whole is not None and whole.summary == summaries["probe"]
    kept = store._query("SELECT summary FROM runs WHERE id='probe'")[0][0]
    assert "bandwidth_gbs" not in kept
    store.update_summary("probe", global_batch=16)  # the pairs stay where they are
    whole = store.run("probe")
    assert whole is not None and whole.summary["probe"]["pairs"] == pairs
    store.update_summary("probe", probe={"run_id": "probe"})  # a probe without pairs has none
    assert store._query("SELECT COUNT(*) FROM probe_pairs") == [(0,)]
    whole = store.run("probe")
    assert whole is not None and whole.summary["probe"] == {"run_id": "probe"}
    store.close()
    reopened = Store(path)  # nothing left to move
    assert reopened.run("plain") is not None
    reopened.close()
