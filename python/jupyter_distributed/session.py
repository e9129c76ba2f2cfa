"""The kernel's side of jupyter-distributed: clusters, runs and their history.

One :class:`Session` per kernel. It keeps one live cluster per backend, reuses it while a cell's
settings match, records every run in the store, and stops every rank when the kernel exits.
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket
import time
from dataclasses import dataclass
from typing import Any

import cloudpickle

from .backends import get_backend
from .backends.base import Cluster, Plan, RunOutcome, RunRequest
from .batch import record_global_batch
from .display import CellView
from .errors import RunFailed, SpecError, interrupted
from .events import RunEvent, RunState
from .spec import Spec
from .store import RunRecord, Store


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


@dataclass
class Live:
    spec: Spec
    cluster: Cluster


class Session:
    def __init__(self, store: Store | None = None) -> None:
        self._store = store
        self.live: dict[str, Live] = {}
        atexit.register(self.shutdown)

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store()
        return self._store

    def plan(self, spec: Spec) -> Plan:
        return get_backend(spec.backend).plan(spec)

    # -- running a cell ------------------------------------------------------------------

    def run_cell(
        self,
        spec: Spec,
        code: str,
        user_ns: dict[str, Any],
        cell_id: str = "",
        view: CellView | None = None,
    ) -> RunOutcome:
        """Run ``code`` on the spec's ranks. Pulled names are set in ``user_ns``. Raises
        :class:`RunFailed` when a rank failed and KeyboardInterrupt when interrupted."""
        push = self._push_values(spec, user_ns)
        view = view or CellView()
        cluster = self._cluster_for(spec, view)
        run_id = new_run_id()
        view.run_id = run_id
        self.store.create_run(
            RunRecord(
                id=run_id,
                backend=spec.backend,
                world_size=spec.world_size,
                ranks=list(spec.ranks),
                cluster_id=cluster.id,
                spec=spec.to_json(),
                source=code,
                notebook=os.environ.get("JPY_SESSION_NAME", ""),
                cell_id=cell_id,
                host=socket.gethostname(),
                kernel_pid=os.getpid(),
                started=time.time(),
            ),
            coords={
                r.rank: {**r.coords.to_json(), "host": r.host, "pid": r.pid}
                for r in cluster.ranks()
            },
        )
        request = RunRequest(run_id, code, spec.ranks, push, spec.pull, spec.timeout)
        try:
            outcome = cluster.execute(request, view)
        except BaseException:
            self.store.append(
                [
                    RunEvent(
                        run_id,
                        time.time(),
                        RunState.FAILED,
                        "the kernel failed while running the cell",
                    )
                ]
            )
            raise
        message = outcome.message or (
            RunFailed(list(outcome.failures)).headline if outcome.failures else ""
        )
        self.store.append([RunEvent(run_id, time.time(), outcome.state, message)])
        warning = record_global_batch(self.store, run_id, code, spec.layout)
        if warning:
            view.notice(warning)
        self._set_pulled(spec, outcome, user_ns, view)
        if not cluster.alive:
            view.notice(f"the cluster was stopped ({cluster.lost}); the next cell starts a new one")
        view.finish()
        if outcome.state in (RunState.INTERRUPTED, RunState.STOPPED):
            kept = cluster.alive and outcome.state is RunState.INTERRUPTED
            raise interrupted(
                "the cell was interrupted on every rank; "
                + ("the ranks keep their variables" if kept else "the cluster was stopped")
            )
        if outcome.failures:
            raise RunFailed(list(outcome.failures), run_id)
        return outcome

    def _push_values(self, spec: Spec, user_ns: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in spec.push:
            if name not in user_ns:
                raise SpecError(f"--push: name {name!r} is not defined in the notebook")
            try:
                cloudpickle.dumps(user_ns[name], protocol=5, buffer_callback=lambda b: None)
            except Exception as exc:  # noqa: BLE001 (any pickling error is the user's to see)
                raise SpecError(
                    f"--push: cannot send {name!r} to the ranks: {type(exc).__name__}: {exc}"
                ) from None
            values[name] = user_ns[name]
        return values

    def _set_pulled(
        self, spec: Spec, outcome: RunOutcome, user_ns: dict[str, Any], view: CellView
    ) -> None:
        for name in spec.pull:
            problems = [
                f"rank {r}: {e.get(name) or e.get('*')}"
                for r, e in sorted(outcome.pull_errors.items())
                if name in e or "*" in e
            ]
            missing = [r for r in spec.ranks if name not in outcome.pulled.get(r, {})]
            if problems or missing:
                view.notice(
                    f"--pull {name}: not set; "
                    + "; ".join(problems or [f"ranks {missing} did not finish"])
                )
                continue
            user_ns[name] = [outcome.pulled[r][name] for r in spec.ranks]

    def _cluster_for(self, spec: Spec, view: CellView) -> Cluster:
        live = self.live.get(spec.backend)
        if live is not None:
            if live.cluster.alive and live.spec.cluster_key() == spec.cluster_key():
                return live.cluster
            if not live.cluster.alive:
                view.notice(
                    f"the previous cluster was lost ({live.cluster.lost}); starting a new one"
                )
            else:
                view.notice(
                    f"settings changed ({spec.describe_change(live.spec)}); restarting the cluster"
                )
            self.stop(spec.backend)
        backend = get_backend(spec.backend)
        plan = backend.plan(spec)
        cluster = backend.launch(plan, self.store, view)
        self.live[spec.backend] = Live(spec, cluster)
        return cluster

    # -- management ----------------------------------------------------------------------

    def stop(self, backend: str | None = None) -> list[str]:
        """Stop the live cluster of ``backend`` (all when None); returns the ids stopped."""
        stopped = []
        for name in [backend] if backend else list(self.live):
            live = self.live.pop(name, None) if name else None
            if live is not None:
                live.cluster.stop()
                stopped.append(live.cluster.id)
        return stopped

    def shutdown(self) -> None:
        self.stop()
