"""Events: the timestamped records of a run, with their JSON form (the wire and store format).

The TypeScript mirror lives in ``labextension/src/tokens.ts``; bump ``EVENT_VERSION`` when the
JSON changes shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from .errors import RankFailure

EVENT_VERSION = 1


class RunState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    STOPPED = "stopped"

    @property
    def finished(self) -> bool:
        return self not in (RunState.PENDING, RunState.RUNNING)


class RankState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    EXITED = "exited"


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"
    RESULT = "result"  # the repr of the cell's last expression


@dataclass(frozen=True)
class RunEvent:
    kind: ClassVar[str] = "run"
    run_id: str
    t: float
    state: RunState
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "t": self.t,
            "state": self.state.value,
            "message": self.message,
        }


@dataclass(frozen=True)
class RankEvent:
    kind: ClassVar[str] = "rank"
    run_id: str
    rank: int
    t: float
    state: RankState
    host: str = ""
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "rank": self.rank,
            "t": self.t,
            "state": self.state.value,
            "host": self.host,
            "pid": self.pid,
        }


@dataclass(frozen=True)
class OutputEvent:
    """One line of output (without its newline)."""

    kind: ClassVar[str] = "output"
    run_id: str
    rank: int
    t: float
    stream: Stream
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "rank": self.rank,
            "t": self.t,
            "stream": self.stream.value,
            "text": self.text,
        }


@dataclass(frozen=True)
class MetricEvent:
    """One ``report(**values)`` call, or one system sample (names starting with ``sys.``)."""

    kind: ClassVar[str] = "metric"
    run_id: str
    rank: int
    t: float
    values: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "rank": self.rank,
            "t": self.t,
            "values": self.values,
        }


@dataclass(frozen=True)
class ErrorEvent:
    kind: ClassVar[str] = "error"
    run_id: str
    failure: RankFailure

    @property
    def rank(self) -> int:
        return self.failure.rank

    @property
    def t(self) -> float:
        return self.failure.t

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "rank": self.rank,
            "t": self.t,
            "failure": self.failure.to_json(),
        }


Event = RunEvent | RankEvent | OutputEvent | MetricEvent | ErrorEvent


def event_from_json(data: dict[str, Any]) -> Event:
    kind = data["kind"]
    run_id, t = str(data["run_id"]), float(data["t"])
    if kind == "run":
        return RunEvent(run_id, t, RunState(data["state"]), str(data.get("message", "")))
    if kind == "rank":
        return RankEvent(
            run_id,
            int(data["rank"]),
            t,
            RankState(data["state"]),
            str(data.get("host", "")),
            data.get("pid"),
        )
    if kind == "output":
        return OutputEvent(run_id, int(data["rank"]), t, Stream(data["stream"]), str(data["text"]))
    if kind == "metric":
        values = {str(k): float(v) for k, v in dict(data["values"]).items()}
        return MetricEvent(run_id, int(data["rank"]), t, values)
    if kind == "error":
        return ErrorEvent(run_id, RankFailure.from_json(data["failure"]))
    raise ValueError(f"unknown event kind {kind!r}")
