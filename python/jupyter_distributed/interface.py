"""The small interface every backend implements.

``Backend.plan(spec)`` is pure: it resolves what would be started (ranks, hosts, environment,
command line) and can be printed by ``--dry-run``. ``Backend.launch(plan, store)`` does the work
and returns a :class:`Cluster`, on which cells are executed one run at a time.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .errors import RankFailure
from .events import Event, Recorded, RunEvent, RunState, StacksEvent
from .history.store import Store
from .layout import RankCoords
from .protocol.commands import NO_PROMPTS as NO_PROMPTS  # (said by the kernel and the ranks)
from .protocol.figures import FigureConfig
from .protocol.frames import MAX_MESSAGE
from .push import Pickled
from .rankviews import LAST_LINES as LAST_LINES
from .rankviews import RankInfo as RankInfo
from .redact import redact_env
from .spec import Spec

SHOWN_RANKS = 16  # --dry-run lists this many ranks per node (and in all) before summarising


@dataclass(frozen=True)
class RankPlan:
    rank: int
    host: str
    coords: RankCoords
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Plan:
    """What a backend would start for a spec. Pure data; ``render()`` is what --dry-run shows."""

    spec: Spec
    ranks: tuple[RankPlan, ...]
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    extra: tuple[tuple[str, str], ...] = ()  # backend-specific lines for the rendering

    def render(self) -> str:
        spec, layout = self.spec, self.spec.layout
        lines = [
            f"backend:      {spec.backend}",
            f"world size:   {layout.world_size} = {layout.nodes} node(s) × "
            f"{layout.procs_per_node} process(es) per node",
            f"strategy:     {layout.strategy.value}",
        ]
        mp = layout.model_parallel
        if mp is not None:
            lines.append(
                f"model parallel: {mp.partitions} pipeline stage(s) × {mp.tensor_parallel}-way "
                f"tensor × {layout.data_parallel_degree}-way data; {mp.microbatches} "
                f"microbatch(es), pipeline {mp.pipeline.value}, placement {mp.placement.value}, "
                f"optimize {mp.optimize.value}"
            )
        elif layout.parameter_servers:
            lines.append(
                f"roles:        {layout.parameter_servers} parameter server(s), "
                f"{layout.data_parallel_degree} worker(s)"
            )
        lines.append(f"runs on:      ranks {_ranges(spec.ranks)[:200]}")
        if layout.strategy.uses_torch:
            group = _process_group(layout.dist_backend, layout.procs_per_node)
            lines.append(f"process group: {group}")
        for key, value in self.extra:
            lines.append(f"{key + ':':<14}{value}")
        lines.append("command:      " + " ".join(self.command))
        lines.append("ranks:")
        by_node: dict[int, list[RankPlan]] = {}
        for r in self.ranks:
            by_node.setdefault(r.coords.node_rank, []).append(r)
        shown = 0
        for node, ranks in by_node.items():
            if shown >= SHOWN_RANKS and len(self.ranks) > 2 * SHOWN_RANKS:
                rest = len(self.ranks) - shown
                lines.append(f"  ... {rest} more rank(s) on {len(by_node) - node} more node(s)")
                break
            lines.append(f"  node {node} ({ranks[0].host}):")
            for r in ranks[:SHOWN_RANKS] if len(ranks) > 2 * SHOWN_RANKS else ranks:
                c = r.coords
                where = f"dp={c.data_parallel} pp={c.pipeline_stage} tp={c.tensor_parallel}"
                if c.role.value != "worker":
                    where += f" role={c.role.value}"
                lines.append(f"    rank {r.rank:<3} local {c.local_rank:<3} {where}")
                shown += 1
            if len(ranks) > 2 * SHOWN_RANKS:
                lines.append(f"    ... {len(ranks) - SHOWN_RANKS} more rank(s) on this node")
        if self.ranks:
            lines.append(
                "environment (rank 0): "
                + " ".join(f"{k}={v}" for k, v in redact_env((*self.env, *self.ranks[0].env)))
            )
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _process_group(requested: str, local_ranks: int) -> str:
    """What --dry-run says about torch's backend (this machine's GPUs, where the ranks may be)."""
    if requested != "auto":
        return f"{requested} (--dist-backend)"
    gpus = local_gpus()
    if gpus >= local_ranks:
        return f"nccl ({gpus} GPU(s) here for {local_ranks} rank(s) per node)"
    why = f"{gpus} GPU(s) here for {local_ranks} rank(s) per node" if gpus else "no GPU here"
    return f"gloo ({why}; decided once per node: nccl only when every local rank has a GPU)"


def local_gpus() -> int:
    """NVIDIA GPUs this process may use, without importing torch (a --dry-run stays fast)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    return len(list(Path("/dev").glob("nvidia[0-9]*")))


def _ranges(ranks: tuple[int, ...]) -> str:
    out: list[str] = []
    for r in ranks:
        if out and "-" not in out[-1] and int(out[-1]) == r - 1:
            out[-1] = f"{out[-1]}-{r}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == r - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ",".join(out)


class RunWriter(Protocol):
    """Writes a run's events to the history, the run's deferred record first (once)."""

    def append(self, events: Sequence[Recorded]) -> None:
        """Write ``events`` in one transaction, with the run's record if not written yet."""


