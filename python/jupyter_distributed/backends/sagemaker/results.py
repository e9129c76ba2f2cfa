"""A finished job's results from S3: per-rank last value, pulled variables and exceptions."""

from __future__ import annotations

import io
import json
import pickle
import tarfile
import time
from typing import Any, Literal

from ...errors import RankFailure
from ...events import RunState
from ...interface import RunOutcome
from ...protocol import datavalues
from ...protocol.frames import unpack_frames
from .follow import JobStatus
from .resultkey import SIGNATURE_FIELD, verified

#: What a follower loads of the pulled values: nothing (the server), data, or pickles too.
Load = Literal["none", "data", "pickle"]


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
    rank: int, fields: dict[str, Any], pulled: bytes, key: bytes | None, load: Load
) -> tuple[dict[str, Any] | None, str]:
    """A rank's pulled values, or why they are not loaded: only with an HMAC that verifies with
    our own key, as data (which runs no code), and as a pickle only with ``load="pickle"``."""
    if not verified(key, pulled, fields.get(SIGNATURE_FIELD)):
        return None, (
            "not loaded: the results in S3 fail their integrity check (HMAC with this run's "
            "key); they were changed after the job wrote them, or the key is not on this machine"
        )
    try:
        frames = unpack_frames(pulled)
        if fields.get("pull_format") == datavalues.FORMAT:
            return datavalues.decode(frames), ""
    except ValueError as exc:  # NotData too: bytes that are not what the job writes
        return None, f"not loaded: the results in S3 are not data this kernel reads ({exc})"
    if load != "pickle":
        return None, (
            "not loaded: the results in S3 are a pickle, which could run code in this kernel; "
            "jobs return data unless run with --trust-pickle"
        )
    if not frames:
        return {}, ""
    values = pickle.loads(frames[0], buffers=frames[1:])  # noqa: S301 (opted in, HMAC-verified)
    return dict(values), ""


def outcome(
    status: JobStatus,
    s3: Any,
    ranks: tuple[int, ...],
    failures: list[RankFailure],
    interrupted: bool,
    key: bytes | None = None,
    load: Load = "data",
) -> RunOutcome:
    """Combine the job's final status, what the logs said and what S3 holds. Pulled values are
    loaded only with an HMAC that verifies with ``key`` (this run's own, see :mod:`.resultkey`),
    as data (:mod:`...protocol.datavalues`), or unpickled with ``load="pickle"`` (the user's
    ``--trust-pickle``): the key is in the job's environment, which DescribeTrainingJob shows,
    so whoever can read that and write the job's output prefix could sign a pickle. The Jupyter
    server passes ``load="none"``: it needs states and logs only."""
    result = RunOutcome(RunState.COMPLETED)
    if status.model_artifacts:
        for rank, (fields, pulled) in read_artifacts(s3, status.model_artifacts).items():
            if fields.get("value") is not None:
                result.values[rank] = str(fields["value"])
            if fields.get("pull_errors"):
                result.pull_errors[rank] = dict(fields["pull_errors"])
            if pulled and load != "none":
                values, why = _load(rank, fields, pulled, key, load)
                if values is None:
                    result.pull_errors.setdefault(rank, {})["*"] = why
                elif values:
                    result.pulled[rank] = values
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
