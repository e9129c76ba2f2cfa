"""The JSON the server extension speaks, as types: the Python twin of the panel's ``wire.ts``.

Field names are the store's (snake_case), so ``RunRecord.to_json()`` and friends produce these
shapes directly. Bump ``API_VERSION`` whenever a shape changes; the panel checks it. One real
document of each shape is kept in ``tests/wire/`` for both test suites (``make wire-fixtures``).

Endpoints, all under ``{base_url}/jupyter-distributed/api/``:

- ``GET version`` -> :class:`VersionReply`
- ``GET runs?limit=50&before=<started>&sweep=<sweep_id>`` -> :class:`RunsPage` (newest first;
  a probe's pairs left out, see :class:`ProbeJSON`)
- ``GET runs/<id>`` -> :class:`RunDetail` (the whole summary)
- ``GET runs/<id>/logs?rank=0&rank=2&stream=stderr&search=text&after=<seq>&before=<seq>&limit=500``
  -> :class:`LogsPage`
- ``GET runs/<id>/metrics?after=<seq>&limit=`` -> :class:`MetricsPage`
- ``GET runs/<id>/displays/<seq>`` -> :class:`DisplayJSON`: the rich display (MIME bundle) whose
  mark is the log line ``seq`` of stream ``display``
- ``GET stream?after=<seq>&run=<id>[&format=nodes]`` (WebSocket) -> :class:`StreamMessage`
  messages: every event with ``seq > after`` in order, then new ones as they are written. Without
  ``after`` the stream starts at the store's current end (``RunsPage.last_seq`` is the cursor
  that goes with a list). ``format=nodes``: rows batched per node (:class:`NodeBatch`); a server
  before it ignores the argument and sends ``events``, which the panel still reads.
- ``GET events?after=<seq>&run=<id>[&format=nodes]`` (Server-Sent Events): the same messages,
  one SSE message per batch (``id:`` its last seq, ``data:`` the :class:`StreamMessage`);
  ``Last-Event-ID`` resumes like ``after``.
- ``DELETE runs/<id>`` -> :class:`DeleteReply`: the finished run and all it holds are deleted
  (409 while it runs)
- ``POST runs/<id>/cancel``, ``POST clusters/<cluster_id>/stop`` -> :class:`ControlReply` (202)
- ``POST runs/<id>/stacks[?rank=R]`` -> :class:`ControlReply` (202): the kernel running the run
  takes every rank's stacks, or rank R's only (even while the cell runs);
  ``GET runs/<id>/stacks?after=<seq>`` -> :class:`StacksPage` (also in the stream, as events of
  kind ``stacks``)
- any error -> :class:`ErrorReply` with the HTTP status (400 bad query, 404 unknown, 409 finished;
  for a delete, 409 running)
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

API_VERSION = 2  # 2: the runs list leaves out a probe's pairs (ProbeJSON)

RunStateName = Literal[
    "pending", "queued", "running", "completed", "failed", "interrupted", "stopped"
]
RankStateName = Literal["starting", "running", "done", "failed", "interrupted"]
StreamName = Literal["stdout", "stderr", "result", "display"]


class RunJSON(TypedDict):
    id: str
    backend: str
    world_size: int
    ranks: list[int]
    state: RunStateName
    cluster_id: str
    spec: dict[str, Any]
    source: str
    notebook: str  # the path its kernel's notebook has now while the kernel lives, else at start
    cell_id: str
    host: str
    kernel_pid: int | None
    external_id: str
    started: float
    ended: float | None
    message: str
    summary: dict[str, Any]  # global_batch, sweep (this run's swept values), probe (ProbeJSON), ...
    sweep_id: str  # shared by the runs of one --sweep cell; "" otherwise
    kernel_id: str  # the Jupyter kernel that ran it; "" outside a kernel


class ProbePairJSON(TypedDict):
    a: int
    b: int
    link: Literal["intra", "inter"]
    latency_us: float
    bandwidth_gbs: float
    median_latency_us: float
    median_bandwidth_gbs: float


class ProbeGroupJSON(TypedDict):
    pairs: int
    latency_us: float
    bandwidth_gbs: float
    min_bandwidth_gbs: float


class ProbeJSON(TypedDict):
    """``summary["probe"]`` of a run of ``%distributed probe`` (``probe.assemble``).

    ``GET runs/<id>`` has ``pairs``, one per pair of ranks (32,640 at 256 ranks: megabytes);
    ``GET runs``, which the panel polls, leaves them out and gives their number, ``pair_count``.
    """

    run_id: str
    library: str
    world_size: int
    hosts: list[str]  # by rank
    groups: dict[str, ProbeGroupJSON]  # by link: intra, inter
    allreduce: list[dict[str, float]]  # bytes, seconds, algbw_gbs, busbw_gbs
    rank_seconds: float
    seconds: float
    pairs: NotRequired[list[ProbePairJSON]]  # GET runs/<id> only
    pair_count: NotRequired[int]  # GET runs only


class RankJSON(TypedDict):
    rank: int
    host: str
    pid: int | None
    state: RankStateName
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
    straggler_threshold: float  # c.Distributed.straggler_threshold: the panel's straggler rule


class RunDetail(TypedDict):
    run: RunJSON
    ranks: list[RankJSON]


class LogsPage(TypedDict):
    lines: list[LogLineJSON]
    next: int  # the last line's seq, or the cursor given when there is none


class MetricsPage(TypedDict):
    samples: list[MetricSampleJSON]
    next: int


class DisplayJSON(TypedDict):
    kind: Literal["display"]
    run_id: str
    rank: int
    t: float
    mark: str
    data: dict[str, Any]
    metadata: dict[str, Any]
    display_id: str | None
    update: bool
    result: bool


class StreamItem(TypedDict):
    seq: int
    event: dict[str, Any]  # an event's JSON, as in events.py (kind: run|rank|output|metric|error)


class NodeBatch(TypedDict):
    """One node's events of one kind in a delta of ``stream?format=nodes`` (``nodebatch.py``):
    column ``i`` of each list is event ``i`` (seq order). ``kind`` output: a node's lines of one
    ``stream`` (``text``); metric: its samples of one set of names (``values``: a column per
    name); rank: its ranks' states (``state``, ``pid``; ``node`` is their host)."""

    node: str  # the ranks' host; "" where the store does not know it yet
    run_id: str
    kind: Literal["output", "metric", "rank"]
    seq: list[int]
    rank: list[int]
    t: list[float]
    stream: NotRequired[StreamName]
    text: NotRequired[list[str]]
    values: NotRequired[dict[str, list[float]]]
    state: NotRequired[list[RankStateName]]
    pid: NotRequired[list[int | None]]


