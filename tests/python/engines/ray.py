"""A real Ray head for the tests, in a network namespace with only ``lo``: there Ray keeps
127.0.0.1 (elsewhere it swaps in the machine's routable address). Its own HOME and RAY_TMPDIR
keep it away from any other Ray (and from ``~/.ray/auth_token``); it is stopped by PID (SIGTERM
to ``ray start --block``), never with ``ray stop``, which ends every Ray on the machine."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .netns import NetNs
from .netns import missing as netns_missing

PORT = 6379  # inside our namespace: no other Ray can hold it
CPUS = 4
# a loaded 2-core machine starts Ray's agents slowly: wait for them longer than Ray's default
# before the raylet gives up
SLOW = {
    "RAY_agent_register_timeout_ms": "120000",
    "RAY_worker_register_timeout_seconds": "120",
    "RAY_raylet_start_wait_time_s": "120",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing() -> str:
    if importlib.util.find_spec("ray") is None:
        return "ray is not installed (pip install 'ray[default]')"
    return netns_missing()


class RayHead:
    """A Ray head started (not yet up: :meth:`wait_up`) in a namespace of its own."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.ns = NetNs("ray")
        self.address = f"127.0.0.1:{PORT}"
        (root / "home").mkdir()
        (root / "tmp").mkdir()
        self.env = {"HOME": str(root / "home"), "RAY_TMPDIR": str(root / "tmp")}
        ray = str(Path(sys.executable).with_name("ray"))
        with (root / "head.log").open("wb") as log:
            self.proc = subprocess.Popen(
                self.ns.command(
                    ray,
                    "start",
                    "--head",
                    "--block",
                    f"--port={PORT}",
                    "--node-ip-address=127.0.0.1",
                    f"--num-cpus={CPUS}",
                    "--num-gpus=0",
                    "--object-store-memory=200000000",
                    "--include-dashboard=false",
                    "--disable-usage-stats",
                    f"--temp-dir={root / 'tmp'}",
                ),
                env={**os.environ, **self.env, **SLOW},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started = time.monotonic()
        self.up = False

    def wait_up(self, within: float = 240.0) -> None:  # a loaded 2-core machine is slow
        """Return once the head says it is up (at once after the first time); stopped and an
        error with the end of its log when it is not, ``within`` seconds after its start."""
        if self.up:
            return
        try:
            while time.monotonic() < self.started + within:
                if self.proc.poll() is not None:
                    break
                if "Ray runtime started" in (self.dir / "head.log").read_text(errors="replace"):
                    self.up = True
                    return
                time.sleep(0.2)
            tail = (self.dir / "head.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the Ray head did not start: {tail}")
        except BaseException:
            self.stop()
            raise

    @contextlib.contextmanager
    def second_node(self, cpus: int = 2) -> Iterator[subprocess.Popen[bytes]]:
        """A second Ray node joined to this head, in its namespace (same address, its own
        ports), for as long as the block runs; stopped by PID. Call it from inside the
        namespace (``in_ray``): the free ports are found there."""
        ray = str(Path(sys.executable).with_name("ray"))
        ports = [
            f"--{name}-port={_free_port()}"
            for name in (
                "node-manager", "object-manager", "dashboard-agent-listen",
                "dashboard-agent-grpc", "runtime-env-agent", "metrics-export",
            )
        ]  # fmt: skip
        before = self._nodes()
        with (self.dir / "second.log").open("wb") as log:
            proc = subprocess.Popen(
                self.ns.command(
                    ray, "start", "--block", f"--address={self.address}",
                    "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--num-gpus=0",
                    "--object-store-memory=100000000", "--disable-usage-stats", *ports,
                ),
                env={**os.environ, **self.env, **SLOW},
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while self._nodes() <= before and time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise RuntimeError((self.dir / "second.log").read_text(errors="replace"))
                time.sleep(0.5)
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    @staticmethod
    def _nodes() -> int:
        """How many alive nodes the connected driver's cluster has."""
        import ray

        nodes: list[dict[str, object]] = ray.nodes()  # type: ignore[no-untyped-call]
        return len([n for n in nodes if n.get("Alive")])

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.ns.delete()
        shutil.rmtree(self.dir, ignore_errors=True)
