"""A fork server for local ranks: import what they import once, then fork each rank from here.

The kernel starts this as a fresh interpreter (``python -m jupyter_distributed.worker.zygote
MODULE...``), so nothing of the kernel is inherited. It imports the modules, refuses to serve if
that started a Python thread (forking it would be unsafe) or initialised CUDA, freezes what they
made out of the garbage collector (``gc.freeze``: the ranks keep sharing those pages), then reads
one JSON request per line on stdin and answers on stdout, one JSON line each:

- ``{"env": {...}, "log": PATH, "cwd": DIR}`` → ``{"pid": PID}``: a rank forked in a new session,
  with exactly that environment, in that working directory (the kernel's: where a spawned rank
  would start, and what ``python -m`` puts first on ``sys.path``), stdin from /dev/null and
  stdout/stderr to ``PATH`` until it captures them;
- the same with ``"module": NAME, "argv": [ARG...]``: the process runs ``python -m NAME ARG...``
  instead of a rank (a node relay or an aggregator); the server imports ``NAME`` the first time
  (under the same checks as its own imports), so later ones share it too. The name is the
  kernel's (its relay's module), never a static import of this package: ranks forked after it
  have those modules loaded, unused (pages shared, nothing run);
- a request it cannot serve → ``{"error": WHY}`` (the kernel then spawns that process);
- when a rank ends → ``{"exit": PID, "code": CODE}`` (a negative code is the signal).

It exits when stdin closes (the kernel is gone); its ranks notice the kernel is gone themselves.
A forked process's command line (``ps``, ``/proc/PID/cmdline``) is rewritten to the one it would
have had spawned (:func:`retitle`).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import runpy
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from ..pids import stat_fields
from .descriptors import readable

_exit = os._exit  # (Python's own: a rank's os._exit hands its output on first, see capture.py)
_HOME = str(Path.cwd())  # where the fork server started: ``sys.path[0]`` under ``python -m``


def _say(obj: dict[str, object]) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


RANK = "jupyter_distributed.worker"


def retitle(args: list[str]) -> None:
    """Show ``args`` as this process's command line (Linux): written over the arguments the
    fork server was started with (longer than a rank's or a relay's: its module and what it
    preloads), cut where it is longer.
    Where /proc cannot be written, the fork server's stays."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = stat_fields(os.getpid()) or []
        start, end = int(fields[45]), int(fields[46])  # (arg_start, arg_end)
        text = "\0".join(args).encode()[: end - start - 1]
        with Path("/proc/self/mem").open("r+b", buffering=0) as mem:
            mem.seek(start)
            mem.write(text.ljust(end - start, b"\0"))


def _child(request: dict[str, Any], wake: tuple[int, int]) -> int:
    env, log, cwd = request["env"], request["log"], request.get("cwd", "")
    module, argv = request.get("module", RANK), [str(a) for a in request.get("argv", ())]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for fd in wake:
        os.close(fd)
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    os.environ.clear()
    os.environ.update(env)
    if cwd:
        with contextlib.suppress(OSError):  # (gone since: the rank starts here, as it can)
            os.chdir(cwd)
            if sys.path and sys.path[0] == _HOME:
                sys.path[0] = cwd
    retitle([sys.executable, "-m", module, *argv])
    if module != RANK:  # (as ``python -m``: its ``__main__`` block runs and says the exit code)
        sys.argv = [sys.executable, *argv]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0
    sys.argv = [sys.executable, "-m", RANK]
    from .__main__ import main

    return main()


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _say({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def preload(modules: list[str]) -> str:
    """Import ``modules`` here, to be shared by every process forked from here after; why not
    ("": done)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 (e.g. no torch: the kernel spawns ranks instead)
            return f"cannot import {name}: {type(exc).__name__}: {exc}"
    return ""


def unsafe() -> str:
    """Why forking from here is no longer safe after the imports ("": it is); where it is, what
    they made is frozen out of the garbage collector."""
    cuda = sys.modules.get("torch.cuda")
    # (a native pool such as OpenBLAS's, which numpy starts, re-initialises itself after a
    # fork through pthread_atfork; a Python thread would not)
    if threading.active_count() > 1:
        return "importing the preloaded modules started a thread; cannot fork"
    if cuda is not None and cuda.is_initialized():
        return "importing the preloaded modules initialised CUDA; cannot fork"
    # What the imports made is left out of every garbage collection from here on, here and in
    # the ranks forked from here: a full collection in a rank would otherwise write to each of
    # those objects, copying ~36 MB of torch's pages into every rank (copy-on-write), and walk
    # them all each time
    gc.collect()
    gc.freeze()
    return ""


def serve(modules: list[str]) -> int:
    error = preload(modules) or unsafe()
    if error:
        _say({"error": error})
        return 2
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _say({"ready": os.getpid()})
    pending = b""
    while True:
        with contextlib.suppress(InterruptedError):
            ready = readable([0, wake_r])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            _reap()
        if 0 not in ready:
            continue
        data = os.read(0, 65536)
        if not data:
            return 0
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            request = json.loads(line)
            module = str(request.get("module", RANK))
            if module != RANK and module not in sys.modules:  # (a relay's, the first time)
                if error := preload([module]):
                    _say({"error": error})
                    continue
                if error := unsafe():
                    _say({"error": error})
                    return 2
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = _child(request, (wake_r, wake_w))
                except BaseException:  # noqa: BLE001 (the rank's start-up error, to its log)
                    traceback.print_exc()
                finally:
                    with contextlib.suppress(Exception):
                        sys.stdout.flush()
                        sys.stderr.flush()
                    _exit(code)
            _say({"pid": pid})


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
