"""``slurm``: the ranks are the tasks of one ``srun`` step.

Inside an allocation (the kernel runs in an ``sbatch``/``salloc`` job, as under Open OnDemand;
``SLURM_JOB_ID`` is in its environment) the step uses it; elsewhere srun asks Slurm for one and
the cluster waits, shown as queued, for as long as the job waits in the queue. The ranks run the
same worker as ``local`` over the same signed channel (:class:`ProcessCluster`); they differ in
how they start, where they report (their Slurm node), and how a death is seen: srun's own report
``srun: error: node2: task 1: Killed``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import replace
from typing import ClassVar

from ...cluster.aggregators import fanout, group_heads, on_hosts
from ...cluster.launch import WORKER_COMMAND, control_host, free_port
from ...cluster.launcher import Launcher
from ...cluster.liveness import REMOTE_SILENCE_LIMIT
from ...cluster.process import ProcessCluster
from ...cluster.relays import relay_nodes
from ...cluster.transport import Transport
from ...errors import LaunchError, SpecError
from ...history.store import Store
from ...interface import Backend, Plan, RankPlan, RunView
from ...layout import RankCoords
from ...spec import Spec
from .log import SrunLog
from .options import SlurmOptions, default_options, merge_options, rank_nodes, user_options
from .relays import AGGREGATOR_STEP, RelayStep

FREE_PORT = "<free port>"
FIRST_HOST = "<first node of the step>"
QUEUE_POLL = 2.0  # seconds between squeue looks while the job waits


def _options(spec: Spec) -> SlurmOptions:
    return spec.options if isinstance(spec.options, SlurmOptions) else SlurmOptions()


def wants_relays(spec: Spec) -> bool:
    """Node relays (:mod:`.relays`) on ``auto`` once the ranks span nodes (the kernel then holds
    one connection per node, not two per rank), on ``always`` for one node as well."""
    return spec.relays in ("always", "tree") or (spec.relays == "auto" and spec.layout.nodes > 1)


def _placed(spec: Spec, slurm_options: str) -> list[tuple[int, int, RankCoords]]:
    """(rank, node, coordinates) as srun's ``--distribution`` places the ranks (its node and its
    local rank there: each rank joins its own node's relay), where the ranks' nodes are known."""
    layout = spec.layout
    try:
        nodes = rank_nodes(slurm_options, layout.nodes, layout.procs_per_node)
    except SpecError:
        if wants_relays(spec):
            raise
        nodes = [r // layout.procs_per_node for r in range(layout.world_size)]
    seen: dict[int, int] = {}
    out = []
    for rank, node in enumerate(nodes):
        local = seen[node] = seen.get(node, -1) + 1
        out.append((rank, node, replace(layout.coords(rank), node_rank=node, local_rank=local)))
    return out


class SlurmBackend(Backend):
    name: ClassVar[str] = "slurm"
    relays: ClassVar[bool] = True  # (a second step of the job: srun --overlap, one per node)
    aggregators: ClassVar[bool] = True  # (a third: one task on each group's first node)

    def plan(self, spec: Spec) -> Plan:
        options = _options(spec)
        layout = spec.layout
        env: list[tuple[str, str]] = [
            *spec.env,
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_ADDR", FIRST_HOST),
            ("MASTER_PORT", FREE_PORT),
        ]
        ours = [*default_options(layout.nodes, layout.procs_per_node), *options.ours()]
        command = (
            "srun",
            "-v",
            *merge_options(ours, user_options(options.slurm_options)),
            *WORKER_COMMAND,
        )
        ranks = tuple(
            RankPlan(rank, f"slurm node {node}", coords)
            for rank, node, coords in _placed(spec, options.slurm_options)
        )
        job = os.environ.get("SLURM_JOB_ID")
        where = (
            f"job {job} (the kernel's allocation; the step runs inside it)"
            if job
            else "a new job: srun asks Slurm for an allocation and waits in its queue"
        )
        notes: tuple[str, ...] = (
            "ranks, local ranks and nodes come from SLURM_PROCID, SLURM_LOCALID and SLURM_NODEID",
        )
        if wants_relays(spec):
            notes += (
                f"node relays: a second step of the job once the ranks' step runs (srun "
                f"--overlap, {layout.nodes} task(s), one per node); the kernel holds one "
                "connection per node",
            )
        if wants_relays(spec) and (per := fanout(layout.nodes, spec.relays == "tree")):
            notes += (
                f"aggregators: a third step, one task on the first node of each group of {per} "
                "relays (TCP with CurveZMQ); the kernel holds one connection per aggregator",
            )
        return Plan(spec, ranks, command, tuple(env), notes, extra=(("allocation", where),))

    def launch(self, plan: Plan, store: Store, view: RunView) -> ProcessCluster:
        bind = control_host((controller_address(),))
        return ProcessCluster(
            plan,
            store,
            lambda boot: SrunProcesses(plan, boot),
            view,
            transport=Transport.tcp(bind),  # ranks on other nodes: TCP with CurveZMQ
            silence_limit=REMOTE_SILENCE_LIMIT,
            relays=wants_relays(plan.spec),
            aggregators=True,
        )


def _run(*argv: str, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 (Slurm's own client commands)
        argv, capture_output=True, text=True, timeout=timeout, check=False
    )


def controller_address() -> str:
    """The address of slurmctld (``scontrol show config``): the channel binds to this
    machine's address on the route there, which the nodes can reach as Slurm does."""
    if shutil.which("scontrol") is None:
        raise LaunchError(
            "scontrol is not on PATH: this machine is not a Slurm client "
            "(install slurm-client, or run the kernel on a login node)"
        )
    try:
        out = _run("scontrol", "show", "config")
    except subprocess.TimeoutExpired:
        raise LaunchError("scontrol show config did not answer within 15s") from None
    if out.returncode:
        raise LaunchError(f"Slurm is not reachable: {out.stderr.strip() or out.stdout.strip()}")
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("SlurmctldHost[0]", "ControlMachine"):
            name, _, addr = value.strip().partition("(")
            return addr.rstrip(")") or name
    raise LaunchError("scontrol show config names no SlurmctldHost")


