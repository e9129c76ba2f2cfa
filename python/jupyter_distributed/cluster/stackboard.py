"""Asking ranks for their stacks, from any thread of the kernel.

The router puts every rank's answer (:class:`~.inbox.StacksReply`) on the :class:`StackBoard`,
not in the inbox, so the main thread can ask while it supervises a run, starts a cluster or runs
``%distributed stacks``, and the I/O thread's own requests (the panel's) need no main thread.
:func:`collect` sends the request, waits briefly for the answers and, for a rank on this host
that did not answer (its main thread holds the GIL), has ``faulthandler`` dump it by a signal.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path

from ..interface import RankInfo
from ..protocol.commands import StackRequest
from ..protocol.header import Message
from ..protocol.stacks import (
    DUMP_SIGNAL,
    Frame,
    RankStacks,
    ThreadStack,
    dump_file,
    parse_faulthandler,
)
from .inbox import StacksReply

ANSWER_WAIT = 0.5  # seconds for the ranks' I/O threads to answer: without a new answer ...
ANSWER_CAP = 3.0  # ... and in all, while answers keep coming (10,000 ranks answer over seconds)
DUMP_WAIT = 0.5  # seconds for a signal's faulthandler dump to appear


class StackBoard:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._answers: dict[str, dict[int, RankStacks]] = {}
        self._order: dict[str, list[int]] = {}  # each request's answering ranks, as they came

    def open(self, request_id: str) -> None:
        with self._cond:
            self._answers[request_id] = {}
            self._order[request_id] = []

    def put(self, reply: StacksReply) -> None:
        with self._cond:
            answers = self._answers.get(reply.request_id)
            if answers is not None:  # a late answer to a closed request is dropped
                answers[reply.stacks.rank] = reply.stacks
                self._order[reply.request_id].append(reply.stacks.rank)
                self._cond.notify_all()

    def wait(
        self, request_id: str, ranks: Sequence[int], timeout: float, cap: float = ANSWER_CAP
    ) -> dict[int, RankStacks]:
        """The answers of ``ranks`` until none came for ``timeout`` seconds (at most ``cap`` in
        all: thousands of ranks answer over seconds, through relays, each verified); closes the
        request. Each answer is looked at once, however many ranks wait."""
        now = time.monotonic()
        deadline, last = now + timeout, now + max(cap, timeout)
        with self._cond:
            answers = self._answers.get(request_id, {})
            order = self._order.get(request_id, [])
            missing, seen = set(ranks), 0
            while missing:
                if len(order) > seen:
                    missing.difference_update(order[seen:])
                    seen, deadline = len(order), time.monotonic() + timeout
                    continue
                left = min(deadline, last) - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            self._answers.pop(request_id, None)
            self._order.pop(request_id, None)
            return {r: answers[r] for r in ranks if r in answers}


def collect(
    board: StackBoard,
    send: Callable[[Sequence[int], Message], None],
    info: dict[int, RankInfo],
    ranks: Sequence[int],
    stacks_dir: str,
    code: str = "",
    answer_wait: float = ANSWER_WAIT,
    unreachable: Collection[int] = (),
) -> dict[int, RankStacks]:
    """Every thread of each of ``ranks``; a rank that could not be read says why. Ranks
    ``unreachable`` over the channel (their node's relay died) are not asked: their threads
    are dumped at once."""
    request_id = secrets.token_hex(6)
    board.open(request_id)
    asked = [r for r in ranks if r not in unreachable]
    send(asked, StackRequest(request_id))
    got = board.wait(request_id, asked, answer_wait) if asked else {}
    missing = [r for r in ranks if r not in got]
    if missing:
        got.update(_dump(info, missing, stacks_dir))
    return {r: with_text(got[r], code) for r in ranks}


def _dump(
    info: dict[int, RankInfo], ranks: Sequence[int], stacks_dir: str
) -> dict[int, RankStacks]:
    """Signal each local rank to dump its threads (faulthandler), then read the dumps."""
    here = socket.gethostname()
    started: dict[int, tuple[int, int]] = {}  # rank -> (pid, file size before)
    out: dict[int, RankStacks] = {}
    for rank in ranks:
        i = info.get(rank)
        path = dump_file(stacks_dir, rank) if stacks_dir else None
        if i is None or not i.pid or i.host not in (here, "") or path is None:
            why = "it did not answer and is not on this host" if i and i.pid else "no process yet"
            out[rank] = RankStacks(rank, (), "", "none", why)
            continue
        try:
            size = path.stat().st_size
            if size == 0:  # faulthandler is not registered yet: the signal would kill it
                raise FileNotFoundError
            os.kill(i.pid, DUMP_SIGNAL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            why = "it did not answer and cannot be signalled"
            out[rank] = RankStacks(rank, (), "", "none", why)
            continue
        started[rank] = (i.pid, size)
    deadline = time.monotonic() + DUMP_WAIT
    seen: dict[int, str] = {}
    while started and time.monotonic() < deadline:
        time.sleep(0.02)
        for rank, (_pid, size) in list(started.items()):
            text = _read_after(dump_file(stacks_dir, rank), size)
            if text and text == seen.get(rank):  # written and no longer growing
                out[rank] = _parsed(rank, stacks_dir, text)
                del started[rank]
            seen[rank] = text
    for rank in started:
        text = seen.get(rank, "")
        out[rank] = (
            _parsed(rank, stacks_dir, text)
            if text
            else RankStacks(rank, (), "", "none", f"no answer within {ANSWER_WAIT + DUMP_WAIT:g}s")
        )
    return out


def _read_after(path: Path, offset: int) -> str:
    with contextlib.suppress(OSError), path.open("rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")
    return ""


def _parsed(rank: int, stacks_dir: str, text: str) -> RankStacks:
    main = None
    with contextlib.suppress(OSError, ValueError), dump_file(stacks_dir, rank).open() as f:
        first = f.readline()
        if first.startswith("main "):
            main = int(first.split()[1], 16)
    return RankStacks(rank, parse_faulthandler(text, main), "", "faulthandler")


def with_text(stacks: RankStacks, code: str) -> RankStacks:
    """Fill in the source lines a faulthandler dump leaves out (the cell's from ``code``)."""
    if stacks.source != "faulthandler":
        return stacks
    cell = code.splitlines()
    threads = []
    for t in stacks.threads:
        frames = []
        for f in t.frames:
            text = f.text
            if not text and f.in_cell and 0 < f.line <= len(cell):
                text = cell[f.line - 1].strip()
            elif not text and not f.file.startswith("<"):
                text = linecache.getline(f.file, f.line).strip()
            frames.append(Frame(f.file, f.line, f.func, f.module, text))
        threads.append(ThreadStack(t.name, t.main, tuple(frames)))
    return replace(stacks, threads=tuple(threads))
