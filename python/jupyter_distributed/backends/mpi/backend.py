"""``mpi``: ranks started by one real ``mpirun`` (Open MPI), on this machine or on ``--hosts``.

The ranks run the same worker as ``local`` and talk to the kernel over the same signed channel
(:class:`ProcessCluster`); they differ only in how they start and how a death is seen: mpirun
reports the first rank that ended the job (exit code or signal) and then ends the job itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ...cluster.aggregators import group_heads
from ...cluster.launch import WORKER_COMMAND, check_cores, control_host, free_port, sweep_slots
from ...cluster.launcher import Launcher
from ...cluster.process import ProcessCluster
from ...cluster.relays import relay_nodes, remove_local_directories
from ...cluster.transport import Transport
from ...errors import LaunchError
from ...history.store import Store
from ...interface import Backend, Plan, RankPlan, RunView
from ...layout import Layout, RankCoords
from ...protocol.signing import BOOTSTRAP_ENV, MPI_FLAG_ENV
from ...spec import Spec
from .log import MpirunLog
from .options import MpiOptions, default_options, merge_options, rank_nodes, user_options
from .relays import AGGREGATOR, RELAY, RelayMpirun, as_root

if TYPE_CHECKING:
    from ...cluster.cmdline import Option

FREE_PORT = "<free port>"
# Passed to every rank with -x (values come from mpirun's environment, so secrets stay off the
# command line); besides the user's --env and these, PYTHONPATH travels when the kernel has one.
FORWARDED = (
    BOOTSTRAP_ENV,
    MPI_FLAG_ENV,
    "PYTHONUNBUFFERED",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def _options(spec: Spec) -> MpiOptions:
    return spec.options if isinstance(spec.options, MpiOptions) else MpiOptions()


def _placed(layout: Layout, users: list[Option], hosts: int) -> list[RankCoords]:
    """Each rank's coordinates with its node and local rank where mpirun's ``--map-by`` puts it
    (across hosts: each rank joins its own host's relay and is named with its host)."""
    if hosts < 2:
        return [layout.coords(rank) for rank in range(layout.world_size)]
    seen: dict[int, int] = {}
    out = []
    for rank, node in enumerate(rank_nodes(users, layout.nodes, layout.procs_per_node)):
        local = seen[node] = seen.get(node, -1) + 1
        out.append(replace(layout.coords(rank), node_rank=node, local_rank=local))
    return out


class MpiBackend(Backend):
    name: ClassVar[str] = "mpi"
    relays: ClassVar[bool] = True  # (a second mpirun, one relay per node)
    aggregators: ClassVar[bool] = True  # (a third, one on each group's first host)

    def plan(self, spec: Spec) -> Plan:
        options = _options(spec)
        layout = spec.layout
        hosts = options.hosts_for(layout.nodes)
        per_node = layout.procs_per_node
        if not hosts:
            check_cores(layout.world_size, options.ranks_per_core, options.oversubscribe)
        env: list[tuple[str, str]] = [
            *spec.env,
            (MPI_FLAG_ENV, "1"),
            ("PYTHONUNBUFFERED", "1"),
        ]
        master = (("MASTER_ADDR", hosts[0] if hosts else "127.0.0.1"), ("MASTER_PORT", FREE_PORT))
        env += [kv for kv in master if kv[0] not in dict(spec.env)]  # the user's --env wins
        if not hosts and sys.platform.startswith("linux") and layout.strategy.uses_torch:
            env.append(("GLOO_SOCKET_IFNAME", "lo"))
        names = [*FORWARDED, *(k for k, _ in env if k not in FORWARDED)]
        if "PYTHONPATH" in os.environ:
            names.append("PYTHONPATH")
        users = [*user_options(options.default_mpi_options), *user_options(options.mpi_options)]
        command = [
            options.mpirun,
            *merge_options(default_options(as_root(), per_node), users),
            "-np",
            str(layout.world_size),
        ]
        if hosts:
            command += ["--host", ",".join(f"{h}:{per_node}" for h in hosts)]
        for name in dict.fromkeys(names):
            command += ["-x", name]
        command += WORKER_COMMAND
        here = socket.gethostname()
        ranks = tuple(
            RankPlan(rank, hosts[coords.node_rank] if hosts else here, coords)
            for rank, coords in enumerate(_placed(layout, users, len(hosts)))
        )
        extra = [("hosts", ", ".join(hosts) if hosts else f"{here} (this machine)")]
        if options.hostfile:
            extra.append(("hostfile", options.hostfile))
        return Plan(spec, ranks, tuple(command), tuple(env), extra=tuple(extra))

    def launch(self, plan: Plan, store: Store, view: RunView) -> ProcessCluster:
        """Node relays on ``auto`` once the ranks span hosts (the kernel then holds one
        connection per host, not two per rank), on ``always`` on this machine as well."""
        hosts = _options(plan.spec).hosts_for(plan.spec.layout.nodes)
        bind = control_host(hosts)  # ranks on other hosts: TCP with CurveZMQ
        transport = Transport.ipc() if bind == "127.0.0.1" else Transport.tcp(bind)
        return ProcessCluster(
            plan, store, lambda boot: MpiProcesses(plan, boot), view, transport=transport,
            relays=plan.spec.relays in ("always", "tree")
            or (plan.spec.relays == "auto" and len(hosts) > 1),
            aggregators=True,
        )  # fmt: skip

    def sweep_parallel(self, spec: Spec) -> int:
        options = _options(spec)
        if options.hosts_for(spec.layout.nodes):  # other hosts' cores are not ours to count
            return super().sweep_parallel(spec)
        return sweep_slots(spec, options.ranks_per_core, options.oversubscribe)


class MpiProcesses:
    """One ``mpirun`` (its own session); its output is read by a thread into an MpirunLog."""

    def __init__(self, plan: Plan, boot_env: dict[str, str]) -> None:
        mpirun = shutil.which(plan.command[0])
        if mpirun is None:
            raise LaunchError(
                f"{plan.command[0]} is not on PATH; install Open MPI (apt-get install "
                "openmpi-bin), set DistributedMPI.mpirun, or use --backend local"
            )
        self.log = MpirunLog()
        port = str(free_port(count=plan.spec.layout.ports))
        env = {
            **os.environ,
            **boot_env,
            **{k: (port if v == FREE_PORT else v) for k, v in plan.env},
        }
        self.relays: RelayMpirun | None = None
        self.aggregators: RelayMpirun | None = None
        if nodes := relay_nodes(boot_env):  # (before the ranks, which connect to them)
            options = _options(plan.spec)
            hosts = options.hosts_for(nodes)
            if heads := group_heads(boot_env):  # (each on its group's first host)
                on = [hosts[n] for n in heads] if hosts else []
                self.aggregators = RelayMpirun(mpirun, options, env, AGGREGATOR, on, len(heads))
            self.relays = RelayMpirun(mpirun, options, env, RELAY, list(hosts), nodes)
        self.launcher = Launcher((mpirun, *plan.command[1:]), env, self.log.feed)
        self.proc = self.launcher.proc
        self._reported: set[int] = set()
        self._ended = False

    def dead_relays(self) -> list[tuple[int, int]]:
        """(node, return code) of the node relays that ended since the last call."""
        return self.relays.exited() if self.relays is not None else []

    def dead_aggregators(self) -> list[tuple[int, int]]:
        """(index, return code) of the aggregators that ended since the last call."""
        return self.aggregators.exited() if self.aggregators is not None else []

    def exited(self) -> list[tuple[int | None, int]]:
        code = self.proc.poll()
        if code is not None and not self._ended:
            self.launcher.read_to_end(1.0)  # mpirun's last words name the rank that ended the job
        out: list[tuple[int | None, int]] = []
        for rank, rank_code in self.log.failures():
            if rank not in self._reported:
                self._reported.add(rank)
                out.append((rank, rank_code))
        if code is not None and not self._ended:
            self._ended = True
            if not self._reported:  # mpirun ended without naming a rank
                out.append((None, code))
        return out

    def running(self) -> bool:
        """Whether the ranks' mpirun runs (the relays leave after the ranks, or the relays'
        mpirun is ended by :meth:`terminate`, after it)."""
        return self.proc.poll() is None

    def terminate(self, grace: float) -> None:
        """SIGTERM mpirun's group (mpirun ends its ranks), then SIGKILL it and every process
        it started that is still there (ranks die with mpirun through PDEATHSIG as well); the
        relays' and the aggregators' mpirun after them."""
        _end(self.launcher, grace)
        for helpers in (self.relays, self.aggregators):
            if helpers is not None:
                _end(helpers.launcher, grace)
        if self.relays is not None:
            remove_local_directories(self.relays.env)  # (those a SIGKILL left on this host)

    def log_tail(self, rank: int | None) -> str:
        """A rank's last line; for None, mpirun's, else its relays' (a relay's start error)."""
        if rank is not None:
            return self.log.tail(rank, lines=1)
        return self.log.start_failure(
            [h.log for h in (self.relays, self.aggregators) if h is not None]
        )


def _end(launcher: Launcher, grace: float) -> None:
    """SIGTERM a launcher's group, SIGKILL what is left of it and its processes after ``grace``."""
    proc = launcher.proc
    family = descendants(proc.pid)
    _signal(proc.pid, signal.SIGTERM, group=True)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    _signal(proc.pid, signal.SIGKILL, group=True)
    proc.wait()
    for pid in family:
        _signal(pid, signal.SIGKILL)
    launcher.remove()


def _signal(pid: int, sig: int, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; elsewhere none are known)."""
    children: dict[int, list[int]] = {}
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found
