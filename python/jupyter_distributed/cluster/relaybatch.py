"""The relay's side of output batched per node (:mod:`.fanbatch` says what a batch is and how
the kernel takes it): the output kept for the next batch. Relay-side only: the relay's process
imports it, so it imports nothing of the kernel's (the history, the interface)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ..protocol.frames import MAX_HEADER
from ..protocol.signing import rank_name
from .relayalike import Alike

BATCH = "batch"  # the type of a relay's batch of its ranks' output
WINDOW_S = 0.002  # the longest a rank's output waits at its relay for others to join it
MAX_BATCH = 256  # messages in one batch at most
MAX_BATCH_BYTES = MAX_HEADER  # their headers' bytes at most (the kernel's cap on one frame)


class Batcher:
    """The relay's side: the output kept for the next batch."""

    def __init__(self, ranks: Iterable[int]) -> None:
        self._mine = {rank_name(r) for r in ranks}
        self._kept: list[list[Any]] = []
        self._since = 0.0
        self._bytes = 0
        self.alike = Alike(ranks)  # (which kept entry a rank's message may join)

    def keep(self, header: dict[str, Any], buffers: int, size: int) -> bool:
        """Whether a rank's verified message (``size``: its header's bytes) joins the batch
        (False: send it as it is, after :meth:`take` sent what is kept; so does one that would
        take the batch past :data:`MAX_BATCH_BYTES`)."""
        kind = header.get("type")
        if kind not in ("output", "stacks") or buffers or header["src"] not in self._mine:
            return False
        rank = int(header["src"][1:])
        extra = 24 * len(header.get("lines") or ()) + 16  # (joined: its name, counter, times)
        if self._bytes + extra <= MAX_BATCH_BYTES and self.alike.join(self._kept, rank, header):
            self._bytes += extra
            return True
        if self._bytes + size > MAX_BATCH_BYTES:
            return False
        self._bytes += size
        fields = {k: v for k, v in header.items() if k not in ("src", "dst", "seq", "v")}
        self.alike.kept(len(self._kept), rank, header)
        self._kept.append([header["src"], int(header["seq"]), fields])
        self._since = self._since or time.monotonic()
        return True

    def holds(self, src: str) -> bool:
        """Whether the batch holds a message of the rank that ``src`` names (then the batch
        goes before that rank's next message that is sent as it is)."""
        return self.alike.holds(int(src[1:]))

    def due(self) -> tuple[bool, float | None]:
        """Whether the batch is due now; else in how many seconds it will be (None: empty)."""
        if not self._kept:
            return False, None
        if len(self._kept) >= MAX_BATCH or self._bytes > MAX_BATCH_BYTES - 4096:
            return True, 0.0
        wait = self.alike.waits(self._kept)  # (ranks that may still send the same)
        left = WINDOW_S - (time.monotonic() - self._since) if wait is None else wait
        return left <= 0, max(0.0, left)

    def take(self) -> dict[str, Any] | None:
        """The batch's fields (None: nothing kept); nothing is kept after."""
        if not self._kept:
            return None
        kept, self._kept, self._since, self._bytes = self._kept, [], 0.0, 0
        self.alike.clear()
        return {"type": BATCH, "each": [compact(entry) for entry in kept]}


def compact(entry: list[Any]) -> list[Any]:
    """A rank's kept message as the batch carries it: its lines as their ``texts`` and
    ``times`` (one time where all are at one, as one read of the rank's pipe gives them),
    which the kernel reads at a third of the cost of (time, text) pairs (see
    :mod:`.fanlines`); anything else as it came."""
    fields = entry[2] if len(entry) == 3 else None
    lines = fields.get("lines") if fields is not None and fields["type"] == "output" else None
    if fields is None or not isinstance(lines, list) or not lines:
        return entry
    try:
        times, texts = zip(*lines, strict=True)
    except (TypeError, ValueError):
        return entry  # (the kernel refuses it, as it came)
    one = times.count(times[0]) == len(times)
    fields = {k: v for k, v in fields.items() if k != "lines"}
    fields["texts"], fields["times"] = list(texts), [times[0]] if one else list(times)
    return [entry[0], entry[1], fields]
