"""The Ray actor behind one rank: it runs the worker as a child process (which connects back to
the kernel over the signed channel) and reports that child's exit. Imported on the cluster."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKER = "jupyter_distributed.worker"
_TAIL_BYTES = 65536  # the end of the worker's output that ``tail`` reads


class RankActor:
    """One rank (or one node's relay, beside its ranks). Methods run on the actor's threads
    (``max_concurrency``), so ``wait`` may block while ``stop`` and ``tail`` still answer."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        # The worker's output, for its last line (``tail``): a file with no name, so nothing is
        # left on the node however this actor ends (``ray.kill``, its driver SIGKILLed).
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the actor's life)

    def where(self) -> tuple[str, str, int]:
        """(host name, node address as Ray knows it, a free port there)."""
        import ray

        with socket.socket() as s:
            s.bind(("", 0))
            port = int(s.getsockname()[1])
        address: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        return socket.gethostname(), address, port

    def start(
        self, env: dict[str, str], module: tuple[str, ...] = ("jupyter_distributed.worker",)
    ) -> int:
        """Start the worker (or ``module`` with its arguments: a node relay) with the package
        this actor imported (shipped by runtime_env)."""
        package_root = str(Path(__file__).resolve().parents[3])  # above jupyter_distributed/
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(  # noqa: S603 (our package's own modules)
            [sys.executable, "-m", *module],
            env={**os.environ, **env, "PYTHONPATH": path},
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self.proc.pid

    def wait(self) -> int:
        """The worker's exit code (negative: the signal), when it ends."""
        assert self.proc is not None  # noqa: S101 (start() comes first)
        return self.proc.wait()

    def stop(self, grace: float) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.01)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def tail(self) -> str:
        """The last line the worker wrote (read without moving the offset it writes at)."""
        try:
            fd = self.log.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, min(size, _TAIL_BYTES), max(0, size - _TAIL_BYTES))
        except (OSError, ValueError):  # (ValueError: closed)
            return ""
        lines = data.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""
