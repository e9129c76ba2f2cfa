"""A rank's own stacks: answered from the channel's I/O thread, or dumped by a signal.

:func:`current_stacks` runs on the I/O thread and needs the GIL, which the main thread releases
while it waits in native code (a barrier, a ``ctypes`` call, a socket). When the main thread
holds the GIL, the I/O thread cannot answer; then the kernel sends :data:`DUMP_SIGNAL` and
``faulthandler`` writes every thread into this rank's dump file from a C signal handler.
"""

from __future__ import annotations

import contextlib
import faulthandler
import linecache
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..protocol.flight import summarize
from ..protocol.stacks import DUMP_SIGNAL, Frame, ThreadStack, crash_file, dump_file

# torch's flight recorder: gloo/xccl builds name it one way, NCCL builds the other
_FR_DUMPS = ("_dump_fr_trace_json", "_dump_nccl_trace_json")
MAX_FRAMES = 64
_stage = ["start"]
_dump: list[IO[str]] = []
_files: list[str] = []  # this rank's dump and crash files
_listeners: list[Callable[[str, str], None]] = []


def on_stage(listener: Callable[[str, str], None]) -> None:
    """Call ``listener(stage, detail)`` at every start-up stage (the kernel is told)."""
    _listeners.append(listener)


def set_stage(stage: str, detail: str = "") -> None:
    """Record how far start-up got; the stacks carry it and the listeners hear it."""
    _stage[0] = stage
    for listener in _listeners:
        listener(stage, detail)


def stage() -> str:
    return _stage[0]


def install_dump(directory: str, rank: int) -> None:
    """On :data:`DUMP_SIGNAL`, write every thread's stack to this rank's file (the GIL may be
    held: faulthandler needs none). The file starts with the main thread's id."""
    if not directory or not hasattr(faulthandler, "register"):
        return
    with contextlib.suppress(OSError):
        f = dump_file(directory, rank).open("a", encoding="utf-8")
        _files.append(f.name)
        _dump.append(f)  # kept open for the process' life: faulthandler writes to its fd
        faulthandler.register(DUMP_SIGNAL, file=f, all_threads=True, chain=False)
        f.write(f"main 0x{threading.main_thread().ident or 0:x}\n")  # now: registered
        f.flush()


def install_crash(directory: str, rank: int) -> None:
    """On a fatal signal (SIGSEGV, SIGABRT, SIGBUS, ...), write every thread's stack to this
    rank's crash file, which the kernel reads back when it sees the rank die of that signal."""
    if not directory:
        return
    with contextlib.suppress(OSError):
        f = crash_file(directory, rank).open("w", encoding="utf-8")
        _files.append(f.name)
        _dump.append(f)  # kept open: faulthandler writes to its fd as the rank dies
        faulthandler.enable(file=f, all_threads=True)


def remove_files() -> None:
    """(At the rank's normal end, after its ``atexit`` work: no fatal signal can come any more.)
    Remove this rank's dump and crash files, so that the kernel removes an empty directory
    once the ranks are gone, not hundreds of files while it stops them."""
    for name in _files:
        with contextlib.suppress(OSError):
            Path(name).unlink()


def current_stacks() -> list[dict[str, Any]]:
    """Every thread but the calling one (the I/O thread), outermost frame first, as JSON."""
    me = threading.get_ident()
    main = threading.main_thread().ident
    names = {t.ident: t.name for t in threading.enumerate()}
    out: list[dict[str, Any]] = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        frames: list[Frame] = []
        f: Any = frame
        while f is not None and len(frames) < MAX_FRAMES:
            code = f.f_code
            line = f.f_lineno or 0
            text = linecache.getline(code.co_filename, line, f.f_globals).strip()
            module = str(f.f_globals.get("__name__", ""))
            if code.co_filename.startswith("<cell "):
                module = ""
            name = getattr(code, "co_qualname", code.co_name)
            frames.append(Frame(code.co_filename, line, name, module, text))
            f = f.f_back
        frames.reverse()
        thread = ThreadStack(names.get(ident, f"0x{ident:x}"), ident == main, tuple(frames))
        out.append(thread.to_json())
    out.sort(key=lambda t: not t["main"])
    return out


def flight_summary() -> list[dict[str, Any]] | None:
    """torch's flight recorder per process group (:mod:`..protocol.flight`), or None when this
    rank has none (torch.distributed not imported or not initialised, no dump function) or the
    dump fails: the stacks answer never fails for it. Never imports torch."""
    dist = sys.modules.get("torch.distributed")
    c10d = sys.modules.get("torch._C._distributed_c10d")
    try:
        if dist is None or c10d is None or not dist.is_initialized():
            return None
        dump = next((getattr(c10d, n) for n in _FR_DUMPS if hasattr(c10d, n)), None)
        if dump is None:
            return None
        groups = summarize(dump(True, True))  # includeCollectives, onlyActive
    except Exception:  # noqa: BLE001 - a recorder's failure only leaves the summary out
        return None
    return [g.to_json() for g in groups] or None
