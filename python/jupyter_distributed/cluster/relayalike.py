"""The relay's side of what several ranks of a node sent alike (:mod:`.fancollapse` says what
and how the kernel takes it): which kept entry of the relay's batch a rank's ``output``
message or ``stacks`` answer may join. Relay-side only: the relay's process imports it, so it
imports nothing of the kernel's (the history, the interface)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..collapse import WINDOW
from .relaydsts import ByDst

LINES_WAIT_S = 0.05  # the longest a batch waits for the same lines from the node's ranks
STACKS_WAIT_S = 0.3  # ... for the stacks of the ranks asked, from the request (the kernel: 0.5 s)


def _texts(fields: dict[str, Any]) -> list[str] | None:
    """The texts of an output message's lines; None where they are not (time, text) pairs."""
    lines = fields.get("lines")
    if not isinstance(lines, list) or not lines:
        return None
    texts = []
    for line in lines:
        if not (isinstance(line, list) and len(line) == 2 and isinstance(line[1], str)):
            return None
        if not isinstance(line[0], int | float):
            return None
        texts.append(line[1])
    return texts


class Alike:
    """The relay's side: which kept entry of the batch a rank's message may join."""

    def __init__(self, ranks: Iterable[int], clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._node = set(ranks)
        self._running: set[int] = set()  # ranks that got the current cell and did not end it
        self._cell = ""  # the current cell's run
        self._asked: dict[str, tuple[set[int], float]] = {}  # request -> (not answered, asked at)
        self._keys: dict[tuple[Any, ...], list[int]] = {}  # key -> positions in the batch
        self._last: dict[int, int] = {}  # rank -> position of its last kept message
        self._lines_at = -1  # position of the last output entry (-1: none)
        self._since = 0.0
        self._keyed: tuple[dict[str, Any] | None, tuple[Any, ...] | None] = (None, None)
        # the ranks of this node a dst names, read once per dst (a cell's is the same each cell)
        self._named = ByDst(
            lambda dst: frozenset(r for r in self._node if f"c{r}" in dst or f"r{r}" in dst)
        )

    def sent(self, header: dict[str, Any]) -> None:
        """A message from the kernel went down: a cell, or a stack request, for some ranks."""
        kind = header.get("type")
        if kind not in ("execute", "stack_request"):
            return
        mine = set(self._named.get(header["dst"]))
        key = str(header.get("run_id" if kind == "execute" else "request_id"))
        if kind == "execute":  # (a cell signed once per rank comes in as many messages)
            self._running = mine | self._running if key == self._cell else mine
            self._cell = key
        elif mine:
            asked = self._asked.get(key)
            self._asked[key] = (mine | asked[0], asked[1]) if asked else (mine, self._clock())

    def seen(self, header: dict[str, Any]) -> None:
        """A rank's message came up: one that ended its cell writes no more lines."""
        if header.get("type") == "done":
            self._running.discard(int(str(header["src"])[1:]))

    def gone(self, ranks: set[int]) -> None:
        """``ranks`` are gone (dead): they write no more lines."""
        self._running -= ranks

    def join(self, kept: list[list[Any]], rank: int, header: dict[str, Any]) -> bool:
        """Whether ``rank``'s verified message joined a kept entry (else the caller keeps it,
        then calls :meth:`kept`)."""
        key = self._key(header)
        self._keyed = (header, key)  # (for kept(), when it does not join)
        if key is None:
            return False
        after = self._last.get(rank, -1)
        for at in self._keys.get(key, ()):
            entry = kept[at]
            if at > after and self._same(entry, header):
                if not isinstance(entry[0], list):  # a rank's own entry becomes a shared one
                    fresh: list[list[float]] | None = [] if header["type"] == "output" else None
                    entry[:] = [[entry[0]], [entry[1]], entry[2], fresh]
                entry[0].append(header["src"])
                entry[1].append(int(header["seq"]))
                times: list[list[float]] | None = entry[3]
                if times is not None:
                    times.append([line[0] for line in header["lines"]])
                self._last[rank] = at
                self._answered(header, rank)
                return True
        return False

    def kept(self, at: int, rank: int, header: dict[str, Any]) -> None:
        """``rank``'s message was kept at position ``at`` of the batch."""
        self._last[rank] = at
        keyed, key = self._keyed
        key = key if keyed is header else self._key(header)
        if key is not None:
            self._keys.setdefault(key, []).append(at)
            self._since = self._since or self._clock()
            if header["type"] == "output":
                self._lines_at = at
        self._answered(header, rank)

    def holds(self, rank: int) -> bool:
        """Whether the batch holds a message of ``rank``."""
        return rank in self._last

    def waits(self, kept: list[list[Any]]) -> float | None:
        """How long the batch may still wait for ranks to send alike (None: it need not)."""
        if not self._since:
            return None
        now = self._clock()
        stacks = max(
            (at + STACKS_WAIT_S - now for ranks, at in self._asked.values() if ranks), default=0.0
        )
        if stacks > 0:  # (answers to a stack request: until its wait from the request is over)
            return stacks
        lines = self._lines_at >= 0 and any(
            self._last.get(r, -1) < self._lines_at and not self._in(kept[self._lines_at], r)
            for r in self._running
        )
        left = LINES_WAIT_S - (now - self._since)
        return left if lines and left > 0 else None

    def clear(self) -> None:
        """The batch was sent: nothing kept to join."""
        self._keys.clear()
        self._last.clear()
        self._lines_at, self._since = -1, 0.0
        now = self._clock()  # (a request some ranks never answer is waited for no more)
        self._asked = {q: a for q, a in self._asked.items() if now - a[1] < STACKS_WAIT_S}

    def _answered(self, header: dict[str, Any], rank: int) -> None:
        if header["type"] == "stacks":
            asked = self._asked.get(str(header.get("request_id")))
            if asked is not None:
                asked[0].discard(rank)
                if not asked[0]:
                    del self._asked[str(header.get("request_id"))]

    @staticmethod
    def _in(entry: list[Any], rank: int) -> bool:
        srcs = entry[0] if isinstance(entry[0], list) else [entry[0]]
        return f"r{rank}" in srcs

    @staticmethod
    def _key(header: dict[str, Any]) -> tuple[Any, ...] | None:
        """What alike messages share, cheaply (texts are compared on a match)."""
        kind = header.get("type")
        if kind == "stacks":
            fields = {k: v for k, v in header.items() if k not in ("src", "dst", "seq", "v")}
            return ("stacks", json.dumps(fields, sort_keys=True, default=str))
        if kind != "output":
            return None
        texts = _texts(header)
        if texts is None:
            return None
        return (
            "output",
            header.get("run_id"),
            header.get("stream"),
            len(texts),
            texts[0],
            texts[-1],
        )

    @staticmethod
    def _same(entry: list[Any], header: dict[str, Any]) -> bool:
        """Whether ``header``'s lines are the entry's, written near them (stacks: the key says)."""
        if header["type"] != "output":
            return True
        mine, theirs = header["lines"], entry[2]["lines"]
        near = (
            abs(mine[0][0] - theirs[0][0]) <= WINDOW and abs(mine[-1][0] - theirs[-1][0]) <= WINDOW
        )
        return near and all(a[1] == b[1] for a, b in zip(mine, theirs, strict=True))
