"""The records the history holds, as readers get them (and their JSON for the server)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..events import RunState
from . import numruns


def new_run_id() -> str:
    """Sortable by start time; 32 random bits, so parallel runs (a sweep) never share one."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"


@dataclass
class RunRecord:
    id: str
    backend: str
    world_size: int
    ranks: list[int]
    state: RunState = RunState.RUNNING
    cluster_id: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    notebook: str = ""
    cell_id: str = ""
    host: str = ""
    kernel_pid: int | None = None
    external_id: str = ""
    started: float = 0.0
    ended: float | None = None
    message: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    sweep_id: str = ""  # runs of one --sweep cell share it ("" for a cell without --sweep)
    kernel_id: str = ""  # the Jupyter kernel that ran it ("" outside a kernel)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "backend": self.backend,
            "world_size": self.world_size,
            "ranks": self.ranks,
            "state": self.state.value,
            "cluster_id": self.cluster_id,
            "spec": self.spec,
            "source": self.source,
            "notebook": self.notebook,
            "cell_id": self.cell_id,
            "host": self.host,
            "kernel_pid": self.kernel_pid,
            "external_id": self.external_id,
            "started": self.started,
            "ended": self.ended,
            "message": self.message,
            "summary": self.summary,
            "sweep_id": self.sweep_id,
            "kernel_id": self.kernel_id,
        }


@dataclass
class RankRecord:
    rank: int
    host: str
    pid: int | None
    state: str
    coords: dict[str, Any]
    updated: float
    heartbeat: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "pid": self.pid,
            "state": self.state,
            "coords": self.coords,
            "updated": self.updated,
            "heartbeat": self.heartbeat,
        }


@dataclass
class LogLine:
    seq: int
    rank: int
    t: float
    stream: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "rank": self.rank,
            "t": self.t,
            "stream": self.stream,
            "text": self.text,
        }


@dataclass
class Control:
    """A request from outside the kernel (the server extension) to a live cluster: ``cancel``
    a run (``target`` is its id), take the ``stacks`` of its ranks (of ``rank`` only, when
    given), or ``stop`` the cluster (``target`` is the cluster id)."""

    id: int
    cluster_id: str
    target: str
    action: str
    t: float
    rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cluster_id": self.cluster_id,
            "target": self.target,
            "action": self.action,
            "t": self.t,
            "rank": self.rank,
        }


def _ranks(text: str | None, damaged: list[str]) -> list[int]:
    """A run's ``ranks`` as written: its numbers, or runs of them (layout 8, :mod:`.numruns`)."""
    try:
        ranks = numruns.unpack(loads(text, [], damaged, "ranks"))
    except ValueError:
        damaged.append("ranks")
        return []
    return [r for r in ranks if isinstance(r, int)]


def loads(text: str | None, default: Any, damaged: list[str], name: str) -> Any:
    """``text``'s JSON value (``default`` when empty); a damaged one (not JSON, or not of
    ``default``'s type) is ``default``, its ``name`` added to ``damaged``."""
    if not text:
        return default
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        value = None
    if not isinstance(value, type(default)):
        damaged.append(name)
        return default
    return value


def _run(row: tuple[Any, ...]) -> RunRecord:
    """A run as read back; a damaged column (a disk error, a hand edit) is named in its
    message and read as empty, so one bad row never hides the others."""
    (
        id_,
        cluster_id,
        backend,
        world_size,
        ranks,
        state,
        spec,
        source,
        notebook,
        cell_id,
        host,
        kernel_pid,
        external_id,
        started,
        ended,
        message,
        summary,
        sweep_id,
        kernel_id,
    ) = row
    damaged: list[str] = []
    try:
        run_state = RunState(state)
    except ValueError:
        run_state = RunState.FAILED
        damaged.append("state")
    record = RunRecord(
        id=str(id_),
        cluster_id=cluster_id or "",
        backend=str(backend or ""),
        world_size=world_size if isinstance(world_size, int) else 0,
        ranks=_ranks(ranks, damaged),
        state=run_state,
        spec=loads(spec, {}, damaged, "spec"),
        source=source or "",
        notebook=notebook or "",
        cell_id=cell_id or "",
        host=host or "",
        kernel_pid=kernel_pid,
        external_id=external_id or "",
        started=started if isinstance(started, (int, float)) else 0.0,
        ended=ended,
        message=message or "",
        summary=loads(summary, {}, damaged, "summary"),
        sweep_id=sweep_id or "",
        kernel_id=kernel_id or "",
    )
    if damaged:
        note = f"damaged in the history: {', '.join(damaged)} of run {record.id} (read as empty)"
        record.message = f"{record.message}; {note}" if record.message else note
    return record


class JsonMemo:
    """``json.dumps`` of a value that is often the very object given last under the same key:
    each cell of a live cluster records its spec, its ranks and their coordinates, which the
    session makes once per spec and per cluster (they are never changed once made)."""

    def __init__(self) -> None:
        self._last: dict[object, tuple[Any, str]] = {}  # (the value is kept: its id stays its)

    def dumps(self, key: object, value: Any, encode: Callable[[Any], Any] | None = None) -> str:
        """``json.dumps(value)``, or of ``encode(value)`` (the same ``encode`` under a key)."""
        last = self._last.get(key)
        if last is not None and last[0] is value:
            return last[1]
        text = json.dumps(encode(value) if encode is not None else value)
        self._last[key] = (value, text)
        return text
