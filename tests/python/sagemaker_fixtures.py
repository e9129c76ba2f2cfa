"""Fixtures for the SageMaker tests: moto's server with the local platform, and a user's
configuration that points the backend at it through the environment only."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.hooks import CommandContext
from jupyter_distributed.history.store import Store
from jupyter_distributed.recorder import CellViewLike, recording

from .sagemaker_runtime import REGION, LocalSageMaker

BUCKET = "jd-test-bucket"
ROLE = "arn:aws:iam::123456789012:role/JdTestRole"
ACCESS_KEY = "AKIAJDTESTKEY0000001"
SECRET_KEY = "jd-test-secret-never-logged-0123456789"  # noqa: S105 (a fake, for the test)
IMAGE = f"local/pytorch-training:2.3.0-cpu-py3{sys.version_info[1]}"


@pytest.fixture(scope="session")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSageMaker]:
    with LocalSageMaker(tmp_path_factory.mktemp("sm")).running() as sm:
        sm.s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield sm


@pytest.fixture
def configured(
    platform: LocalSageMaker, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> LocalSageMaker:
    """The user's configuration: defaults and the endpoint, from the environment only."""
    for key, value in {
        "ROLE": ROLE,
        "BUCKET": BUCKET,
        "REGION": REGION,
        "IMAGE": IMAGE,
        "ENDPOINT_URL": platform.endpoint,
    }.items():
        monkeypatch.setenv(f"JUPYTER_DISTRIBUTED_SAGEMAKER_{key}", value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "history.sqlite3"))
    return platform


def context(
    store: Store, view: CellViewLike, user_ns: dict[str, Any] | None = None
) -> CommandContext:
    """What ``%distributed attach`` gives SageMaker's hooks: runs recorded into ``store``, shown
    in ``view``, pulled names set in ``user_ns``."""
    record = recording(store, lambda: view)
    return CommandContext(store, record, {} if user_ns is None else user_ns)
