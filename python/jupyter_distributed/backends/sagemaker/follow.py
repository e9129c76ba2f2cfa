"""Follow a training job: status, secondary status, and its CloudWatch Logs, per host stream.

Each host's stream (``JOB/algo-N-<epoch>``) is read with its own forward token, so lines keep
their order and no other job's stream is ever read. Tagged lines (:mod:`...protocol.tagged`) become
the same events as a local run's: output lines per rank, ``report()`` metrics, failures.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...errors import RankFailure
from ...events import (
    ErrorEvent,
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    Stream,
    done_state,
)
from ...history.store import Store
from ...interface import RunView
from ...protocol import tagged
from ...protocol.tagged import Tag

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TERMINAL = ("Completed", "Failed", "Stopped")


def parse_line(run_id: str, t: float, line: str) -> Event | None:
    """One log line → an event, or None for lines that are not ours (platform messages)."""
    decoded = tagged.decode(line)
    if decoded is None:
        return None
    rank, tag, payload = decoded
    try:
        if tag in (Tag.STDOUT, Tag.STDERR):
            when, text = tagged.decode_output(payload)
            stream = Stream.STDOUT if tag is Tag.STDOUT else Stream.STDERR
            return OutputEvent(run_id, rank, when, stream, text)
        if tag is Tag.RESULT:
            return OutputEvent(run_id, rank, t, Stream.RESULT, str(json.loads(payload)))
        if tag is Tag.METRIC:
            when, values = json.loads(payload)
            return MetricEvent(
                run_id, rank, float(when), {str(k): float(v) for k, v in values.items()}
            )
        if tag is Tag.STATE:
            return RankEvent(run_id, rank, t, RankState(payload))
        if tag is Tag.DONE:
            return RankEvent(run_id, rank, t, done_state(payload))
        data = json.loads(payload)  # Tag.FAILURE
        data["traceback"] = tuple(data.get("traceback") or ())
        return ErrorEvent(run_id, RankFailure(**data))
    except (ValueError, TypeError, KeyError):
        return None  # a user's line that happens to look like ours


@dataclass
class JobStatus:
    status: str
    secondary: str
    failure_reason: str = ""
    transitions: list[dict[str, Any]] = field(default_factory=list)
    model_artifacts: str = ""
    warm_pool: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_describe(cls, d: dict[str, Any]) -> JobStatus:
        return cls(
            d["TrainingJobStatus"],
            d.get("SecondaryStatus", ""),
            d.get("FailureReason", ""),
            list(d.get("SecondaryStatusTransitions", [])),
            d.get("ModelArtifacts", {}).get("S3ModelArtifacts", ""),
            dict(d.get("WarmPoolStatus", {})),
        )

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL

    def live(self, job_name: str) -> str:
        """The job's status as one line ("SageMaker JOB: Training · Training image download
        completed. Training in progress."): the start-up line under the cell while it runs."""
        if self.finished:
            return ""
        message = str(self.transitions[-1].get("StatusMessage", "")) if self.transitions else ""
        line = f"SageMaker {job_name}: {self.secondary or self.status}"
        return f"{line} · {message}" if message else line


class LogTail:
    """Every stream of one job, each with its own forward token."""

    def __init__(self, logs: Any, job_name: str) -> None:
        self.logs, self.job_name = logs, job_name
        self.tokens: dict[str, str | None] = {}

    def _streams(self) -> list[str]:
        prefix = self.job_name + "/"
        names: list[str] = []
        kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": prefix}
        while True:
            try:
                found = self.logs.describe_log_streams(**kwargs)
            except self.logs.exceptions.ResourceNotFoundException:
                return names
            # Only this job's streams: "JOB/algo-N-EPOCH", never "JOB-other/…".
            names += [
                s["logStreamName"]
                for s in found.get("logStreams", [])
                if s["logStreamName"].startswith(prefix)
            ]
            if not found.get("nextToken"):
                return names
            kwargs["nextToken"] = found["nextToken"]

    def poll(self) -> list[tuple[str, float, str]]:
        """New (host, time, message) tuples since the last call."""
        out: list[tuple[str, float, str]] = []
        for stream in self._streams():
            host = stream[len(self.job_name) + 1 :].rsplit("-", 1)[0]
            while True:
                kwargs: dict[str, Any] = {
                    "logGroupName": LOG_GROUP,
                    "logStreamName": stream,
                    "startFromHead": True,
                }
                token = self.tokens.get(stream)
                if token:
                    kwargs["nextToken"] = token
                page = self.logs.get_log_events(**kwargs)
                for ev in page.get("events", []):
                    out.append((host, ev["timestamp"] / 1000.0, ev["message"]))
                new = page.get("nextForwardToken")
                if not new or new == token:
                    break
                self.tokens[stream] = new
                if not page.get("events"):
                    break
        return out


def describe(sm: Any, job_name: str) -> JobStatus:
    return JobStatus.from_describe(sm.describe_training_job(TrainingJobName=job_name))


def follow(
    sm: Any,
    logs: Any,
    job_name: str,
    run_id: str,
    on_events: Callable[[list[Event]], None],
    on_status: Callable[[str], None],
    poll: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    on_poll: Callable[[JobStatus], None] = lambda status: None,
) -> JobStatus:
    """Follow until the job ends and its logs are drained; returns the final status.
    ``on_status`` gets each status transition once, ``on_poll`` every status read."""
    tail = LogTail(logs, job_name)
    shown = 0
    last = ("", "")
    while True:
        status = describe(sm, job_name)
        on_poll(status)
        for tr in status.transitions[shown:]:
            when = tr.get("StartTime")
            stamp = when.strftime("%H:%M:%S") if isinstance(when, datetime) else ""
            on_status(f"{stamp} {tr.get('Status', '')}: {tr.get('StatusMessage', '')}".strip())
        shown = len(status.transitions)
        if not status.transitions and (status.status, status.secondary) != last:
            on_status(f"{status.status} ({status.secondary})")
        last = (status.status, status.secondary)
        events = [ev for _, t, msg in tail.poll() if (ev := parse_line(run_id, t, msg))]
        if events:
            on_events(events)
        if status.finished:
            events = [ev for _, t, msg in tail.poll() if (ev := parse_line(run_id, t, msg))]
            if events:
                on_events(events)
            return status
        sleep(poll)


@contextmanager
def follow_lease(
    store: Store,
    run_id: str,
    job_name: str,
    view: RunView,
    poll: float,
    sleep: Callable[[float], None],
) -> Iterator[Callable[[float], None]]:
    """Hold the run's follow lease; yields a ``sleep`` that also renews it."""
    host, pid = socket.gethostname(), os.getpid()
    told = False
    while (holder := store.claim_follow(run_id, host, pid)) is not None:
        if not told:
            view.notice(
                f"{job_name} is being followed by process {holder[1]} on {holder[0]} "
                "(the Jupyter server or another kernel); waiting for it to finish"
            )
            told = True
        sleep(max(poll, 1.0))

    def pause(seconds: float) -> None:
        sleep(seconds)
        store.claim_follow(run_id, host, pid)  # renews our own lease (heartbeat)

    try:
        yield pause
    finally:
        store.release_follow(run_id, host, pid)