StreamBatch = StreamItem | NodeBatch


class StreamMessage(TypedDict):
    """A delta: ``events`` one object per event (the default, as every client before batches
    reads it), or with ``format=nodes`` ``batches``, rows batched per node (:class:`NodeBatch`)
    between the events that are sent alone (a run's state, an error, stacks): applied in order,
    a batch in one step; lines of different batches in ``seq`` order."""

    events: NotRequired[list[StreamItem]]
    batches: NotRequired[list[StreamBatch]]


class ControlJSON(TypedDict):
    id: int
    cluster_id: str
    target: str
    action: Literal["cancel", "stop", "stacks"]
    t: float
    rank: int | None  # stacks of this rank only (None: every rank)


class ControlReply(TypedDict):
    control: ControlJSON


class DeleteReply(TypedDict):
    deleted: str  # the run's id


class StacksJSON(TypedDict):
    """A stack snapshot (events.StacksEvent): the diagnosis, root cause first, then every
    thread of each rank (``ranks``: rank -> protocol.stacks.RankStacks as JSON)."""

    seq: int
    kind: Literal["stacks"]
    run_id: str
    t: float
    reason: Literal["timeout", "interrupt", "killed", "straggler", "request", "launch"]
    diagnosis: str
    ranks: dict[str, dict[str, Any]]


class StacksPage(TypedDict):
    stacks: list[StacksJSON]
    next: int


class ErrorReply(TypedDict):
    message: str
