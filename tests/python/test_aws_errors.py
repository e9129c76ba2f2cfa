"""Every AWS call goes through one error mapper; a missing job is NotFound (issue 8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.exceptions import ClientError, NoCredentialsError

from jupyter_distributed.backends.sagemaker.aws import Clients, aws_errors
from jupyter_distributed.backends.sagemaker.job import release_pool, stop_job
from jupyter_distributed.backends.sagemaker.lifecycle import attach
from jupyter_distributed.errors import CloudError, LaunchError, NotFound
from jupyter_distributed.events import Event
from jupyter_distributed.history.store import Store

from .sagemaker_fixtures import context
from .sagemaker_runtime import LocalSageMaker


def _client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "DescribeTrainingJob")


def test_aws_failures_become_one_line_errors() -> None:
    with pytest.raises(CloudError) as info, aws_errors("following training job jd-1"):
        raise _client_error("ThrottlingException", "Rate exceeded")
    assert str(info.value) == (
        "SageMaker: following training job jd-1 failed: ThrottlingException: Rate exceeded"
    )
    with (
        pytest.raises(LaunchError, match="configure AWS credentials"),
        aws_errors("creating the training job", LaunchError),
    ):
        raise NoCredentialsError
    with pytest.raises(NotFound, match="Could not find"), aws_errors("stopping jd-2"):
        raise _client_error("ValidationException", "Could not find requested job with name jd-2")


class _View:
    def on_event(self, event: Event) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass

    def finish(self, unrecorded: int = 0) -> None:
        pass


def test_a_missing_job_is_not_found_everywhere(configured: LocalSageMaker, tmp_path: Path) -> None:
    clients = Clients(configured.client("sagemaker"), configured.s3, configured.logs)
    store = Store(tmp_path / "h.sqlite3")
    with pytest.raises(NotFound, match="no SageMaker training job named jd-missing"):
        attach(context(store, _View()), "jd-missing", clients)
    with pytest.raises(NotFound, match="jd-missing"):
        stop_job(clients, "jd-missing")
    with pytest.raises(NotFound, match="jd-missing"):
        release_pool(clients, "jd-missing")
    store.close()
