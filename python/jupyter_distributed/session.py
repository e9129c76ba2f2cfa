"""The kernel's side of jupyter-distributed: clusters, runs and their history.

One :class:`Session` per kernel. It keeps one live cluster per backend, reuses it while a cell's
settings match, records every run in the store, and stops every rank when the kernel exits.
"""

from __future__ import annotations

import atexit
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from .backends import get_backend
from .display import CellView
from .errors import RankFailure, SpecError
from .events import RunState
from .figures import kernel_figures
from .global_batch import GlobalBatch
from .history.store import RunRecord, Store
from .interface import NO_PROMPTS, Cluster, Plan, RunOutcome, RunRequest, RunView
from .kernelinfo import kernel_id
from .protocol.frames import MAX_MESSAGE
from .push import pickle_push
from .recorder import NamedView, RunRecorder, cluster_coords, new_run_id
from .scaling import Throughput
from .settings import HISTORY_MAX_MB, Distributed
from .spec import Spec
from .sweep_outcome import SweepOutcome
from .sweep_runner import SweepHost, run_sweep
from .tf_coordinator import PULL_NAME, Coordinators, coordinates, tasks_lost


@dataclass
class Live:
    spec: Spec
    cluster: Cluster


class Session:
    def __init__(self, store: Store | None = None, settings: Distributed | None = None) -> None:
        self._store = store
        self.settings = settings
        self.live: dict[str, Live] = {}
        self._launched: set[str] = set()  # backends this session started clusters with
        self.last_failed: tuple[str, str, list[RankFailure]] | None = None  # the last cell's
        self._coords_of: tuple[str, dict[int, dict[str, Any]]] = ("", {})
        self._spec_json: tuple[Spec | None, dict[str, Any]] = (None, {})
        self._ranks_list: tuple[tuple[int, ...] | None, list[int]] = (None, [])
        self.coordinators = Coordinators()  # the kernel as TensorFlow's coordinator
        atexit.register(self.shutdown)

    @property
    def interrupt_grace(self) -> float:
        """Seconds a rank gets to yield to the stop button or --timeout (``%config
        Distributed.interrupt_grace``) before its cluster is terminated."""
        return self.settings.interrupt_grace if self.settings is not None else 2.0

    @property
    def max_message(self) -> int:
        """Bytes of one message between the kernel and a rank (``%config
        Distributed.max_message_mb``): a larger push or pull is refused."""
        mb = self.settings.max_message_mb if self.settings is not None else None
        return MAX_MESSAGE if mb is None else int(mb * (1 << 20))

    @property
    def store(self) -> Store:
        if self._store is None:
            path = self.settings.store_path if self.settings is not None else ""
            self._store = Store.open(path or None)
        return self._store

    def bound_history(self, view: NamedView) -> None:
        """Keep the history within ``Distributed.history_max_mb`` (pruning its oldest finished
        runs, see :mod:`.history.budget`; looked at every few seconds or thousand events) and
        say, once, what any pruning did."""
        mb = self.settings.history_max_mb if self.settings is not None else HISTORY_MAX_MB
        for text in self.store.keep_within(int(mb * 2**20)):
            view.notice(text)

    def plan(self, spec: Spec) -> Plan:
        backend = get_backend(spec.backend)
        if spec.relays == "always" and not backend.relays:
            raise SpecError(
                f"Distributed.relays = 'always': the {spec.backend} backend starts no node relays "
                "yet; set it to 'auto'"
            )
        if spec.relays == "tree" and not backend.aggregators:
            raise SpecError(
                f"Distributed.relays = 'tree': the {spec.backend} backend starts no aggregators "
                "yet; set it to 'always' or 'auto'"
            )
        return backend.plan(spec)

    # -- running a cell ------------------------------------------------------------------

    def run_cell(
        self,
        spec: Spec,
        code: str,
        user_ns: dict[str, Any],
        cell_id: str = "",
        view: CellView | None = None,
        stdin: bool = False,
        break_rank: int | None = None,
    ) -> RunOutcome:
        """Run ``code`` on the spec's ranks. Pulled names are set in ``user_ns``. Raises
        :class:`RunFailed` when a rank failed and KeyboardInterrupt when interrupted.

        The run is recorded before its cluster starts, so a launch that fails is in the
        history too; bad settings (the spec, the plan, ``--push``) are refused before that."""
        push = pickle_push(spec.push, user_ns, spec.params)
        view = view or CellView()
        self.bound_history(view)
        cluster = self._reusable(spec, view)
        plan = cluster.plan if cluster is not None else self.plan(spec)
        deferred = cluster is not None and cluster.defers_record
        recorder = self.record(spec, code, plan, view, cell_id, cluster, deferred=deferred)
        run_id = recorder.run_id
        doing = "starting the cluster"
        try:
            if cluster is None:
                cluster = self._launch(spec, plan, recorder)
                recorder.launched(cluster)
            doing = "running the cell"
            if break_rank is not None and not cluster.interactive:
                view.notice(f"--break: {NO_PROMPTS}")
            coordinate = coordinates(spec.layout) and spec.backend not in self.coordinators
            pull = (*spec.pull, PULL_NAME) if coordinate else spec.pull
            pull = tuple(dict.fromkeys(pull))  # (the cell may pull it too)
            request = RunRequest(
                run_id, code, spec.ranks, push, pull, spec.timeout,
                display_max=int(spec.display_max_mb * 2**20), figures=kernel_figures(),
                interrupt_grace=self.interrupt_grace, max_message=self.max_message,
                record=recorder.deferred, stdin=stdin, break_rank=break_rank,
            )  # fmt: skip
            outcome = cluster.execute(request, recorder)
        except BaseException as exc:
            recorder.abort(exc, doing)
            raise
        if not cluster.alive:
            view.notice(f"the cluster was stopped ({cluster.lost}); the next cell starts a new one")
        kept = cluster.alive and outcome.state is RunState.INTERRUPTED
        self.last_failed = (spec.backend, run_id, outcome.failures)  # (%distributed debug)
        after = "the ranks keep their variables" if kept else "the cluster was stopped"
        try:
            return recorder.finish(outcome, spec.pull, spec.ranks, user_ns, after_interrupt=after)
        finally:
            if coordinate and cluster.alive:
                self.coordinators.connect(spec.backend, outcome.pulled, user_ns, view)

    def record(
        self,
        spec: Spec,
        code: str,
        plan: Plan,
        view: NamedView,
        cell_id: str = "",
        cluster: Cluster | None = None,
        sweep_id: str = "",
        deferred: bool = False,
    ) -> RunRecorder:
        """Record a new run of ``code`` (before its cluster starts, unless ``cluster`` runs;
        ``deferred``: once the cell left for the cluster, see :meth:`RunRecorder.start`)."""
        run_id = new_run_id()
        view.run_id = run_id
        return RunRecorder.start(
            self.store,
            RunRecord(
                id=run_id,
                backend=spec.backend,
                world_size=spec.world_size,
                ranks=self._ranks(spec.ranks),
                state=RunState.RUNNING if cluster is not None else RunState.PENDING,
                cluster_id=cluster.id if cluster is not None else "",
                spec=self._json(spec),
                source=code,
                notebook=os.environ.get("JPY_SESSION_NAME", ""),
                cell_id=cell_id,
                host=socket.gethostname(),
                kernel_pid=os.getpid(),
                started=time.time(),
                summary={"sweep": dict(spec.params)} if spec.params else {},
                sweep_id=sweep_id,
                kernel_id=kernel_id(),
            ),
            view,
            coords=self._coords(cluster) if cluster is not None else _planned(plan),
            observers=[GlobalBatch(code, spec.layout), Throughput()],
            deferred=deferred,
        )

    def run_sweep(
        self,
        spec: Spec,
        code: str,
        user_ns: dict[str, Any],
        cell_id: str = "",
        quiet: bool = False,
    ) -> SweepOutcome:
        """Run ``code`` once per combination of ``spec.sweep``, each on its own cluster."""
        self.bound_history(CellView())

        def record(one: Spec, plan: Plan, view: NamedView, sweep_id: str) -> RunRecorder:
            return self.record(one, code, plan, view, cell_id, sweep_id=sweep_id)

        host = SweepHost(self.store, self.interrupt_grace, self.max_message, record)
        return run_sweep(host, spec, code, user_ns, quiet)

    def _json(self, spec: Spec) -> dict[str, Any]:
        """The spec as recorded: the same object for every run of a spec (never changed once
        made), so the store encodes it once (see :class:`~.store.JsonMemo`)."""
        if self._spec_json[0] is not spec:
            self._spec_json = (spec, spec.to_json())
        return self._spec_json[1]

    def _ranks(self, ranks: tuple[int, ...]) -> list[int]:
        """``ranks`` as recorded: the same list for the same ranks (never changed once made),
        so the store encodes a 10,000-rank list once, not per cell."""
        if self._ranks_list[0] is not ranks:
            self._ranks_list = (ranks, list(ranks))
        return self._ranks_list[1]

    def _coords(self, cluster: Cluster) -> dict[int, dict[str, Any]]:
        """Where a live cluster's ranks are (fixed while it lives: a rank that starts again
        loses the cluster), made once per cluster."""
        if self._coords_of[0] != cluster.id:
            self._coords_of = (cluster.id, cluster_coords(cluster))
        return self._coords_of[1]

    def _reusable(self, spec: Spec, view: CellView) -> Cluster | None:
        """The live cluster when it matches the spec; else stops it (saying why)."""
        live = self.live.get(spec.backend)
        if live is None:
            return None
        if live.cluster.alive and live.spec.cluster_key() == spec.cluster_key():
            return live.cluster
        if not live.cluster.alive:
            lost = live.cluster.lost
            if spec.backend in self.coordinators:
                ranks = ((r.rank, r.state) for r in live.cluster.ranks())
                lost += tasks_lost(live.spec.layout, ranks)
            view.notice(f"the previous cluster was lost ({lost}); starting a new one")
        else:
            change = spec.describe_change(live.spec)
            view.notice(f"settings changed ({change}); restarting the cluster")
        self.stop(spec.backend)
        return None

    def _launch(self, spec: Spec, plan: Plan, view: RunView) -> Cluster:
        self._launched.add(spec.backend)
        cluster = get_backend(spec.backend).launch(plan, self.store, view)
        self.live[spec.backend] = Live(spec, cluster)
        return cluster

    # -- management ----------------------------------------------------------------------

    def stop(self, backend: str | None = None) -> list[str]:
        """Stop the live cluster of ``backend`` (all when None); returns the ids stopped."""
        stopped = []
        for name in [backend] if backend else list(self.live):
            live = self.live.pop(name, None) if name else None
            if name:  # before the servers go: nothing calls a stopped one
                self.coordinators.close(name, CellView())
            if live is not None:
                live.cluster.stop()
                stopped.append(live.cluster.id)
        return stopped

    def stacks(self, rank: int | None = None) -> list[str]:
        """The stacks of every rank (or ``rank``) of each live cluster, diagnosed."""
        out = []
        for name, live in self.live.items():
            ranks = [r.rank for r in live.cluster.ranks() if rank in (None, r.rank)]
            if not ranks or not live.cluster.alive:
                continue
            event = live.cluster.snapshot(ranks, "request")
            head = f"{name} cluster {live.cluster.id}:"
            out.append(f"{head}\n{event.diagnosis}" if event else f"{head} no stacks ({name})")
        return out

    def shutdown(self) -> None:
        self.stop()
        for name in sorted(self._launched):
            get_backend(name).shutdown()
        self._launched.clear()


def _planned(plan: Plan) -> dict[int, dict[str, Any]]:
    """Where each rank will run, recorded before the cluster starts (pids come later)."""
    return {r.rank: {**r.coords.to_json(), "host": r.host, "pid": None} for r in plan.ranks}
