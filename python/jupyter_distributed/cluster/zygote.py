"""Local ranks that use torch, forked from a fork server that has already imported it.

``import torch`` costs seconds in every new process; a cluster of N ranks started with the
kernel's Python pays it N times at once. The first time a torch strategy starts a local
cluster, the kernel starts one fork server (:mod:`..worker.zygote`, a fresh interpreter: no
kernel state, no CUDA, no threads) that imports torch once; each rank of this and later
clusters is forked from it, with exactly the environment a spawned rank gets. Where the fork
server cannot run (it failed to start, or its import started a thread), ranks are spawned as
before.
"""

from __future__ import annotations

import atexit
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

from ..interface import Plan

log = logging.getLogger("jupyter_distributed")

PRELOAD = ("torch", "torch.distributed")
START_TIMEOUT = 120.0


class ForkServer:
    """One per kernel and environment; thread-safe."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._lock = threading.Lock()
        self._exits: dict[int, int] = {}
        self._buffer = b""
        self.proc = subprocess.Popen(  # noqa: S603 (our own module, the kernel's Python)
            [sys.executable, "-m", "jupyter_distributed.worker.zygote", *PRELOAD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        ready = self._next(START_TIMEOUT)
        if "ready" not in ready:
            self.close()
            raise OSError(str(ready.get("error", "the fork server did not start")))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, env: dict[str, str], log_path: Path) -> int:
        with self._lock:
            assert self.proc.stdin is not None  # noqa: S101 (a pipe, from Popen)
            self.proc.stdin.write(json.dumps({"env": env, "log": str(log_path)}).encode() + b"\n")
            self.proc.stdin.flush()
            return int(str(self._next(10)["pid"]))

    def exits(self) -> dict[int, int]:
        """Exit codes of forked processes that ended (pid → code), as reported so far."""
        with self._lock:
            while self._read(0):
                pass
            return dict(self._exits)

    def wait_exit(self, pid: int, timeout: float) -> int | None:
        """The exit code of ``pid`` once reported, waiting up to ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while pid not in self._exits:
                left = deadline - time.monotonic()
                if left <= 0 or self._read(left) is None:
                    break
            return self._exits.get(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def _next(self, timeout: float) -> dict[str, object]:
        """The next reply that is not an exit report (those are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(max(0.0, deadline - time.monotonic()))
            if reply is None:
                raise OSError("the fork server did not answer")
            if "exit" not in reply:
                return reply

    def _read(self, timeout: float) -> dict[str, object] | None:
        """One reply (exit reports are recorded on the way), or None after ``timeout``."""
        assert self.proc.stdout is not None  # noqa: S101 (a pipe, from Popen)
        fd = self.proc.stdout.fileno()
        poll = select.poll()  # (not select(): the kernel's descriptors may pass 1024)
        poll.register(fd, select.POLLIN)
        while b"\n" not in self._buffer:
            if not poll.poll(timeout * 1000):
                return None
            data = os.read(fd, 65536)
            if not data:
                return None
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, object] = json.loads(line)
        if "exit" in reply:
            self._exits[int(str(reply["exit"]))] = int(str(reply["code"]))
        return reply


_servers: dict[str, ForkServer] = {}
_failed: set[str] = set()
_lock = threading.Lock()


def fork_server(env: dict[str, str]) -> ForkServer | None:
    """The kernel's fork server for ranks with this ``PYTHONPATH`` (started on first use), or
    None where it cannot run (then ranks are spawned)."""
    key = env.get("PYTHONPATH", "")
    with _lock:
        server = _servers.get(key)
        if server is not None and server.alive:
            return server
        if key in _failed:
            return None
        try:
            server = _servers[key] = ForkServer({**os.environ, "PYTHONPATH": key})
        except OSError as exc:
            _failed.add(key)
            log.warning("jupyter-distributed: ranks are spawned, not forked: %s", exc)
            return None
        return server


@atexit.register
def stop_fork_servers() -> None:
    """Stop the kernel's fork servers (the next torch cluster starts a fresh one)."""
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()
        _failed.clear()


def use_fork_server(plan: Plan) -> bool:
    return plan.spec.layout.strategy.uses_torch and sys.platform.startswith("linux")
