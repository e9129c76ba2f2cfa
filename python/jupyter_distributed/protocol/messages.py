"""Every message between the kernel and its ranks, as a frozen dataclass (standard library only).

A message travels as a signed header (:mod:`.signing`) plus optional buffers. ``to_header``
gives the header's fields, with the message's ``kind`` as ``type`` (:mod:`.header`);
:func:`parse` turns a verified header back into its message. A new kind of message is one
dataclass in :mod:`.commands` or :mod:`.reports` and its name in :data:`COMMANDS` or
:data:`REPORTS` here; nothing else needs to know its wire form.

Kernel → rank: :class:`Execute`, :class:`Interrupt`, :class:`Shutdown`, :class:`Ping`,
:class:`StackRequest`, :class:`Reply`.
Rank → kernel: :class:`Hello`, :class:`Fatal`, :class:`State`, :class:`Output`,
:class:`Live`, :class:`Display`, :class:`ClearOutput`, :class:`Metrics`, :class:`Heartbeat`,
:class:`Done`, :class:`Stage`, :class:`Stacks`, :class:`Prompt`, :class:`Resumed`.
"""

from __future__ import annotations

from typing import Any

from .commands import Execute, Interrupt, Ping, Reply, Shutdown, StackRequest
from .header import Message
from .reports import (
    ClearOutput,
    Display,
    Done,
    Fatal,
    Heartbeat,
    Hello,
    Live,
    Metrics,
    Output,
    Prompt,
    Resumed,
    Stacks,
    Stage,
    State,
)

COMMANDS: tuple[type[Message], ...] = (Execute, Interrupt, Shutdown, Ping, StackRequest, Reply)
REPORTS: tuple[type[Message], ...] = (
    Hello, Fatal, State, Output, Live, Display, ClearOutput, Metrics, Heartbeat, Done, Stage,
    Stacks, Prompt, Resumed,
)  # fmt: skip
KINDS: dict[str, type[Message]] = {cls.kind: cls for cls in (*COMMANDS, *REPORTS)}


def parse(header: dict[str, Any]) -> Message | None:
    """The message of a verified header; None for a kind this version does not know (a newer
    peer's message is ignored, not fatal)."""
    cls = KINDS.get(str(header.get("type")))
    return None if cls is None else cls.from_header(header)
