"""What ranks tell the kernel: hello or a fatal setup error, states, output lines, live lines,
rich displays and clearing them, metrics, heartbeats, a finished cell, start-up stages, stacks,
and a prompt that waits for the notebook's answer (``input()``, pdb).

Apart from :mod:`.commands` (what the kernel asks) so each direction of the protocol reads on
its own; :mod:`.messages` parses both. Standard library only (it ships to SageMaker).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .header import Message, opt

Lines = Sequence[tuple[float, str]]  # (time, text) per line; JSON gives lists, used alike


@dataclass(frozen=True)
class Hello(Message):
    """The rank is set up and waits for cells."""

    kind: ClassVar[str] = "hello"
    rank: int
    host: str
    pid: int
    python: str = ""
    coords: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Hello:
        return cls(
            int(h["rank"]), str(h["host"]), int(h["pid"]), str(h.get("python", "")),
            dict(h.get("coords") or {}),
        )  # fmt: skip


@dataclass(frozen=True)
class Fatal(Message):
    """The rank could not set up (a strategy or MPI failure) and exits."""

    kind: ClassVar[str] = "fatal"
    message: str

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Fatal:
        return cls(str(h["message"]))


@dataclass(frozen=True)
class State(Message):
    kind: ClassVar[str] = "state"
    run_id: str
    state: str = "running"

    @classmethod
    def _read(cls, h: dict[str, Any]) -> State:
        return cls(str(h["run_id"]), str(h.get("state", "running")))


def _a_line(line: Any) -> bool:
    return (
        type(line) is list
        and len(line) == 2
        and type(line[1]) is str
        and (type(line[0]) is float or type(line[0]) is int)
    )


@dataclass(frozen=True)
class Output(Message):
    """Lines a rank wrote to ``stream`` (stdout or stderr); ``run_id`` empty between cells."""

    kind: ClassVar[str] = "output"
    run_id: str
    stream: str
    lines: Lines

    def to_header(self) -> dict[str, Any]:  # the hot path: no copy of the lines
        return {"type": self.kind, "run_id": self.run_id, "stream": self.stream,
                "lines": self.lines}  # fmt: skip

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Output:
        stream, lines = str(h["stream"]), h["lines"]
        if stream not in ("stdout", "stderr") or not isinstance(lines, list):
            raise ValueError(f"stream {stream!r} with lines of type {type(lines).__name__}")
        if not all(map(_a_line, lines)):  # (~0.1 µs a line; the history joins the texts)
            raise ValueError("a line that is not [time, text]")
        return cls(str(h.get("run_id") or ""), stream, lines)


@dataclass(frozen=True)
class Live(Message):
    """The line a rank redraws in place with carriage returns (a progress bar), as it reads
    now; ``final``: the line ended (a newline), this is its last state."""

    kind: ClassVar[str] = "live"
    run_id: str
    stream: str
    text: str
    final: bool = False

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Live:
        stream = str(h["stream"])
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream {stream!r}")
        return cls(str(h.get("run_id") or ""), stream, str(h["text"]), bool(h.get("final")))


@dataclass(frozen=True)
class Display(Message):
    """A rich display from a rank: ``data`` is a MIME bundle (``{"image/png": base64, ...}``),
    as IPython's ``display()`` publishes it. ``display_id`` names a display that ``update``
    replaces; ``result``: the value of the cell's last expression."""

    kind: ClassVar[str] = "display"
    run_id: str
    data: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    display_id: str | None = None
    update: bool = False
    result: bool = False

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Display:
        data, metadata = h["data"], h.get("metadata") or {}
        if not isinstance(data, dict) or not isinstance(metadata, dict):
            raise TypeError("data and metadata must be objects")
        return cls(
            str(h.get("run_id") or ""), data, metadata, opt(str, h.get("display_id")),
            bool(h.get("update")), bool(h.get("result")),
        )  # fmt: skip


@dataclass(frozen=True)
class ClearOutput(Message):
    """``IPython.display.clear_output(wait)`` on a rank: clear what the rank shows under the
    cell (its displays and live line); ``wait``: only once the rank shows something new."""

    kind: ClassVar[str] = "clear_output"
    run_id: str
    wait: bool = False

    @classmethod
    def _read(cls, h: dict[str, Any]) -> ClearOutput:
        return cls(str(h.get("run_id") or ""), bool(h.get("wait")))


@dataclass(frozen=True)
class Metrics(Message):
    """``report()`` samples: ``count`` of them packed in the first buffer (:mod:`.metrics`),
    or, without a buffer, as JSON ``samples`` of numbers."""

    kind: ClassVar[str] = "metrics"
    run_id: str
    count: int = 0
    samples: Sequence[tuple[float, dict[str, float]]] | None = None

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Metrics:
        samples = h.get("samples")
        if samples is not None and not isinstance(samples, list):
            raise TypeError("samples must be a list")
        return cls(str(h.get("run_id") or ""), int(h.get("count", 0)), samples)


