"""The advice as a run of its own kind in the history: a finished run with no ranks whose
summary holds ``kind: "advice"`` and the advice's JSON (``summary["advice"]``), so the server
serves it with the runs (``GET runs``, ``GET runs/<id>``) and the panel's Scaling tab shows it.
It names its kernel and notebook as a cell's run does (the panel puts a launch line into that
notebook), and the cluster it was asked for (``--cluster``; "" for a layout by its flags)."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from ..events import RunState
from ..history.records import RunRecord, new_run_id
from ..history.store import Store
from ..kernelinfo import kernel_id
from .intake import AdviseError
from .report import Advice

KIND = "advice"


def save(
    store: Store, advice: Advice, line: str, backend: str = "local", cluster_id: str = ""
) -> str:
    """Keep ``advice`` (asked for with ``line``, for the live cluster ``cluster_id`` if one)
    as a new run; returns its id."""
    now = time.time()
    run = RunRecord(
        id=new_run_id(),
        backend=backend,
        world_size=advice.inputs["nodes"] * advice.inputs["procs_per_node"],
        ranks=[],
        state=RunState.COMPLETED,
        cluster_id=cluster_id,
        source=line,
        notebook=os.environ.get("JPY_SESSION_NAME", ""),
        host=socket.gethostname(),
        kernel_pid=os.getpid(),
        started=now - advice.seconds,
        ended=now,
        message=f"advice: {advice.best.launch}",
        summary={"kind": KIND, KIND: advice.to_json()},
        kernel_id=kernel_id(),
    )
    store.create_run(run)
    advice.run_id = run.id
    return run.id


def update(store: Store, advice: Advice, calibration: dict[str, Any] | None = None) -> None:
    """Store the advice again with its measured values (after ``--verify``) and the
    corrections they fit (read back by :func:`.calibrate.newest`)."""
    if advice.run_id:
        extra = {"calibration": calibration} if calibration else {}
        store.update_summary(advice.run_id, advice=advice.to_json(), **extra)


def newest_probe(store: Store, world: int, run_id: str | None) -> dict[str, Any] | None:
    """The probe of run ``run_id``, else the newest probe of a ``world``-rank cluster."""
    if run_id:
        run = store.run(run_id)
        probe = run.summary.get("probe") if run is not None else None
        if not isinstance(probe, dict):
            raise AdviseError(f"--probe {run_id}: no probe run with that id in the history")
        return probe
    for listed in store.runs(limit=500):
        if "probe" in listed.summary and listed.world_size == world:
            run = store.run(listed.id)
            if run is not None and isinstance(run.summary.get("probe"), dict):
                return dict(run.summary["probe"])
    return None
