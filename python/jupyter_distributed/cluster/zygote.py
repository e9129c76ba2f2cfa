"""Local ranks forked from a fork server that has already imported what they import.

A spawned rank pays its imports itself: pyzmq and the rank's own code (~0.1 s of CPU), and
``import torch`` (seconds) for a torch strategy; N ranks started at once pay it N times, on the
same cores. The first time a local cluster starts, the kernel starts a fork server
(:mod:`..worker.zygote`, a fresh interpreter: no kernel state, no CUDA, no threads) that imports
those modules once; each rank of this and later clusters is forked from it, with exactly the
environment and working directory a spawned rank gets, and shares those imports' pages. There
is one server per set of modules (a torch strategy's also has torch) and of the variables read
as a process starts (``PYTHONPATH``, ``PYTHONHASHSEED``, ``LD_PRELOAD``, ...: see ``STARTUP``).
``DistributedLocal.fork`` chooses which ranks are forked ('all', 'torch', 'never'). Where a fork
server cannot run (it failed to start, or its imports started a thread), ranks are spawned.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import signal_name
from ..pids import proc_end
from ..spec import Spec

log = logging.getLogger("jupyter_distributed")

#: What every fork server imports: pyzmq and the rank's own code; a torch strategy's, torch too.
LIGHT = ("zmq", "jupyter_distributed.worker.__main__")
TORCH = (*LIGHT, "torch", "torch.distributed")
#: Variables read as a process starts, not later: a fork server is started with the ranks' own.
STARTUP = ("PYTHON", "LD_", "MALLOC_", "GLIBC_TUNABLES")
START_TIMEOUT = 120.0
#: Fork servers a kernel keeps at most (a torch one holds ~300 MB): ranks past them are spawned.
MAX_SERVERS = 4


class ForkRefused(OSError):
    """The fork server is gone, or cannot fork this (its answer says why): spawn it instead."""


class ForkServer:
    """One per kernel and environment; thread-safe. What it writes is read as it comes, by
    whoever asks: exit reports are kept (a look at hundreds of ranks asks each one's in O(1)),
    answers to a fork are queued."""

    def __init__(self, env: dict[str, str], preload: tuple[str, ...]) -> None:
        self.env, self.preload = env, preload
        self._lock = threading.Lock()  # (held while reading, never while waiting for an end)
        self._exits: dict[int, int] = {}
        self._answers: collections.deque[dict[str, object]] = collections.deque()
        self._buffer = b""
        self.proc = subprocess.Popen(  # noqa: S603 (our own module, the kernel's Python)
            [sys.executable, "-m", "jupyter_distributed.worker.zygote", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None  # noqa: S101 (a pipe, from Popen)
        self._fd = self.proc.stdout.fileno()
        self._poll = select.poll()  # (not select(): the kernel's descriptors may pass 1024)
        self._poll.register(self._fd, select.POLLIN)
        with self._lock:
            ready = self._next(START_TIMEOUT)
        if "ready" not in ready:
            self.close()
            raise OSError(str(ready.get("error", "the fork server did not start")))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def ended(self) -> str:
        """How this server ended, as the cause of its processes' deaths ("" while it serves):
        each one it forked is SIGKILLed as it goes (``PR_SET_PDEATHSIG``)."""
        code = self.proc.poll()
        if code is None:
            return ""
        how = f"killed by {signal_name(-code)}" if code < 0 else f"exit code {code}"
        return f"the kernel's fork server (pid {self.proc.pid}), which started it, ended ({how})"

    def fork(
        self, env: dict[str, str], log_path: Path, module: str = "", argv: tuple[str, ...] = ()
    ) -> int:
        """A rank forked with ``env``, its output to ``log_path``; with ``module``, a process
        that runs ``python -m module *argv`` instead (a node relay, an aggregator).
        :class:`ForkRefused` where the server is gone or cannot (the caller spawns it instead);
        OSError where it did not answer in time (it may still fork it: nothing is spawned)."""
        request: dict[str, object] = {"env": env, "log": str(log_path), "cwd": _cwd()}
        if module:
            request.update(module=module, argv=list(argv))
        with self._lock:
            assert self.proc.stdin is not None  # noqa: S101 (a pipe, from Popen)
            try:
                self.proc.stdin.write(json.dumps(request).encode() + b"\n")
                self.proc.stdin.flush()
                answer = self._next(START_TIMEOUT if module else 10)  # (a first import: longer)
            except (OSError, ValueError) as exc:  # (ValueError: closed here)
                with contextlib.suppress(subprocess.TimeoutExpired):  # (its pipe ends first)
                    self.proc.wait(0.2)
                if self.alive:
                    raise
                raise ForkRefused("the fork server is gone") from exc
        if "pid" not in answer:
            raise ForkRefused(str(answer.get("error", "the fork server did not fork")))
        return int(str(answer["pid"]))

    def exit_code(self, pid: int) -> int | None:
        """The exit code of forked process ``pid`` if its end was reported (a negative code is
        the signal), else None."""
        with self._lock:
            while self._fill(0):
                pass
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float) -> int | None:
        """The exit code of ``pid`` once reported, waiting up to ``timeout`` seconds for it
        (without the lock: other ranks' looks go on meanwhile)."""
        deadline = time.monotonic() + timeout
        while (code := self.exit_code(pid)) is None and self.alive:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            wait = select.poll()  # (a poll object of its own: one is not shared while it waits)
            wait.register(self._fd, select.POLLIN)
            wait.poll(min(left, 0.05) * 1000)
        return code

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def _next(self, timeout: float) -> dict[str, object]:
        """(With the lock.) The next answer that is not an exit report (those are kept)."""
        deadline = time.monotonic() + timeout
        while not self._answers:
            left = deadline - time.monotonic()
            if left <= 0 or not self._fill(left):  # (the time is up, or the pipe ended)
                raise OSError("the fork server did not answer")
        return self._answers.popleft()

    def _fill(self, timeout: float) -> bool:
        """(With the lock.) Read what was written, waiting up to ``timeout`` seconds for it;
        whether anything came (False at the end of the pipe too)."""
        if not self._poll.poll(timeout * 1000):
            return False
        data = os.read(self._fd, 65536)
        if not data:
            return False
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        for line in lines:
            reply: dict[str, object] = json.loads(line)
            if "exit" in reply:
                self._exits[int(str(reply["exit"]))] = int(str(reply["code"]))
            else:
                self._answers.append(reply)
        return True


class Forked:
    """A process forked by a fork server, with the part of ``Popen`` that clusters use."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid = server, pid

    def poll(self) -> int | None:
        """Its exit code once it ended, else None: ~10 µs a process (a look at hundreds of ranks
        polls each one). A zombie's is read from /proc at once: the fork server's report can
        wait for a core behind hundreds of busy ranks (a death was named 100-300 ms late)."""
        code = self.server.exit_code(self.pid)
        if code is not None:
            return code
        ended, status = proc_end(self.pid)
        if not ended:
            return None
        if status:  # (0: an exit with 0, or a status /proc keeps to itself: ask the server)
            return os.waitstatus_to_exitcode(status)
        code = self.server.wait_exit(self.pid, 0.1)
        if code is None and status == 0:
            return 0
        if code is None and not self.server.alive:
            return -int(signal.SIGKILL)  # the fork server was killed, and its ranks with it
        return code

    def wait(self, timeout: float = 10.0) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return code


_servers: dict[str, ForkServer] = {}
_failed: set[str] = set()
_lock = threading.Lock()


def fork_server(env: dict[str, str], preload: tuple[str, ...]) -> ForkServer | None:
    """The kernel's fork server for ranks with this environment that import ``preload``
    (started on first use), or None where it cannot run (then ranks are spawned).

    What a process reads as it starts (Python's ``PYTHON*`` variables: ``PYTHONPATH``,
    ``PYTHONHASHSEED``, ...; the dynamic loader's ``LD_*``: ``LD_PRELOAD``, ``LD_LIBRARY_PATH``;
    the C library's ``MALLOC_*`` and ``GLIBC_TUNABLES``) is the fork server's, so the ranks'
    values are its own: ranks with other values get another server."""
    startup = {k: v for k, v in env.items() if k.startswith(STARTUP)}
    key = json.dumps([sorted(startup.items()), preload])
    with _lock:
        server = _servers.get(key)
        if server is not None and server.alive:
            return server
        if key in _failed or sum(s.alive for s in _servers.values()) >= MAX_SERVERS:
            return None  # (a sweep over --env PYTHONHASHSEED: its later trials are spawned)
        base = {k: v for k, v in os.environ.items() if not k.startswith(STARTUP)}
        try:
            server = _servers[key] = ForkServer({**base, **startup}, preload)
        except OSError as exc:
            _failed.add(key)
            log.warning("jupyter-distributed: ranks are spawned, not forked: %s", exc)
            return None
        return server


def server_pids() -> set[int]:
    """The kernel's live fork servers: helpers that outlive a cluster, not its processes."""
    with _lock:
        return {server.proc.pid for server in _servers.values() if server.alive}


def servers_text() -> str:
    """The kernel's live fork servers, a line each for ``%distributed status`` ("": none)."""
    with _lock:
        live = [server for server in _servers.values() if server.alive]
    out = []
    for server in live:
        names = ", ".join(m for m in server.preload if not m.startswith("jupyter_distributed"))
        rss = _rss_mb(server.proc.pid)
        size = f", {rss:.0f} MB resident" if rss is not None else ""
        out.append(
            f"fork server pid {server.proc.pid}: imported {names} and the rank's code{size} "
            "(shared with the ranks and relays forked from it); it ends with the kernel"
        )
    return "\n".join(out)


def _rss_mb(pid: int) -> float | None:
    """A process's resident memory (Linux), in MB."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


@atexit.register
def stop_fork_servers() -> None:
    """Stop the kernel's fork servers (the next local cluster starts a fresh one)."""
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()
        _failed.clear()


def preload_for(spec: Spec, fork: str) -> tuple[str, ...] | None:
    """What the fork server of ``spec``'s ranks imports, or None where they are spawned."""
    if fork == "never" or not sys.platform.startswith("linux"):
        return None
    if spec.layout.strategy.uses_torch:
        return TORCH
    return LIGHT if fork == "all" else None


def _cwd() -> str:
    """The kernel's working directory now (``%cd`` moves it), where a spawned rank starts."""
    try:
        return str(Path.cwd())
    except OSError:  # (removed under the kernel: the rank stays where the fork server is)
        return ""
