"""What the REST endpoints answer, independent of tornado: query checks and store reads.

Every function here is synchronous and may touch the SQLite file: handlers call them through
``asyncio.to_thread`` so the server's event loop never waits on the disk. Problems are raised as
:class:`ApiError` with the HTTP status and a one-line message that says what to change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

from .. import __version__
from ..errors import NotFound as Missing
from ..events import Stream
from ..history.budget import Running
from ..history.store import RunRecord, Store
from ..rates import STRAGGLER_THRESHOLD as STRAGGLER
from .wire import (
    API_VERSION,
    ControlJSON,
    ControlReply,
    DeleteReply,
    DisplayJSON,
    LogLineJSON,
    LogsPage,
    MetricSampleJSON,
    MetricsPage,
    RankJSON,
    RunDetail,
    RunJSON,
    RunsPage,
    StacksJSON,
    StacksPage,
    VersionReply,
)

MAX_RUNS = 500
MAX_LINES = 5000
MAX_SAMPLES = 20_000


class ApiError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    status = 400


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Unavailable(ApiError):
    """The history store cannot be read (e.g. a corrupt file): the message says what to do."""

    status = 503


#: The largest integer a route takes (a seq, a rank, a count). SQLite's integers are 64-bit
#: signed, and a seq cursor is widened by a row's span (history.eventrows.SPAN) before it meets
#: them: past this bound a number is a bad request, never a server error.
MAX_INT = 2**62


def integer(what: str, raw: str) -> int:
    """``raw`` as an integer within +-:data:`MAX_INT`, or a :class:`BadRequest` naming ``what``
    (``what`` is e.g. ``"query argument after"``)."""
    if len(raw) > len(str(MAX_INT)) + 1:  # (int() of thousands of digits is slow, then refused)
        raise BadRequest(f"{what}={raw[:40]!r}... must be an integer of at most {MAX_INT}")
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{what}={raw!r} must be an integer") from None
    if not -MAX_INT <= value <= MAX_INT:
        raise BadRequest(f"{what}={value} must be an integer of at most {MAX_INT}")
    return value


class Query:
    """The query arguments of a request (each name may repeat), read with checks."""

    def __init__(self, args: Mapping[str, Sequence[str]]) -> None:
        self._args = args

    def text(self, name: str) -> str | None:
        values = self._args.get(name) or []
        return values[-1] if values else None

    def integer(
        self, name: str, default: int | None = None, lo: int | None = None, hi: int | None = None
    ) -> int | None:
        raw = self.text(name)
        if raw is None or raw == "":
            return default
        value = integer(f"query argument {name}", raw)
        if lo is not None and value < lo:
            raise BadRequest(f"query argument {name}={value} must be at least {lo}")
        if hi is not None and value > hi:
            raise BadRequest(f"query argument {name}={value} must be at most {hi}")
        return value

    def number(self, name: str) -> float | None:
        raw = self.text(name)
        if raw is None or raw == "":
            return None
        try:
            value = float(raw)
        except ValueError:
            raise BadRequest(f"query argument {name}={raw!r} must be a number") from None
        if not math.isfinite(value):
            raise BadRequest(f"query argument {name}={raw!r} must be a finite number")
        return value

    def integers(self, name: str) -> list[int] | None:
        values = self._args.get(name) or []
        out: list[int] = []
        for raw in values:
            out.extend(integer(f"query argument {name}", part) for part in raw.split(","))
        return out if values else None


#: What the runs list keeps of each layout of an advice (what the panel's Scaling tab shows); the
#: rest (memory and time breakdowns, uncalibrated figures) is in ``GET runs/<id>``.
LISTED_LAYOUT_KEYS = (
    "layout", "launch", "predicted_gib", "predicted_step_s", "predicted_samples_per_s",
    "dominant", "fits", "pareto", "measured",
)  # fmt: skip


def _run_json(run: RunRecord, notebooks: Mapping[str, str] | None, listed: bool = False) -> RunJSON:
    """The run's JSON, its notebook's path the one its kernel has open now, where it lives;
    ``listed`` (the runs list, polled every 2 s): an advice's layouts keep only what the panel
    shows, a fifth of their size."""
    doc = cast(RunJSON, run.to_json())
    if notebooks and run.kernel_id in notebooks:
        doc["notebook"] = notebooks[run.kernel_id]
    advice = doc["summary"].get("advice") if listed else None
    if isinstance(advice, dict) and isinstance(advice.get("layouts"), list):
        layouts = [
            {k: r[k] for k in LISTED_LAYOUT_KEYS if k in r} if isinstance(r, dict) else r
            for r in advice["layouts"]
        ]
        doc["summary"] = {**doc["summary"], "advice": {**advice, "layouts": layouts}}
    return doc


class History:
    """The run history behind the endpoints; one per server, over one :class:`Store`, or none
    when the store could not be opened (``problem`` says why; every read answers 503)."""

    def __init__(
        self, store: Store | None, problem: str = "", straggler_threshold: float = STRAGGLER
    ) -> None:
        self._store, self.problem = store, problem
        self.straggler_threshold = straggler_threshold

    @property
    def store(self) -> Store:
        if self._store is None:
            raise Unavailable(self.problem)
        return self._store

    def version(self) -> VersionReply:
        return {"version": __version__, "api_version": API_VERSION}

    def runs(self, q: Query, notebooks: Mapping[str, str] | None = None) -> RunsPage:
        """``notebooks``: kernel id -> the notebook that live kernel has open now
        (:mod:`.notebooks`); a run of such a kernel is answered with that path."""
        limit = q.integer("limit", 50, 1, MAX_RUNS) or 50
        last_seq = self.store.last_seq()  # read first: a stream from here misses nothing
        runs = self.store.runs(limit=limit, before=q.number("before"), sweep_id=q.text("sweep"))
        return {
            "runs": [_run_json(r, notebooks, listed=True) for r in runs],  # (probe pairs counted)
            "version": API_VERSION,
            "last_seq": last_seq,
            "straggler_threshold": self.straggler_threshold,
        }

    def run(self, run_id: str, notebooks: Mapping[str, str] | None = None) -> RunDetail:
        run = self.store.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the history")
        ranks = [cast(RankJSON, r.to_json()) for r in self.store.ranks(run.id)]
        return {"run": _run_json(run, notebooks), "ranks": ranks}

    def _run_id(self, run_id: str) -> str:
        run = self.store.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the history")
        return run.id

    def logs(self, run_id: str, q: Query) -> LogsPage:
        stream = q.text("stream") or None
        if stream is not None and stream not in {s.value for s in Stream}:
            raise BadRequest(
                f"query argument stream={stream!r} must be one of "
                f"{', '.join(s.value for s in Stream)}"
            )
        after = q.integer("after", 0, 0) or 0
        before = q.integer("before", None, 0)
        lines = self.store.logs(
            self._run_id(run_id),
            ranks=q.integers("rank"),
            stream=stream,
            search=q.text("search") or None,
            after=after,
            before=before,
            limit=q.integer("limit", 500, 1, MAX_LINES) or 500,
        )
        cursor = before if before is not None else after
        return {
            "lines": [cast(LogLineJSON, line.to_json()) for line in lines],
            "next": lines[-1].seq if lines else cursor,
        }

    def display(self, run_id: str, seq: str) -> DisplayJSON:
        number = integer("display", seq) if seq.isdigit() else None
        found = self.store.display(self._run_id(run_id), number) if number is not None else None
        if found is None:
            raise NotFound(f"no display {seq} in run {run_id!r}")
        return cast(DisplayJSON, found)

    def metrics(self, run_id: str, q: Query) -> MetricsPage:
        after = q.integer("after", 0, 0) or 0
        rows = self.store.metrics(
            self._run_id(run_id),
            after=after,
            limit=q.integer("limit", 10_000, 1, MAX_SAMPLES) or 10_000,
        )
        samples: list[MetricSampleJSON] = [
            {"seq": seq, "rank": ev.rank, "t": ev.t, "values": ev.values} for seq, ev in rows
        ]
        return {"samples": samples, "next": rows[-1][0] if rows else after}

    def delete(self, run_id: str) -> DeleteReply:
        """Delete a finished run and all it holds (its logs, metrics, stacks, ...)."""
        run_id = self._run_id(run_id)
        try:
            deleted = self.store.delete_run(run_id)
        except Running as exc:
            raise Conflict(str(exc)) from None
        if not deleted:  # (gone meanwhile: deleted by another request)
            raise NotFound(f"no run {run_id!r} in the history")
        return {"deleted": run_id}

    def cancel(self, run_id: str) -> ControlReply:
        run = self.store.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the history")
        if run.state.finished:
            raise Conflict(f"run {run.id} already ended ({run.state.value}); nothing to cancel")
        return {"control": self._control(run.id, "cancel")}

    def request_stacks(self, run_id: str, q: Query) -> ControlReply:
        """Ask the kernel running ``run_id`` for every rank's stacks, or ``?rank=R``'s only (they
        land in the history: :meth:`stacks`), even while it is busy running the cell."""
        run = self.store.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the history")
        rank = q.integer("rank", None, 0, max(run.world_size - 1, 0))
        if run.state.finished or not run.cluster_id:
            raise Conflict(f"run {run.id} is not running ({run.state.value}); no stacks to take")
        return {"control": self._control(run.id, "stacks", rank)}

    def stacks(self, run_id: str, q: Query) -> StacksPage:
        after = q.integer("after", 0, 0) or 0
        rows = self.store.stacks(self._run_id(run_id), after)
        return {
            "stacks": [cast(StacksJSON, {"seq": seq, **ev.to_json()}) for seq, ev in rows],
            "next": rows[-1][0] if rows else after,
        }

    def stop(self, cluster_id: str) -> ControlReply:
        return {"control": self._control(cluster_id, "stop")}

    def _control(self, target: str, action: str, rank: int | None = None) -> ControlJSON:
        try:
            control = self.store.request_control(target, action, rank)
        except Missing as exc:
            raise NotFound(str(exc)) from None
        return cast(ControlJSON, control.to_json())
