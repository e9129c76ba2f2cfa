"""What the kernel asks of its ranks: run a cell, interrupt it, stop, keep alive, send stacks.

Apart from :mod:`.reports` (what ranks send back) so each direction of the protocol reads on its
own; :mod:`.messages` parses both. Standard library only (it ships to SageMaker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .figures import FigureConfig
from .header import Message, opt


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

    def to_header(self) -> dict[str, Any]:
        out = super().to_header()
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
            opt(int, h.get("max_message")),
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
