"""What the kernel asks of its ranks: run a cell, interrupt it, stop, keep alive, send stacks,
answer a rank's prompt.

Apart from :mod:`.reports` (what ranks send back) so each direction of the protocol reads on its
own; :mod:`.messages` parses both. Standard library only (it ships to SageMaker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .figures import FigureConfig
from .header import Message, opt

#: What pdb, ``input()``, ``--break`` and ``%distributed debug`` say on a backend whose ranks
#: have no channel to the kernel (SageMaker): said by the kernel and by such a rank alike.
NO_PROMPTS = "this backend's ranks have no channel to the kernel: no pdb, input() or debug there"


@dataclass(frozen=True)
class Execute(Message):
    """Run a cell. Buffers: the pickled pushed values (the first), then their out-of-band
    buffers, unless ``shared`` names the shared-memory file that holds those."""

    kind: ClassVar[str] = "execute"
    run_id: str
    code: str
    pull: tuple[str, ...] = ()
    shared: dict[str, Any] | None = None
    display_max: int | None = None  # bytes of one display bundle; larger ones become a note
    figures: FigureConfig | None = None  # the kernel's inline figure settings
    max_message: int | None = None  # bytes of one message either way (Distributed.max_message_mb)
    stdin: bool = False  # the notebook answers input requests: input() and pdb ask the kernel
    break_rank: int | None = None  # --break R: pdb stops rank R at the cell's first line
    debug: bool = False  # no code: pdb on the rank's last exception (%distributed debug)

    def to_header(self) -> dict[str, Any]:
        out = super().to_header()
        for flag in ("stdin", "debug"):
            if not out[flag]:
                del out[flag]  # (the hot path's header stays as it was)
        if self.figures is not None:
            out["figures"] = self.figures.to_json()
        return out

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Execute:
        shared = h.get("shared")
        if shared is not None and not isinstance(shared, dict):
            raise TypeError("shared must be an object")
        pull = tuple(map(str, h.get("pull") or ()))
        figures = h.get("figures")
        return cls(
            str(h["run_id"]), str(h["code"]), pull, shared, opt(int, h.get("display_max")),
            None if figures is None else FigureConfig.from_json(figures),
            opt(int, h.get("max_message")), bool(h.get("stdin")),
            opt(int, h.get("break_rank")), bool(h.get("debug")),
        )  # fmt: skip


@dataclass(frozen=True)
class Interrupt(Message):
    """Raise KeyboardInterrupt in the rank's running cell (``run_id`` None: whatever runs)."""

    kind: ClassVar[str] = "interrupt"
    run_id: str | None = None

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Interrupt:
        return cls(opt(str, h.get("run_id")))


@dataclass(frozen=True)
class Shutdown(Message):
    kind: ClassVar[str] = "shutdown"


@dataclass(frozen=True)
class Ping(Message):
    """Keeps an idle connection's last-seen time fresh; ranks ignore it."""

    kind: ClassVar[str] = "ping"


@dataclass(frozen=True)
class StackRequest(Message):
    """Send the stacks of every thread (answered from the rank's I/O thread)."""

    kind: ClassVar[str] = "stack_request"
    request_id: str

    @classmethod
    def _read(cls, h: dict[str, Any]) -> StackRequest:
        return cls(str(h["request_id"]))


@dataclass(frozen=True)
class Reply(Message):
    """The notebook's answer to a rank's :class:`~.reports.Prompt` (``input()``, pdb):
    ``text`` without its newline; ``stop``: the stop button was pressed at the prompt (the rank
    raises KeyboardInterrupt there); ``eof``: no answer will come (the rank raises EOFError)."""

    kind: ClassVar[str] = "reply"
    run_id: str
    text: str = ""
    stop: bool = False
    eof: bool = False

    @classmethod
    def _read(cls, h: dict[str, Any]) -> Reply:
        return cls(
            str(h["run_id"]), str(h.get("text", "")), bool(h.get("stop")), bool(h.get("eof"))
        )


#: the commands that go to a rank's main thread (its cell socket), not its I/O thread
MAIN_THREAD: tuple[type[Message], ...] = (Execute, Shutdown, Reply)
