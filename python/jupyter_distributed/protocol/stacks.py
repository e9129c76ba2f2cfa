"""A rank's thread stacks as data (standard library only), shared by the worker and the kernel.

A rank answers a stack request from its channel's I/O thread (``sys._current_frames()``), which
works while the main thread waits in native code with the GIL released (``dist.barrier()``, a
``ctypes`` call, a gloo wait). When the GIL is held, the kernel signals the rank and
``faulthandler`` writes every thread into a file: :func:`parse_faulthandler` reads it back.
Frames are outermost first, as in a Python traceback.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .flight import GroupFlight

CELL_PREFIX = "<cell "
# modules whose public name is shorter than their file's (``torch.distributed.barrier``)
PUBLIC_MODULES = {"torch.distributed.distributed_c10d": "torch.distributed"}
WRAPPERS = {"wrapper", "inner", "_fn", "decorate_context", "wrapped"}
# A rank whose main thread holds the GIL writes its stacks to :func:`dump_file` on this signal.
DUMP_SIGNAL = signal.SIGUSR2


def dump_file(directory: str, rank: int) -> Path:
    """Where rank ``rank`` dumps its stacks (in the cluster's 0700 directory)."""
    return Path(directory) / f"rank-{rank}.txt"


def crash_file(directory: str, rank: int) -> Path:
    """Where ``faulthandler`` writes rank ``rank``'s stack when it dies of a fatal signal."""
    return Path(directory) / f"crash-{rank}.txt"


def left_file(directory: str, rank: int) -> Path:
    """Where rank ``rank``'s guardian leaves what the rank wrote but never sent, once it died
    (``worker/guard.py``; read by ``cluster/leftovers.py``)."""
    return Path(directory) / f"left-{rank}.bin"


# the signals on which faulthandler writes a rank's stack before it dies
FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGFPE, signal.SIGABRT, signal.SIGBUS, signal.SIGILL)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str
    module: str = ""
    text: str = ""

    @property
    def in_cell(self) -> bool:
        return self.file.startswith(CELL_PREFIX)

    @property
    def qualname(self) -> str:
        module = PUBLIC_MODULES.get(self.module, self.module)
        return f"{module}.{self.func}" if module else self.func

    def to_json(self) -> list[Any]:
        return [self.file, self.line, self.func, self.module, self.text]

    @classmethod
    def from_json(cls, data: Any) -> Frame:
        file, line, func, module, text = [*list(data), "", ""][:5]
        return cls(str(file), int(line), str(func), str(module or ""), str(text or ""))


@dataclass(frozen=True)
class ThreadStack:
    name: str
    main: bool
    frames: tuple[Frame, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "main": self.main, "frames": [f.to_json() for f in self.frames]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThreadStack:
        frames = tuple(Frame.from_json(f) for f in data.get("frames") or ())
        return cls(str(data.get("name", "")), bool(data.get("main")), frames)


@dataclass(frozen=True)
class Where:
    """Where a main thread is: the innermost call it waits in and the cell line it came from."""

    call: str  # e.g. torch.distributed.barrier; "" when the cell's own line is innermost
    cell_line: int | None
    cell_text: str = ""

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.call, self.cell_line)

    def describe(self) -> str:
        line = ""
        if self.cell_line is not None:
            line = f"cell line {self.cell_line}" + (f": {self.cell_text}" if self.cell_text else "")
        if self.call:
            return f"waits in {self.call}" + (f" ({line})" if line else "")
        return f"is at {line}" if line else "is outside the cell"


def where(frames: tuple[Frame, ...]) -> Where:
    cell = [f for f in frames if f.in_cell]
    last_cell = cell[-1] if cell else None
    inner = [f for f in frames if not f.in_cell and f.func not in WRAPPERS]
    call = ""
    if last_cell is not None:
        after = frames[frames.index(last_cell) + 1 :]
        callees = [f for f in after if f.func not in WRAPPERS] or list(after)
        call = callees[-1].qualname if callees else ""
    elif inner:
        call = inner[-1].qualname
    return Where(
        call,
        last_cell.line if last_cell else None,
        last_cell.text.strip() if last_cell else "",
    )


