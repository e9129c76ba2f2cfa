"""A finished job's results from S3: per-rank last value, pulled variables and exceptions."""

from __future__ import annotations

import io
import json
import pickle
import tarfile
import time
from typing import Any

from ...errors import RankFailure
from ...events import RunState
from ..base import RunOutcome
from .follow import JobStatus


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def _unframe(data: bytes) -> list[bytes]:
    import struct

    frames, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        frames.append(data[i + 8 : i + 8 + n])
        i += 8 + n
    return frames


def read_artifacts(s3: Any, uri: str) -> dict[int, tuple[dict[str, Any], list[bytes]]]:
    """``model.tar.gz`` → {rank: (done fields, pulled frames)}."""
    bucket, key = _split(uri)
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return {}
    out: dict[int, tuple[dict[str, Any], list[bytes]]] = {}
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        for name, member in members.items():
            if not (name.startswith("jd/rank-") and name.endswith(".json")):
                continue
            rank = int(name[len("jd/rank-") : -len(".json")])
            fields = json.loads(tar.extractfile(member).read())  # type: ignore[union-attr]
            pull = members.get(name[:-5] + ".pull")
            frames = _unframe(tar.extractfile(pull).read()) if pull else []  # type: ignore[union-attr]
            out[rank] = (fields, frames)
    return out


def outcome(
    status: JobStatus,
    s3: Any,
    ranks: tuple[int, ...],
    failures: list[RankFailure],
    interrupted: bool,
) -> RunOutcome:
    """Combine the job's final status, what the logs said and what S3 holds."""
    result = RunOutcome(RunState.COMPLETED)
    if status.model_artifacts:
        for rank, (fields, frames) in read_artifacts(s3, status.model_artifacts).items():
            if fields.get("value") is not None:
                result.values[rank] = str(fields["value"])
            if fields.get("pull_errors"):
                result.pull_errors[rank] = dict(fields["pull_errors"])
            if frames:
                result.pulled[rank] = pickle.loads(  # noqa: S301 (our job's own results)
                    frames[0], buffers=frames[1:]
                )
            failure = fields.get("failure")
            if failure and not any(f.rank == rank for f in failures):
                failure["traceback"] = tuple(failure.get("traceback") or ())
                failures.append(RankFailure(**failure))
    result.failures = sorted(failures, key=lambda f: f.t)
    if interrupted or status.status == "Stopped":
        result.state = RunState.INTERRUPTED if interrupted else RunState.STOPPED
    elif status.status == "Failed" or result.failures:
        result.state = RunState.FAILED
        if not result.failures:
            result.failures = [
                RankFailure(
                    rank=ranks[0] if ranks else 0,
                    t=time.time(),
                    ename="TrainingJobFailed",
                    evalue=status.failure_reason or "no reason given",
                )
            ]
    return result
