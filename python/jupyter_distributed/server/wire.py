"""The JSON the server extension speaks, as types: the Python twin of the panel's ``tokens.ts``.

Field names are the store's (snake_case), so ``RunRecord.to_json()`` and friends produce these
shapes directly. Bump ``API_VERSION`` whenever a shape changes; the panel checks it.

Endpoints, all under ``{base_url}/jupyter-distributed/api/``:

- ``GET version`` -> :class:`VersionReply`
- ``GET runs?limit=50&before=<started>`` -> :class:`RunsPage` (newest first)
- ``GET runs/<id>`` -> :class:`RunDetail`
- ``GET runs/<id>/logs?rank=0&rank=2&stream=stderr&search=text&after=<seq>&before=<seq>&limit=500``
  -> :class:`LogsPage`
- ``GET runs/<id>/metrics?after=<seq>&limit=`` -> :class:`MetricsPage`
- ``GET stream?after=<seq>&run=<id>`` (WebSocket) -> :class:`StreamMessage` messages: every event
  with ``seq > after`` in order, then new ones as they are written. Without ``after`` the stream
  starts at the store's current end (``RunsPage.last_seq`` is the cursor that goes with a list).
- ``GET events?after=<seq>&run=<id>`` (Server-Sent Events): the same messages, one SSE message
  per batch (``id:`` its last seq, ``data:`` the :class:`StreamMessage`); ``Last-Event-ID``
  resumes like ``after``.
- ``POST runs/<id>/cancel``, ``POST clusters/<cluster_id>/stop`` -> :class:`ControlReply` (202)
- any error -> :class:`ErrorReply` with the HTTP status (400 bad query, 404 unknown, 409 finished)
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

API_VERSION = 1

RunStateName = Literal["pending", "running", "completed", "failed", "interrupted", "stopped"]
StreamName = Literal["stdout", "stderr", "result"]


class RunJSON(TypedDict):
    id: str
    backend: str
    world_size: int
    ranks: list[int]
    state: RunStateName
    cluster_id: str
    spec: dict[str, Any]
    source: str
    notebook: str
    cell_id: str
    host: str
    kernel_pid: int | None
    external_id: str
    started: float
    ended: float | None
    message: str
    summary: dict[str, Any]


class RankJSON(TypedDict):
    rank: int
    host: str
    pid: int | None
    state: str  # starting, running, done, failed, interrupted, exited
    coords: dict[str, Any]  # data_parallel, pipeline_stage, tensor_parallel, role, node_rank...
    updated: float
    heartbeat: float | None


class LogLineJSON(TypedDict):
    seq: int
    rank: int
    t: float
    stream: StreamName
    text: str


class MetricSampleJSON(TypedDict):
    seq: int
    rank: int
    t: float
    values: dict[str, float]  # report(**values); names starting with "sys." are system samples


class VersionReply(TypedDict):
    version: str  # the package version (the same for the Python and npm packages)
    api_version: int  # API_VERSION


class RunsPage(TypedDict):
    runs: list[RunJSON]
    version: int
    last_seq: int  # the store's last event seq when the list was read: a stream cursor


class RunDetail(TypedDict):
    run: RunJSON
    ranks: list[RankJSON]


class LogsPage(TypedDict):
    lines: list[LogLineJSON]
    next: int  # the last line's seq, or the cursor given when there is none


class MetricsPage(TypedDict):
    samples: list[MetricSampleJSON]
    next: int


class StreamItem(TypedDict):
    seq: int
    event: dict[str, Any]  # an event's JSON, as in events.py (kind: run|rank|output|metric|error)


class StreamMessage(TypedDict):
    events: list[StreamItem]


class ControlJSON(TypedDict):
    id: int
    cluster_id: str
    target: str
    action: Literal["cancel", "stop"]
    t: float


class ControlReply(TypedDict):
    control: ControlJSON


class ErrorReply(TypedDict):
    message: str
