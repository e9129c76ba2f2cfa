"""Where a probe's pairs lie in the history: beside the run's summary, not in it.

A run of ``%distributed probe`` keeps its result in ``summary["probe"]`` (:func:`.probe.assemble`),
whose ``pairs`` hold one entry per pair of ranks: 32,640 at 256 ranks, megabytes of JSON. The
summary is read whenever runs are listed (the panel polls the list every 2 s), so the pairs live in
their own table, ``probe_pairs``, and the summary's probe keeps only their number
(``pair_count``): a listed run costs the same with or without a probe, and only reading the one
run (``Store.run``, ``GET runs/<id>``) reads its pairs and gives the probe back whole.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from . import storefile


def split(values: dict[str, Any]) -> tuple[dict[str, Any], list[Any] | None]:
    """``values`` for the summary, its probe's pairs left out and counted, and those pairs
    (None: no probe among ``values``, or one without pairs)."""
    probe = values.get("probe")
    if not isinstance(probe, dict) or not isinstance(probe.get("pairs"), list):
        return values, None
    pairs = probe["pairs"]
    kept = {k: v for k, v in probe.items() if k != "pairs"} | {"pair_count": len(pairs)}
    return {**values, "probe": kept}, pairs


def write(db: sqlite3.Connection, run_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """(in a write transaction) Keep the pairs of ``values``' probe, if any, as ``run_id``'s,
    and return ``values`` for the summary; a probe given without pairs has none kept."""
    if "probe" not in values:
        return values
    values, pairs = split(values)
    if pairs is None:
        db.execute("DELETE FROM probe_pairs WHERE run_id=?", (run_id,))
    else:
        db.execute("INSERT OR REPLACE INTO probe_pairs VALUES (?,?)", (run_id, json.dumps(pairs)))
    return values


def counted(summary: dict[str, Any]) -> bool:
    """Whether ``summary``'s probe has its pairs apart (their number in their place)."""
    probe = summary.get("probe")
    return isinstance(probe, dict) and "pair_count" in probe


def whole(summary: dict[str, Any], pairs: str) -> dict[str, Any]:
    """``summary`` with its probe's ``pairs`` (as kept: JSON) in place of their number."""
    probe = {k: v for k, v in summary["probe"].items() if k != "pair_count"}
    return {**summary, "probe": probe | {"pairs": json.loads(pairs)}}


def move_out(db: sqlite3.Connection) -> None:
    """(migration to layout 4) Move the pairs of the probes kept in summaries to their table."""
    for stmt in storefile.statements():  # (the table, before the open adds what a store lacks)
        db.execute(stmt)
    sql = "SELECT id, summary FROM runs WHERE summary LIKE ? AND summary LIKE ?"
    rows = db.execute(sql, ('%"probe"%', '%"pairs"%')).fetchall()
    for run_id, text in rows:
        try:
            summary = json.loads(text)
        except (TypeError, ValueError):
            continue  # (not ours to fix: the run is listed as it reads)
        if not isinstance(summary, dict):
            continue
        kept = write(db, run_id, summary)
        if kept is not summary:
            db.execute("UPDATE runs SET summary=? WHERE id=?", (json.dumps(kept), run_id))