@dataclass(frozen=True)
class RankStacks:
    """Every thread of one rank. ``source``: ``channel`` (its I/O thread answered),
    ``faulthandler`` (a signal dump: the GIL was held), or ``none`` (no answer; ``error``).
    ``flight``: torch's flight recorder per process group, when the rank had one (else empty)."""

    rank: int
    threads: tuple[ThreadStack, ...] = ()
    stage: str = ""
    source: str = "channel"
    error: str = ""
    flight: tuple[GroupFlight, ...] = ()

    @property
    def main(self) -> ThreadStack | None:
        return next((t for t in self.threads if t.main), None)

    @property
    def where(self) -> Where | None:
        main = self.main
        return where(main.frames) if main is not None else None

    def format(self, max_frames: int = 12) -> list[str]:
        """The main thread as a traceback (innermost last), then one line per other thread."""
        if not self.threads:
            return [f"(no stack: {self.error or 'no answer'})"]
        lines: list[str] = []
        main = self.main
        if main is not None:
            # from the cell down: the rank's own runtime above it is the same every time
            first = next((i for i, f in enumerate(main.frames) if f.in_cell), 0)
            frames = main.frames[first:][-max_frames:]
            if len(main.frames) - first > max_frames:
                lines.append(f"  ... {len(main.frames) - first - max_frames} outer frame(s)")
            for f in frames:
                lines.append(f'  File "{f.file}", line {f.line}, in {f.func}')
                if f.text:
                    lines.append(f"    {f.text.strip()}")
        others = [t for t in self.threads if not t.main]
        for t in others:
            top = t.frames[-1] if t.frames else None
            at = f"{top.func} ({top.file}:{top.line})" if top else "no Python frames"
            lines.append(f"  thread {t.name}: {at}")
        return lines

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "threads": [t.to_json() for t in self.threads],
            "stage": self.stage,
            "source": self.source,
            "error": self.error,
        }
        if self.flight:  # absent for ranks without a flight recorder (and from older peers)
            out["flight"] = [g.to_json() for g in self.flight]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankStacks:
        return cls(
            int(data["rank"]),
            tuple(ThreadStack.from_json(t) for t in data.get("threads") or ()),
            str(data.get("stage", "")),
            str(data.get("source", "channel")),
            str(data.get("error", "")),
            tuple(GroupFlight.from_json(g) for g in data.get("flight") or ()),
        )


_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
_MAIN = re.compile(r"^main (0x[0-9a-fA-F]+)")


def parse_faulthandler(text: str, main_ident: int | None = None) -> tuple[ThreadStack, ...]:
    """The last dump in ``text`` (``faulthandler.dump_traceback(all_threads=True)``), as
    threads with outermost frames first. ``main_ident``: the main thread's id (else the
    first thread listed is taken as the main one)."""
    threads: list[tuple[int, list[Frame]]] = []
    for line in text.splitlines():
        if m := _MAIN.match(line):
            main_ident = int(m.group(1), 16)
        elif m := _THREAD.match(line):
            if not line.startswith("Current") and threads and _is_new_dump(threads, line):
                threads = []
            threads.append((int(m.group(2), 16), []))
        elif (m := _FRAME.match(line)) and threads:
            file = m.group(1)
            threads[-1][1].append(Frame(file, int(m.group(2)), m.group(3).strip(), module_of(file)))
    if main_ident is None and threads:
        main_ident = threads[0][0]
    return tuple(
        ThreadStack(f"0x{ident:x}", ident == main_ident, tuple(reversed(frames)))
        for ident, frames in threads
    )


def module_of(path: str) -> str:
    """The module a file of an installed package defines (``""`` when unknown)."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path and path.endswith(".py"):
            module = path.rsplit(marker, 1)[1][:-3].replace("/", ".")
            return module.removesuffix(".__init__")
    return ""


def _is_new_dump(threads: list[tuple[int, list[Frame]]], line: str) -> bool:
    m = _THREAD.match(line)
    return m is not None and any(ident == int(m.group(2), 16) for ident, _ in threads)
