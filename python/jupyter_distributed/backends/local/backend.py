"""``local``: ranks are processes on this machine, of the kernel's own Python: forked from a fork
server (``DistributedLocal.fork``), or spawned."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from ...cluster.launch import WORKER_COMMAND, check_cores, free_port, rank_env, sweep_slots
from ...cluster.process import ProcessCluster
from ...cluster.relays import LocalRelays, relay_nodes
from ...cluster.transport import Transport
from ...cluster.zygote import Forked, ForkRefused, fork_server, preload_for, stop_fork_servers
from ...history.reaper import leftover_prefix
from ...history.store import Store
from ...interface import Backend, Plan, RankPlan, RunView
from ...pids import newly_ended, pidfds
from ...spec import RENDEZVOUS_ENV, Spec
from .options import LocalOptions

log = logging.getLogger("jupyter_distributed")


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


class LocalProcesses:
    """One process (and process group) per rank; output before capture goes to a log file.
    Ranks are forked from the kernel's fork server where it runs (:mod:`...cluster.zygote`;
    ``DistributedLocal.fork``), else spawned with the kernel's Python."""

    def __init__(self, plan: Plan, boot_env: dict[str, str]) -> None:
        self.logdir = Path(tempfile.mkdtemp(prefix=leftover_prefix()))
        self.procs: dict[int, subprocess.Popen[bytes] | Forked] = {}
        self._reported: set[int] = set()
        self.every_sentinel = False  # (see sentinels)
        port = str(free_port(count=plan.spec.layout.ports))
        base = {**os.environ, **dict(plan.env), **boot_env}
        options = plan.spec.options
        fork = options.fork if isinstance(options, LocalOptions) else "all"
        preload = preload_for(plan.spec, fork)
        server = fork_server(base, preload) if preload else None
        nodes = relay_nodes(boot_env)  # (relays "always": one per node, before the ranks)
        self.relays = LocalRelays(nodes, base, self.logdir, server) if nodes else None
        for r in plan.ranks:
            env = {**base, **{k: (port if v == "<free port>" else v) for k, v in r.env}}
            if server is not None:
                try:
                    pid = server.fork(env, self.logdir / f"rank-{r.rank}.log")
                except ForkRefused as exc:  # (gone or refused: this and later ranks spawned)
                    log.warning("jupyter-distributed: ranks are spawned, not forked: %s", exc)
                    server = None
                else:
                    self.procs[r.rank] = Forked(server, pid)
                    continue
            with (self.logdir / f"rank-{r.rank}.log").open("wb") as out:
                self.procs[r.rank] = subprocess.Popen(  # noqa: S603 (our own worker command)
                    plan.command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

    def exited(self) -> list[tuple[int | None, int]]:
        ended: list[tuple[int, int]] = newly_ended(self.procs, self._reported)
        return [(rank, code) for rank, code in ended]

    def dead_relays(self) -> list[tuple[int, int]]:
        """(node, return code) of the node relays that ended since the last call."""
        return self.relays.exited() if self.relays is not None else []

    def dead_aggregators(self) -> list[tuple[int, int]]:
        """(index, return code) of the aggregators above the relays that ended since then."""
        return self.relays.aggregators_exited() if self.relays is not None else []

    def sentinels(self) -> list[int]:
        """A pidfd per rank and relay (Linux), readable once it ends; [] where there are none.
        ``every_sentinel`` says whether every process has one (none ended before it)."""
        relays = self.relays.sentinels() if self.relays is not None else []
        fds = relays + pidfds(p.pid for p in self.procs.values())
        hops = len(self.relays.procs) + len(self.relays.aggregators) if self.relays else 0
        self.every_sentinel = len(fds) == hops + len(self.procs)
        return fds

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs.values())

    def death_cause(self) -> str:
        """How the fork server that forked these ranks or relays ended, "" while it serves (or
        where they were spawned): what their SIGKILLs mean."""
        relays = self.relays.all() if self.relays is not None else []
        servers = {p.server for p in (*self.procs.values(), *relays) if isinstance(p, Forked)}
        return next(filter(None, (server.ended() for server in servers)), "")

    def terminate(self, grace: float) -> None:
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.running():
            time.sleep(0.01)
        self._signal(signal.SIGKILL)
        for proc in self.procs.values():
            proc.wait()
        if self.relays is not None:  # (after their ranks: none is left without its relay)
            self.relays.terminate(grace)
        shutil.rmtree(self.logdir, ignore_errors=True)

    def _signal(self, sig: int) -> None:
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)  # the rank and anything it started

    def log_tail(self, rank: int | None) -> str:
        """A rank's last line; for None, the last line of each relay or aggregator that wrote
        one (one that ended before it was ready says why there)."""
        if rank is not None:
            return _last_line(self.logdir / f"rank-{rank}.log")
        helpers = sorted(self.logdir.glob("relay-*.log")) + sorted(
            self.logdir.glob("aggregator-*.log")
        )
        return " ".join(dict.fromkeys(filter(None, map(_last_line, helpers))))  # (alike: once)


class LocalBackend(Backend):
    name: ClassVar[str] = "local"
    relays: ClassVar[bool] = True
    aggregators: ClassVar[bool] = True

    def plan(self, spec: Spec) -> Plan:
        options = spec.options if isinstance(spec.options, LocalOptions) else LocalOptions()
        check_cores(spec.world_size, options.ranks_per_core, options.oversubscribe)
        host = socket.gethostname()
        mine = {k for k, _ in spec.env} & set(RENDEZVOUS_ENV)  # the user's --env wins for these
        ranks = tuple(
            RankPlan(
                rank,
                host,
                spec.layout.coords(rank),
                tuple(kv for kv in rank_env(spec, rank, "<free port>") if kv[0] not in mine),
            )
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
        if preload := preload_for(spec, options.fork):
            notes = (
                *notes,
                "each rank is forked from the kernel's fork server, which ran the command's "
                f"imports once ({', '.join(preload)}), in the kernel's environment and working "
                "directory at launch (DistributedLocal.fork = 'never' spawns the command)",
            )
        return Plan(spec, ranks, WORKER_COMMAND, env, notes)

    def shutdown(self) -> None:
        stop_fork_servers()

    def launch(self, plan: Plan, store: Store, view: RunView) -> ProcessCluster:
        return ProcessCluster(
            plan, store, lambda boot: LocalProcesses(plan, boot), view, transport=Transport.ipc(),
            relays=plan.spec.relays in ("always", "tree"), aggregators=True,
        )  # fmt: skip

    def sweep_parallel(self, spec: Spec) -> int:
        options = spec.options if isinstance(spec.options, LocalOptions) else LocalOptions()
        return sweep_slots(spec, options.ranks_per_core, options.oversubscribe)