def node_addresses(names: list[str]) -> list[str]:
    """Each Slurm node's address (its ``NodeAddr``, where slurmd is reached), by name; the
    name itself where scontrol does not say."""
    found: dict[str, str] = {}
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        for line in _run("scontrol", "show", "node", "-o", ",".join(names)).stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if fields.get("NodeName") and fields.get("NodeAddr"):
                found[fields["NodeName"]] = fields["NodeAddr"]
    return [found.get(name, name) for name in names]


class SrunProcesses:
    """One ``srun`` (its own session); its output is read by a thread into an SrunLog."""

    def __init__(self, plan: Plan, boot_env: dict[str, str]) -> None:
        srun = shutil.which(plan.command[0])
        if srun is None:
            raise LaunchError("srun is not on PATH; install slurm-client or use --backend local")
        self.log = SrunLog()
        port = str(free_port(count=plan.spec.layout.ports))
        env = {**os.environ, **boot_env}
        for key, value in plan.env:
            if value == FREE_PORT:
                env[key] = port
            elif value != FIRST_HOST:  # the worker finds it (scontrol show hostnames)
                env[key] = value
        self.launcher = Launcher((srun, *plan.command[1:]), env, self.log.feed)
        self.proc = self.launcher.proc
        nodes = relay_nodes(boot_env)
        self.relays = RelayStep(srun, nodes, env) if nodes else None
        self._heads = group_heads(boot_env)  # (each aggregator's first node)
        self.aggregators = (
            RelayStep(srun, len(self._heads), env, AGGREGATOR_STEP) if self._heads else None
        )
        self._world = len(plan.ranks)
        self._plan = plan
        self._reported: set[int] = set()
        self._ended = False
        self._reason = ("", 0.0)

    def waiting(self) -> str:
        """Why the job waits in Slurm's queue (squeue's reason), or empty once it runs."""
        if not self.log.queued or self.proc.poll() is not None:
            return ""
        reason, when = self._reason
        if time.monotonic() - when >= QUEUE_POLL:
            try:
                out = _run("squeue", "-h", "-j", self.log.job_id, "-o", "%T %r", timeout=5)
                reason = out.stdout.strip() or reason or "PENDING"
            except (subprocess.TimeoutExpired, OSError):
                reason = reason or "PENDING"
            self._reason = (reason, time.monotonic())
        return f"job {self.log.job_id} {reason}"

    def dead_relays(self) -> list[tuple[int, int]]:
        """(node, return code) of the node relays that ended since the last call; the relays'
        step starts here once the ranks' step is launched on every node. Relays that end after
        the ranks' step are its consequence (the job ended), not a dead node."""
        if self.relays is None:
            return []
        if self.relays.launcher is None and self.proc.poll() is None:
            self._start_relays(self.relays)
        ended = self.relays.exited()
        return ended if self.proc.poll() is None else []

    def dead_aggregators(self) -> list[tuple[int, int]]:
        """(index, return code) of the aggregators that ended since the last call (as relays)."""
        if self.aggregators is None or self.proc.poll() is not None:
            return []
        return self.aggregators.exited()

    def _start_relays(self, relays: RelayStep) -> None:
        """Once the ranks' step is launched on every node: the aggregators' step on the first
        node of each group (their addresses on those nodes), then the relays' step."""
        hosts = dict(self.log.hosts)
        if not (self.log.job_id and self.log.step and len(hosts) >= self._world):
            return
        first = {}  # each node's first rank (srun's --distribution placed them)
        for r in reversed(self._plan.ranks):
            first[r.coords.node_rank] = r.rank
        nodes = [hosts[first[n]] for n in range(relays.nodes)]
        env = relays.env
        if self.aggregators is not None:
            heads = [nodes[n] for n in self._heads]
            env = on_hosts(env, node_addresses(heads))
            self.aggregators.start(self.log.job_id, heads, env)
        relays.start(self.log.job_id, nodes, env)

    def exited(self) -> list[tuple[int | None, int]]:
        code = self.proc.poll()
        if code is not None and not self._ended:
            self.launcher.read_to_end(1.0)  # srun's last words name the task that ended the step
        out: list[tuple[int | None, int]] = []
        for rank, rank_code, _host in self.log.failures():
            if rank not in self._reported:
                self._reported.add(rank)
                out.append((rank, rank_code))
        if code is not None and not self._ended:
            self._ended = True
            if not self._reported and code != 0:  # srun ended without naming a task
                out.append((None, code))
        return out

    def running(self) -> bool:
        """Whether the ranks' step runs (its relays are ended by :meth:`terminate`, after it:
        a stop waits for the ranks to leave; the relays leave after them, or are ended)."""
        return self.proc.poll() is None

    def terminate(self, grace: float) -> None:
        """scancel the step (the job too when srun asked for it), then end srun: SIGTERM,
        SIGKILL after ``grace``."""
        target = self.log.step if os.environ.get("SLURM_JOB_ID") else self.log.job_id
        if self.proc.poll() is None and target:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                _run("scancel", target, timeout=5)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.01)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(grace)
                except subprocess.TimeoutExpired:
                    continue
        self.proc.wait()
        self.launcher.remove()
        for step in (self.relays, self.aggregators):  # (after their ranks: none is orphaned)
            if step is not None:
                step.terminate(grace, lambda step: _run("scancel", step, timeout=5))

    def log_tail(self, rank: int | None) -> str:
        """A rank's last line; for None, srun's, else its relays' (a relay's start error)."""
        if rank is not None:
            return self.log.tail(rank, lines=1)
        return self.log.start_failure(
            [step.log for step in (self.relays, self.aggregators) if step is not None]
        )
