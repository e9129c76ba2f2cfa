"""The kinds of event: the timestamped records of a run, one at a time, each with its JSON form
(the wire and store format; the codec is :mod:`.eventjson`), and the states and streams they
carry. The forms that bring many at once, and what the kernel records, are :mod:`.events`
(which gives these names too).

The TypeScript mirror lives in ``labextension/src/wire.ts``; the shared fixtures in
``tests/wire/`` (written by ``tests/python/test_wire.py``, type-checked by ``tests/ts``) keep the
two from drifting. Bump ``server.wire.API_VERSION`` when the JSON changes shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from .errors import RankFailure
from .eventjson import JsonEvent


class RunState(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"  # waiting in a scheduler's queue (Slurm) for its nodes
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"

    @property
    def finished(self) -> bool:
        return self not in (RunState.PENDING, RunState.QUEUED, RunState.RUNNING)


class RankState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


def done_state(status: str) -> RankState:
    """The state of a rank whose cell ended with ``status`` (ok, interrupted or error)."""
    return {"ok": RankState.DONE, "interrupted": RankState.INTERRUPTED}.get(
        status, RankState.FAILED
    )


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"
    RESULT = "result"  # the repr of the cell's last expression
    DISPLAY = "display"  # a rich display's compact mark ("image/png 640×480"), in the logs


@dataclass(frozen=True)
class RunEvent(JsonEvent):
    kind: ClassVar[str] = "run"
    run_id: str
    t: float
    state: RunState
    message: str = ""


@dataclass(frozen=True)
class RankEvent(JsonEvent):
    kind: ClassVar[str] = "rank"
    run_id: str
    rank: int
    t: float
    state: RankState
    host: str = ""
    pid: int | None = None


@dataclass(frozen=True)
class OutputEvent(JsonEvent):
    """One line of output (without its newline)."""

    kind: ClassVar[str] = "output"
    run_id: str
    rank: int
    t: float
    stream: Stream
    text: str


@dataclass(frozen=True)
class MetricEvent(JsonEvent):
    """One ``report(**values)`` call, or one system sample (names starting with ``sys.``)."""

    kind: ClassVar[str] = "metric"
    run_id: str
    rank: int
    t: float
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ErrorEvent(JsonEvent):
    kind: ClassVar[str] = "error"
    json_extras: ClassVar[tuple[str, ...]] = ("rank", "t")
    run_id: str
    failure: RankFailure

    @property
    def rank(self) -> int:
        return self.failure.rank

    @property
    def t(self) -> float:
        return self.failure.t


@dataclass(frozen=True)
class DisplayEvent(JsonEvent):
    """A rich display from a rank: a MIME bundle (see :mod:`.protocol.bundles`). The history
    keeps the bundle; the logs show its :attr:`mark`."""

    kind: ClassVar[str] = "display"
    json_extras: ClassVar[tuple[str, ...]] = ("mark",)
    run_id: str
    rank: int
    t: float
    data: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    display_id: str | None = None
    update: bool = False
    result: bool = False

    @property
    def mark(self) -> str:
        from .protocol.bundles import mark

        return mark(self.data)


@dataclass(frozen=True)
class StacksEvent(JsonEvent):
    """Where ranks were when their stacks were taken (on a timeout, an interrupt they did not
    yield to, before they were killed, or on request): the diagnosis, root cause first, and
    every thread of each rank (:class:`~.protocol.stacks.RankStacks` as JSON)."""

    kind: ClassVar[str] = "stacks"
    run_id: str
    t: float
    reason: str  # timeout | interrupt | killed | straggler | request | launch
    diagnosis: str
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)


Event = RunEvent | RankEvent | OutputEvent | MetricEvent | ErrorEvent | DisplayEvent | StacksEvent
