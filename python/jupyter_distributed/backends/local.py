"""``local``: ranks are processes on this machine, started with the kernel's own Python."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from ..spec import Spec
from ..store import Store
from .base import Backend, Plan, RankPlan, RunView
from .process import ProcessCluster

WORKER_COMMAND = (sys.executable, "-m", "jupyter_distributed.worker")


def rank_env(spec: Spec, rank: int, master_port: str) -> tuple[tuple[str, str], ...]:
    """torchrun's variables for ``rank``."""
    layout = spec.layout
    c = layout.coords(rank)
    return (
        ("RANK", str(rank)),
        ("WORLD_SIZE", str(layout.world_size)),
        ("LOCAL_RANK", str(c.local_rank)),
        ("LOCAL_WORLD_SIZE", str(layout.procs_per_node)),
        ("GROUP_RANK", str(c.node_rank)),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", master_port),
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LocalProcesses:
    """One process (and process group) per rank; output before capture goes to a log file."""

    def __init__(self, plan: Plan, boot_env: dict[str, str]) -> None:
        self.logdir = Path(tempfile.mkdtemp(prefix="jupyter-distributed-"))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._reported: set[int] = set()
        port = str(free_port())
        base = {**os.environ, **dict(plan.env), **boot_env}
        for r in plan.ranks:
            env = {**base, **{k: (port if v == "<free port>" else v) for k, v in r.env}}
            with (self.logdir / f"rank-{r.rank}.log").open("wb") as log:
                self.procs[r.rank] = subprocess.Popen(  # noqa: S603 (our own worker command)
                    plan.command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

    def exited(self) -> list[tuple[int | None, int]]:
        out: list[tuple[int | None, int]] = []
        for rank, proc in self.procs.items():
            code = proc.poll()
            if code is not None and rank not in self._reported:
                self._reported.add(rank)
                out.append((rank, code))
        return out

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs.values())

    def terminate(self, grace: float) -> None:
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.running():
            time.sleep(0.01)
        self._signal(signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait()

    def _signal(self, sig: int) -> None:
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)  # the rank and anything it started

    def log_tail(self, rank: int | None) -> str:
        path = self.logdir / f"rank-{rank}.log"
        try:
            lines = path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""


class LocalBackend(Backend):
    name: ClassVar[str] = "local"

    def plan(self, spec: Spec) -> Plan:
        host = socket.gethostname()
        ranks = tuple(
            RankPlan(rank, host, spec.layout.coords(rank), rank_env(spec, rank, "<free port>"))
            for rank in range(spec.world_size)
        )
        env: tuple[tuple[str, str], ...] = (*spec.env, ("PYTHONUNBUFFERED", "1"))
        if sys.platform.startswith("linux") and spec.layout.strategy.uses_torch:
            env = (*env, ("GLOO_SOCKET_IFNAME", "lo"))
        notes: tuple[str, ...] = ()
        if spec.layout.nodes > 1:
            notes = (
                f"local backend: the {spec.layout.nodes} nodes are process groups on this "
                "machine (GROUP_RANK differs); use --backend mpi for real hosts",
            )
        return Plan(spec, ranks, WORKER_COMMAND, env, notes)

    def launch(self, plan: Plan, store: Store, view: RunView) -> ProcessCluster:
        return ProcessCluster(plan, store, lambda boot: LocalProcesses(plan, boot), view)
