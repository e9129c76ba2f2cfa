"""A relay's batch of its ranks' own lines, taken as one event (issue 26).

A relay's batch (:mod:`.fanbatch`) holds up to :data:`~.relaybatch.MAX_BATCH` of its ranks'
``output`` messages. The kernel checks each rank's counter and keeps each rank's last lines as
if the message had come alone (:mod:`.intake`), but it neither makes a message object per rank
nor decodes each on its own: the messages of one run that follow each other in the batch
become ONE :class:`~..events.OutputBatch`, which the history writes as each rank's rows (one
per message, :mod:`..history.eventrows`) and the cell's view takes in one pass. A message that
cannot be taken so (a rank not in the cluster, output before the run began, a rank with cell
messages waiting for it, see :mod:`.cellorder`) is taken as before, after the lines before it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..events import OutputBatch, Recorded, Stream
from ..protocol import reports as r
from ..protocol.header import BadHeader

STREAMS = {"stdout": Stream.STDOUT, "stderr": Stream.STDERR}


class Plain(NamedTuple):
    """A rank's ``output`` message in a batch, checked as :class:`~..protocol.reports.Output`
    checks it, without making one: its lines' texts, and their times (one where all are at
    one time)."""

    run_id: str
    stream: Stream
    texts: list[str]
    times: list[float]

    def message(self) -> r.Output:
        """The message itself, for the way a rank's message is taken alone."""
        times = self.times if len(self.times) > 1 else self.times * len(self.texts)
        lines = list(zip(times, self.texts, strict=True))
        return r.Output(self.run_id, self.stream.value, lines)


def plain(fields: dict[str, Any]) -> Plain | None:
    """``fields`` as a :class:`Plain` where they are a message of output without buffers
    (its lines as ``texts`` and ``times``, see :func:`~.relaybatch.compact`, or as they
    came); None for another kind. Raises ``BadHeader`` where ``Output`` would, or where the
    times do not match the texts."""
    if fields.get("type") != "output" or "parts" in fields:
        return None
    try:
        stream, texts = STREAMS[fields["stream"]], fields.get("texts")
        if texts is None:  # (as the rank sent them)
            lines = fields["lines"]
            times, texts = [line[0] for line in lines], [line[1] for line in lines]
        else:
            times = fields["times"]
        n = len(times)
        ok = n == len(texts) or (n == 1 and bool(texts))
        if ok and type(texts) is list and type(times) is list and _typed(texts, times):
            return Plain(str(fields.get("run_id") or ""), stream, texts, times)
    except (KeyError, TypeError, IndexError):
        pass
    raise BadHeader(f"an 'output' message with stream {fields.get('stream')!r}, bad lines")


def _typed(texts: list[Any], times: list[Any]) -> bool:
    """Every text a string and every time a number (~0.05 µs a line): else the history's
    write of the whole batch would fail on it."""
    return set(map(type, texts)) <= {str} and set(map(type, times)) <= {float, int}


class Gather:
    """The messages of one run gathered into one :class:`~..events.OutputBatch`."""

    __slots__ = ("ranks", "run_id", "streams", "texts", "times")

    def __init__(self) -> None:
        self.run_id = ""
        self.ranks: list[int] = []
        self.streams: list[Stream] = []
        self.texts: list[list[str]] = []
        self.times: list[list[float]] = []

    def add(self, out: list[Recorded], run_id: str, rank: int, message: Plain) -> None:
        """A rank's message of ``run_id`` (its lines never empty); what was gathered for
        another run goes to ``out`` first."""
        if run_id != self.run_id:
            self.flush(out)
            self.run_id = run_id
        self.ranks.append(rank)
        self.streams.append(message.stream)
        self.texts.append(message.texts)
        self.times.append(message.times)

    def flush(self, out: list[Recorded]) -> None:
        """What is gathered, as one event at the end of ``out`` (for what comes after it)."""
        if self.ranks:
            batch = OutputBatch(self.run_id, self.ranks, self.streams, self.texts, self.times)
            out.append(batch)
            self.ranks, self.streams, self.texts, self.times = [], [], [], []