@dataclass(frozen=True)
class Heartbeat(Message):
    """Every second: the rank's CPU, RSS and GPU samples, and what tells an out-of-memory kill
    (the memory limit that applies to it, its memory cgroup and that cgroup's OOM counters)."""

    kind: ClassVar[str] = "heartbeat"
    run_id: str
    t: float
    cpu: float
    rss_mb: float
    gpu_util: float | None = None
    gpu_mem_mb: float | None = None
    mem_limit_mb: float | None = None
    cgroup: str | None = None
    oom_kills: int | None = None
    failcnt: int | None = None

    def values(self) -> dict[str, float]:
        """The ``sys.*`` metrics this heartbeat records."""
        out = {"sys.cpu_percent": self.cpu, "sys.rss_mb": self.rss_mb}
        if self.gpu_util is not None:
            out["sys.gpu_util"] = self.gpu_util
        if self.gpu_mem_mb is not None:
            out["sys.gpu_mem_mb"] = self.gpu_mem_mb
        return out

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Heartbeat:
        return cls(
            str(h.get("run_id") or ""), float(h["t"]), float(h["cpu"]), float(h["rss_mb"]),
            opt(float, h.get("gpu_util")), opt(float, h.get("gpu_mem_mb")),
            opt(float, h.get("mem_limit_mb")), opt(str, h.get("cgroup")),
            opt(int, h.get("oom_kills")), opt(int, h.get("failcnt")),
        )  # fmt: skip


@dataclass(frozen=True)
class Done(Message):
    """A cell ended on the rank. ``status``: ok, interrupted or error; ``failure`` is a
    :class:`RankFailure` as JSON. Buffers: the pickled pulled values, then their out-of-band
    buffers."""

    kind: ClassVar[str] = "done"
    run_id: str
    status: str
    failure: dict[str, Any] | None = None
    value: str | None = None
    pull_errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Done:
        failure = h.get("failure")
        if failure is not None and not isinstance(failure, dict):
            raise TypeError("failure must be an object")
        errors = {str(k): str(v) for k, v in dict(h.get("pull_errors") or {}).items()}
        return cls(str(h["run_id"]), str(h["status"]), failure, opt(str, h.get("value")), errors)


@dataclass(frozen=True)
class Stage(Message):
    """How far the rank's start-up got: ``setup`` (connected, importing and preparing its
    strategy), ``init_process_group`` (waiting for the other ranks to rendezvous)."""

    kind: ClassVar[str] = "stage"
    stage: str
    pid: int = 0
    detail: str = ""

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Stage:
        return cls(str(h["stage"]), int(h.get("pid", 0)), str(h.get("detail", "")))


@dataclass(frozen=True)
class Stacks(Message):
    """The answer to :class:`StackRequest`: every thread as JSON (:mod:`.stacks`), and torch's
    flight recorder per process group (:mod:`.flight`) when the rank has one (older ranks: None)."""

    kind: ClassVar[str] = "stacks"
    request_id: str
    threads: Sequence[dict[str, Any]]
    stage: str = ""
    flight: Sequence[dict[str, Any]] | None = None

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Stacks:
        threads = h["threads"]
        if not isinstance(threads, list) or not all(isinstance(t, dict) for t in threads):
            raise TypeError("threads must be a list of objects")
        flight = h.get("flight")
        if flight is not None and (
            not isinstance(flight, list) or not all(isinstance(g, dict) for g in flight)
        ):
            raise TypeError("flight must be a list of objects")
        return cls(str(h["request_id"]), threads, str(h.get("stage", "")), flight)


@dataclass(frozen=True)
class Prompt(Message):
    """The rank's main thread waits for a line from the notebook (``input()``, ``getpass()``,
    pdb's prompt): the kernel asks through its stdin channel and answers with
    :class:`~.commands.Reply`. ``text``: the prompt as shown; ``debugger``: pdb's, which
    the kernel serves until the rank leaves pdb (:class:`Resumed`) before another rank's."""

    kind: ClassVar[str] = "prompt"
    run_id: str
    text: str
    password: bool = False
    debugger: bool = False

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Prompt:
        return cls(
            str(h["run_id"]), str(h["text"]), bool(h.get("password")), bool(h.get("debugger"))
        )


@dataclass(frozen=True)
class Resumed(Message):
    """The rank left pdb (``c``, ``q``, the end of a post-mortem): it prompts no more until
    its next breakpoint, so another rank's prompt may be served."""

    kind: ClassVar[str] = "resumed"
    run_id: str

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Resumed:
        return cls(str(h["run_id"]))