@dataclass
class RunRequest:
    run_id: str
    code: str
    ranks: tuple[int, ...]
    push: Pickled | None = None  # the pushed values, pickled once by the kernel
    pull: tuple[str, ...] = ()
    timeout: float | None = None
    display_max: int | None = None  # bytes of one rich display (None: the default cap)
    figures: FigureConfig | None = None  # the kernel's inline figure settings (None: PNG)
    interrupt_grace: float = 2.0  # seconds a rank gets to yield before it is killed
    max_message: int = MAX_MESSAGE  # bytes of one message either way (Distributed.max_message_mb)
    # the run's record is not written yet: a cluster that ``defers_record`` writes the run's
    # events through it (the record goes with the first of them), see RunRecorder.start
    record: RunWriter | None = None
    stdin: bool = False  # the notebook answers input requests (the ranks' input() and pdb)
    break_rank: int | None = None  # --break R: pdb stops rank R at the cell's first line
    debug: bool = False  # pdb on the ranks' last exception, no code (%distributed debug)


@dataclass
class RunOutcome:
    state: RunState
    values: dict[int, str] = field(default_factory=dict)
    pulled: dict[int, dict[str, Any]] = field(default_factory=dict)
    pull_errors: dict[int, dict[str, str]] = field(default_factory=dict)
    failures: list[RankFailure] = field(default_factory=list)
    message: str = ""  # why the run ended early, when not a rank's failure
    unrecorded: int = 0  # events that could not be written to the history store
    recorded_end: RunEvent | None = None  # the completed end, recorded with the ranks' replies


class RunView(Protocol):
    """Where a run's events are shown while it runs (called on the kernel's main thread)."""

    def on_event(self, event: Event) -> None: ...

    def live(self, rank: int, stream: str, text: str) -> None:
        """A rank's line redrawn in place (a progress bar), as it reads now."""

    def notice(self, text: str) -> None: ...

    def starting(self, text: str) -> None:
        """The cluster's start-up as it reads now, one line redrawn in place (the stage each
        rank is at); empty: the line goes (the cluster is ready, or failed to start)."""

    def queued(self, reason: str) -> None:
        """The ranks wait in a scheduler's queue (``reason`` from it): shown and recorded."""

    def flush(self) -> None: ...


class Cluster(ABC):
    """Live ranks started from one plan."""

    id: str
    plan: Plan
    #: Whether :meth:`execute` writes the run's events through ``request.record`` (a cell on
    #: a live cluster then writes the run's record with its first events, not on its own).
    defers_record: ClassVar[bool] = False
    #: Whether its ranks can ask the notebook (pdb, ``input()``, ``%distributed debug``): they
    #: have a channel to the kernel. A cluster without one says :data:`NO_PROMPTS`.
    interactive: ClassVar[bool] = True
    #: The node relays between the kernel and the ranks (0: the ranks reach the kernel itself).
    relays: int = 0
    #: The aggregators between the kernel and the node relays (0: the relays reach it itself).
    aggregators: int = 0

    @abstractmethod
    def execute(self, request: RunRequest, view: RunView) -> RunOutcome:
        """Run a cell on ``request.ranks``; blocks; a KeyboardInterrupt stops the ranks'
        work and is re-raised once they are free."""

    @abstractmethod
    def ranks(self) -> list[RankInfo]: ...

    @property
    @abstractmethod
    def alive(self) -> bool:
        """False once a rank was lost; the next cell starts a new cluster."""

    @property
    def lost(self) -> str:
        """Why the cluster is no longer alive (empty while it is)."""
        return ""

    @abstractmethod
    def stop(self) -> None:
        """Stop every rank; idempotent; returns when no process is left."""

    def peer_count(self) -> int | None:
        """The connections the kernel holds to this cluster's ranks, or to their node relays
        (None where the backend does not say)."""
        return None

    def snapshot(self, ranks: Sequence[int], reason: str, run_id: str = "") -> StacksEvent | None:
        """Every thread of ``ranks`` with the diagnosis, recorded under the running (or given)
        run; None where this backend cannot take stacks."""
        return None


class Backend(ABC):
    name: ClassVar[str]
    #: Whether it starts node relays where ``Spec.relays`` is "always" (see cluster/relays.py).
    relays: ClassVar[bool] = False
    #: Whether it starts a second level of relays (cluster/aggregators.py) above many nodes,
    #: and where ``Spec.relays`` is "tree".
    aggregators: ClassVar[bool] = False

    @abstractmethod
    def plan(self, spec: Spec) -> Plan: ...

    @abstractmethod
    def launch(self, plan: Plan, store: Store, view: RunView) -> Cluster: ...

    def sweep_parallel(self, spec: Spec) -> int:
        """How many combinations of ``spec.sweep`` run at once, each on its own cluster:
        ``--sweep-parallel``, else 1. Backends on this machine bound it by its cores."""
        return spec.sweep.parallel if spec.sweep is not None and spec.sweep.parallel else 1

    def shutdown(self) -> None:  # noqa: B027 (optional: most backends keep nothing)
        """The kernel is done with this backend: release what it keeps between clusters
        (e.g. the local backend's fork server)."""
