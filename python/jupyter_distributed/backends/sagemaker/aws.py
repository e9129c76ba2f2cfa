"""The backend's AWS side: its clients (:class:`Clients`, which tests pass their own), and the one
place that turns what boto3 raises into our errors: one line, what failed, what to do.

Every AWS call of the backend runs inside :func:`aws_errors`: creating a job (``LaunchError``),
following it, reading its results, stopping it, releasing its warm pool (``CloudError``). A job
or resource that does not exist becomes :class:`~jupyter_distributed.errors.NotFound`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...errors import CloudError, DistributedError, NotFound
from .options import SageMakerOptions

#: AWS error codes that mean "no such thing".
NOT_FOUND_CODES = frozenset(
    {"ResourceNotFound", "ResourceNotFoundException", "NoSuchKey", "NoSuchBucket", "NotFound"}
)


def _not_found(code: str, message: str) -> bool:
    # SageMaker answers DescribeTrainingJob on an unknown name with a ValidationException.
    return code in NOT_FOUND_CODES or (
        code == "ValidationException" and "could not find" in message.lower()
    )


@contextmanager
def aws_errors(doing: str, error: type[DistributedError] = CloudError) -> Iterator[None]:
    """Run AWS calls; raise ``error`` (or NotFound) with one line naming ``doing``."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as exc:
        details = exc.response.get("Error", {})
        code, message = str(details.get("Code", "?")), str(details.get("Message", exc))
        if _not_found(code, message) and code != "NoSuchBucket":
            raise NotFound(f"SageMaker: {doing}: {message or code}") from None
        raise error(f"SageMaker: {doing} failed: {code}: {message}") from None
    except BotoCoreError as exc:
        raise error(
            f"SageMaker: {doing} failed: {exc} (configure AWS credentials the usual boto3 "
            "way: a profile, SSO or an instance role)"
        ) from None


@dataclass(frozen=True)
class Clients:
    """The AWS clients the backend uses; tests pass their own."""

    sagemaker: Any
    s3: Any
    logs: Any

    @classmethod
    def create(cls, options: SageMakerOptions) -> Clients:
        import boto3
        from botocore.config import Config

        session = boto3.session.Session(region_name=options.region or None)
        config = Config(retries={"max_attempts": 3, "mode": "standard"})
        endpoint = options.endpoint_url or None

        def client(name: str) -> Any:
            return session.client(name, endpoint_url=endpoint, config=config)

        return cls(client("sagemaker"), client("s3"), client("logs"))
