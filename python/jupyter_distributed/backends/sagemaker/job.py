"""A training job once it exists: follow it to its end and record what happened, stop it, or
release its warm pool.

Apart from :mod:`.backend` (plan and create) because the kernel that created the job is only
one of its followers: ``%distributed attach`` and the Jupyter server follow it too
(:mod:`.lifecycle`, :mod:`.commands`), under one follow lease in the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...errors import RankFailure
from ...events import ErrorEvent, Event, RunEvent, RunState
from ...history.store import Store
from ...interface import RunOutcome, RunView
from .aws import Clients, aws_errors
from .follow import JobStatus, describe, follow, follow_lease
from .resultkey import load_key
from .results import Load, outcome


def follow_job(
    clients: Clients,
    job_name: str,
    run_id: str,
    ranks: tuple[int, ...],
    store: Store,
    view: RunView,
    poll: float = 0.5,
    seen: set[tuple[str, int, float]] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    load: Load = "data",
) -> RunOutcome:
    """Follow a job to its end, recording its events; Ctrl-C stops it (StopTrainingJob).
    ``load`` says what of the ranks' pulled values is loaded (:func:`.results.outcome`): the
    server loads none, a kernel data, or pickles too with ``--trust-pickle``.

    ``seen`` holds (kind, rank, time) of events already recorded (when attaching again).
    Only the holder of the run's follow lease in the store follows it (a kernel or the Jupyter
    server, never both); this waits for a live holder to finish, then takes the lease."""
    with (
        aws_errors(f"following training job {job_name}"),
        follow_lease(store, run_id, job_name, view, poll, sleep) as pause,
    ):
        return _follow_job(clients, job_name, run_id, ranks, store, view, poll, seen, pause, load)


def _follow_job(
    clients: Clients,
    job_name: str,
    run_id: str,
    ranks: tuple[int, ...],
    store: Store,
    view: RunView,
    poll: float,
    seen: set[tuple[str, int, float]] | None,
    sleep: Callable[[float], None],
    load: Load,
) -> RunOutcome:
    failures: list[RankFailure] = []

    def on_events(events: list[Event]) -> None:
        if seen:
            events = [
                ev for ev in events if (ev.kind, getattr(ev, "rank", 0), round(ev.t, 3)) not in seen
            ]
        store.append(events)
        for ev in events:
            if isinstance(ev, ErrorEvent):
                failures.append(ev.failure)
            view.on_event(ev)
        view.flush()

    training: list[bool] = []

    def on_status(text: str) -> None:
        """Show it under the cell and record it, so the panel shows the job's progress."""
        view.notice(text)
        if not any(word in text for word in ("Completed", "Failed", "Stopped")):
            training.append("Training" in text)
            state = RunState.RUNNING if any(training) else RunState.PENDING
            store.append([RunEvent(run_id, time.time(), state, f"SageMaker {job_name}: {text}")])

    shown = [""]

    def on_poll(status: JobStatus) -> None:
        """The job's status as it changes, one live line under the cell (gone once it ends)."""
        if (line := status.live(job_name)) != shown[0]:
            view.starting(line)
            shown[0] = line

    interrupted = False
    try:
        while True:
            try:
                status = follow(
                    clients.sagemaker, clients.logs, job_name, run_id, on_events, on_status,
                    poll, sleep, on_poll,
                )  # fmt: skip
                break
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                clients.sagemaker.stop_training_job(TrainingJobName=job_name)
                view.notice(f"stopping SageMaker training job {job_name} (StopTrainingJob sent)")
    finally:
        if shown[0]:
            view.starting("")
    key = load_key(store.path, run_id) if load != "none" else None
    result = outcome(status, clients.s3, ranks, failures, interrupted, key, load)
    store.update_summary(
        run_id,
        sagemaker={
            "job": job_name,
            "status": status.status,
            "secondary": status.secondary,
            "failure_reason": status.failure_reason,
            "warm_pool": status.warm_pool,
        },
    )
    if status.warm_pool:
        view.notice(
            f"warm pool: {status.warm_pool.get('Status', '?')}; %distributed release ends it"
        )
    return result


def stop_job(clients: Clients, job_name: str) -> str:
    with aws_errors(f"stopping training job {job_name}"):
        status = describe(clients.sagemaker, job_name)
        if status.finished:
            return f"{job_name} already ended ({status.status})"
        clients.sagemaker.stop_training_job(TrainingJobName=job_name)
    return f"stopping {job_name} (StopTrainingJob sent)"


def release_pool(clients: Clients, job_name: str) -> str:
    with aws_errors(f"releasing the warm pool of {job_name}"):
        status = describe(clients.sagemaker, job_name)
        if status.warm_pool.get("Status") not in ("Available", "InUse"):
            return f"{job_name} keeps no warm pool ({status.warm_pool.get('Status', 'none')})"
        clients.sagemaker.update_training_job(
            TrainingJobName=job_name, ResourceConfig={"KeepAlivePeriodInSeconds": 0}
        )
    return f"released the warm pool of {job_name}"
