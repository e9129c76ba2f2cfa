"""Line-magic actions on SageMaker jobs: attach (after a kernel restart), cancel, release."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import NotFound, SpecError
from ...history.records import new_run_id
from ...history.store import RunRecord, Store
from ...interface import RunOutcome
from ...kernelinfo import kernel_id
from ..hooks import CommandContext
from .aws import Clients, aws_errors
from .follow import describe
from .job import follow_job, release_pool, stop_job
from .options import SageMakerOptions
from .results import Load


def default_clients(defaults: Mapping[str, Any] | None = None) -> Clients:
    """AWS clients for the configured region and endpoint: ``defaults`` are the configured
    options (the kernel's or the server's ``DistributedSageMaker`` traits), the environment
    fills the rest."""
    options = SageMakerOptions(**dict(defaults or {})).resolved()
    if not options.region:
        raise SpecError(
            "no AWS region: set JUPYTER_DISTRIBUTED_SAGEMAKER_REGION or AWS_DEFAULT_REGION"
        )
    return Clients.create(options)


def _run_for_job(store: Store, job_name: str) -> RunRecord | None:
    for run in store.runs(limit=1000):
        if run.backend == "sagemaker" and run.external_id == job_name:
            return run
    return None


def attach(
    context: CommandContext,
    job_name: str,
    clients: Clients | None = None,
    poll: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    raise_outcome: bool = True,
    server: bool = False,
) -> RunOutcome:
    """Follow ``job_name`` again, record it (``context.record``), set its pulled names in
    ``context.user_ns``; raise its failures (with ``raise_outcome``).

    Also how the Jupyter server follows a run whose kernel is gone (``server/follower.py``),
    with ``server``: the server never loads pulled values."""
    store = context.store
    clients = clients or default_clients(context.defaults)
    try:
        with aws_errors(f"looking up training job {job_name}"):
            describe(clients.sagemaker, job_name)
    except NotFound:
        raise NotFound(f"no SageMaker training job named {job_name}") from None
    run = _run_for_job(store, job_name)
    if run is None:
        run = RunRecord(
            id=new_run_id(),
            backend="sagemaker",
            world_size=0,
            ranks=[],
            external_id=job_name,
            host=socket.gethostname(),
            kernel_pid=os.getpid(),
            started=time.time(),
            kernel_id=kernel_id(),
        )
    recorder = context.record(run)
    recorder.notice(f"attached to {job_name} (run {run.id})")
    ranks = tuple(run.ranks)
    seen = {
        (str(d["kind"]), int(d.get("rank") or 0), round(float(d["t"]), 3))
        for _, d in store.events_after(0, run.id, limit=1_000_000)
    }
    # An error while following (AWS, a second Ctrl-C, the server stopping) says nothing about
    # the job, which may still run: the run stays unfinished and can be followed again.
    trusted = (run.spec.get("options") or {}).get("trust_pickle") or context.defaults.get(
        "trust_pickle"
    )
    load: Load = "none" if server else "pickle" if trusted else "data"
    result = follow_job(clients, job_name, run.id, ranks, store, recorder, poll, seen, sleep, load)
    return recorder.finish(
        result,
        run.spec.get("pull", []),
        ranks,
        context.user_ns,
        after_interrupt=f"SageMaker training job {job_name} was stopped",
        raise_outcome=raise_outcome,
    )


def cancel(
    store: Store,
    run_id: str,
    clients: Clients | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    run = store.run(run_id) or _run_for_job(store, run_id)
    if run is None or run.backend != "sagemaker" or not run.external_id:
        raise SpecError(f"{run_id} is not a SageMaker run in the history; see %distributed runs")
    return stop_job(clients or default_clients(defaults), run.external_id)


def release(
    store: Store,
    job_name: str | None = None,
    clients: Clients | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    if job_name is None:
        runs = [
            r
            for r in store.runs(limit=1000)
            if r.backend == "sagemaker"
            and r.external_id
            and (r.spec.get("options") or {}).get("keep_alive")
        ]
        if not runs:
            return "no SageMaker run kept a warm pool"
        job_name = runs[0].external_id
    return release_pool(clients or default_clients(defaults), job_name)
