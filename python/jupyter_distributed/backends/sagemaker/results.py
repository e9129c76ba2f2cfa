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
from ...interface import RunOutcome
from ...protocol.frames import unpack_frames
from .follow import JobStatus
from .resultkey import SIGNATURE_FIELD, verified


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def read_artifacts(s3: Any, uri: str) -> dict[int, tuple[dict[str, Any], bytes]]:
    """``model.tar.gz`` → {rank: (done fields, the pulled values' framed bytes)}."""
    bucket, key = _split(uri)
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return {}
    out: dict[int, tuple[dict[str, Any], bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        for name, member in members.items():
            if not (name.startswith("jd/rank-") and name.endswith(".json")):
                continue
            rank = int(name[len("jd/rank-") : -len(".json")])
            fields = json.loads(tar.extractfile(member).read())  # type: ignore[union-attr]
            pull = members.get(name[:-5] + ".pull")
            pulled = tar.extractfile(pull).read() if pull else b""  # type: ignore[union-attr]
            out[rank] = (fields, pulled)
    return out


def _load(
    rank: int, fields: dict[str, Any], pulled: bytes, key: bytes | None, result: RunOutcome
) -> None:
    """Unpickle a rank's pulled values only if their HMAC verifies with our own key."""
    if not verified(key, pulled, fields.get(SIGNATURE_FIELD)):
        why = (
            "not loaded: the results in S3 fail their integrity check (HMAC with this run's "
            "key); they were changed after the job wrote them, or the key is not on this machine"
        )
        result.pull_errors.setdefault(rank, {})["*"] = why
        return
    frames = unpack_frames(pulled)
    if frames:
        result.pulled[rank] = pickle.loads(  # noqa: S301 (HMAC-verified with our own key)
            frames[0], buffers=frames[1:]
        )


def outcome(
    status: JobStatus,
    s3: Any,
    ranks: tuple[int, ...],
    failures: list[RankFailure],
    interrupted: bool,
    key: bytes | None = None,
    unpickle: bool = True,
) -> RunOutcome:
    """Combine the job's final status, what the logs said and what S3 holds. Pulled values are
    unpickled only with ``unpickle`` and an HMAC that verifies with ``key`` (this run's own, see
    :mod:`.resultkey`); the Jupyter server passes ``unpickle=False``, as it needs states and logs
    only: whoever can write the job's output prefix must not run code in the server."""
    result = RunOutcome(RunState.COMPLETED)
    if status.model_artifacts:
        for rank, (fields, pulled) in read_artifacts(s3, status.model_artifacts).items():
            if fields.get("value") is not None:
                result.values[rank] = str(fields["value"])
            if fields.get("pull_errors"):
                result.pull_errors[rank] = dict(fields["pull_errors"])
            if pulled and unpickle:
                _load(rank, fields, pulled, key, result)
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
