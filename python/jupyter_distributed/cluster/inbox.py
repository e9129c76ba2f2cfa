"""What the kernel's I/O thread hands the main thread, as typed items (no tuples matched on
their first element). Every event was recorded in the store before its item was queued."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RankFailure
from ..events import Recorded
from ..protocol.reports import Done, Prompt
from ..protocol.signing import Buffer
from ..protocol.stacks import RankStacks


@dataclass(frozen=True)
class Show:
    """Events of a run, to show under its cell, in order (one item per received batch, so
    a flood of lines costs the main thread one hand-off per batch, not one per line; a
    message's lines are one :class:`~..events.OutputLines`)."""

    events: tuple[Recorded, ...]


@dataclass(frozen=True)
class LiveLine:
    """The line a rank redraws in place (a progress bar), as it reads now; not recorded (its
    final state is, as an output line)."""

    run_id: str
    rank: int
    stream: str
    text: str


@dataclass(frozen=True)
class Cleared:
    """A rank called ``clear_output(wait)``: what it shows under the cell is cleared (not
    recorded: the history keeps every display)."""

    run_id: str
    rank: int
    wait: bool


@dataclass(frozen=True)
class Ready:
    """A rank said hello: it is set up and waits for cells."""

    rank: int


@dataclass(frozen=True)
class SetupFailed:
    rank: int
    message: str


@dataclass(frozen=True)
class Finished:
    """A rank's cell ended; ``buffers`` hold its pulled values, still pickled."""

    rank: int
    done: Done
    buffers: tuple[Buffer, ...] = ()


@dataclass(frozen=True)
class Ended:
    """Several ranks' cells ended plainly (``ok``, no value, nothing pulled): the ends a
    relay sent as ranges (:mod:`.fanin`), one item for them all instead of a
    :class:`Finished` each."""

    run_id: str
    ranks: Sequence[int]  # (a range: one span of a relay's node)


@dataclass(frozen=True)
class Exited:
    """A process of the cluster ended on its own (a rank, or a launcher with ``rank`` -1)."""

    failure: RankFailure


@dataclass(frozen=True)
class CancelRequested:
    """The Distributed panel asked to cancel this run (handled like the stop button)."""

    run_id: str


@dataclass(frozen=True)
class ChannelLost:
    """The I/O thread died; ``cause`` says why (the root cause, e.g. a full history store)."""

    cause: str


@dataclass(frozen=True)
class Lost:
    """The cluster was marked lost (``why``): whoever waits on the inbox looks again now,
    not at its next timeout (a cell's main thread waits up to a quarter of a second)."""

    why: str


@dataclass(frozen=True)
class StageReached:
    """A starting rank got this far (``setup``, ``init_process_group``, ``ready``)."""

    rank: int
    stage: str
    pid: int
    detail: str = ""


@dataclass(frozen=True)
class StacksReply:
    """A rank's answer to a stack request (the router hands it to whoever asked)."""

    request_id: str
    stacks: RankStacks


@dataclass(frozen=True)
class Prompted:
    """A rank waits for a line from the notebook (``input()``, pdb): the main thread asks
    through the kernel's stdin and sends the answer (:mod:`.prompts`)."""

    rank: int
    prompt: Prompt


@dataclass(frozen=True)
class LeftDebugger:
    """A rank left pdb: another rank's prompt may be served."""

    rank: int
    run_id: str


Item = (
    Show | LiveLine | Cleared | Ready | SetupFailed | Finished | Ended | Exited | CancelRequested
    | ChannelLost | Lost | StageReached | StacksReply | Prompted | LeftDebugger
)  # fmt: skip
