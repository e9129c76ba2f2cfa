"""SageMaker settings of a cell, with every check the service would make, before anything starts
(each flag here; those that need the cell's spec too in :mod:`.checks`).

Defaults come from the user's configuration (environment variables
``JUPYTER_DISTRIBUTED_SAGEMAKER_<NAME>``), so a cell names only what changes. This module imports
no AWS library: validation is pure.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from traitlets import Bool, Unicode

from ... import userfiles
from ...errors import SpecError
from ...settings import Settings
from ...spec import BackendOptions
from ..plugin import option
from .instances import INSTANCE_ACCELERATORS

CONFIG_PREFIX = "JUPYTER_DISTRIBUTED_SAGEMAKER_"

INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")
CHANNEL = re.compile(r"^[A-Za-z0-9\.\-_]{1,64}$")
PY_VERSION = re.compile(r"^py3(\d{1,2})$")
IMAGE_PY = re.compile(r"[-:]py3(\d{1,2})(?:-|$)")

MAX_RUN_LIMIT = 28 * 24 * 3600
KEEP_ALIVE_LIMIT = 3600
MAX_HYPERPARAMETERS = 100
MAX_HYPERPARAMETER_KEY = 256
MAX_HYPERPARAMETER_VALUE = 2500
MAX_REQUIREMENTS = 1 << 20  # bytes of --requirements
REQUIREMENTS = "a requirements file lists packages, one per line"


class DistributedSageMaker(Settings):
    """Defaults of ``--backend sagemaker`` (``c.DistributedSageMaker.*``), each also read from
    ``JUPYTER_DISTRIBUTED_SAGEMAKER_<NAME>``."""

    env_prefix = CONFIG_PREFIX
    role = Unicode("", help="execution role ARN").tag(config=True)
    bucket = Unicode("", help="S3 bucket for code and results").tag(config=True)
    region = Unicode("", help="AWS region (else AWS_DEFAULT_REGION)").tag(config=True)
    image = Unicode("", help="training image URI").tag(config=True)
    endpoint_url = Unicode("", help="SageMaker/S3/Logs endpoint (e.g. a local test server)").tag(
        config=True
    )
    instance_type = Unicode("ml.m5.xlarge", help="instance type").tag(config=True)
    trust_pickle = Bool(
        False, help="return --pull values as pickles (default: as data, which runs no code)"
    ).tag(config=True)


def config(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The user's configured default for ``name`` (e.g. ``ROLE``), or ``""``."""
    return (os.environ if environ is None else environ).get(CONFIG_PREFIX + name, "")


@dataclass(frozen=True)
class SageMakerOptions(BackendOptions):
    """``--backend sagemaker`` flags; empty strings mean "from configuration"."""

    backend: str = field(default="sagemaker", init=False)
    instance_type: str = option(
        "ml.m5.xlarge", "instance type (default ml.m5.xlarge)", metavar="TYPE"
    )
    role: str = option("", "execution role ARN", metavar="ARN")
    bucket: str = option("", "S3 bucket for code and results", metavar="NAME")
    prefix: str = "jupyter-distributed"
    region: str = option("", "AWS region", metavar="NAME")
    image: str = option("", "training image", metavar="URI")
    framework_version: str = option("", "PyTorch training image version", metavar="V")
    py_version: str = option("", "Python of the image, e.g. py311", metavar="pyXY")
    endpoint_url: str = ""
    job_name: str = option("", "training job name (default jd-RUN)", metavar="NAME")
    mpi_options: str = option(  # also the mpi backend's flag: one --mpi-options for both
        "", "the job's custom_mpi_options (SageMaker's mpirun)", metavar='"..."'
    )
    smddp: bool = option(False, "ddp with SageMaker's data-parallel library instead of torchrun")
    max_run: int = option(24 * 3600, "maximum run time", metavar="SECONDS")
    keep_alive: int = option(0, "keep a warm pool this long", metavar="SECONDS")
    spot: bool = option(False, "managed spot training (needs --max-wait)")
    max_wait: int | None = option(None, "spot: longest wait + run", metavar="SECONDS")
    checkpoint_s3: str = option("", "s3:// URI synced with /opt/ml/checkpoints", metavar="URI")
    requirements: str = option("", "requirements.txt installed in the job", metavar="FILE")
    volume_size: int = 30
    inputs: tuple[tuple[str, str], ...] = option(
        (), "data channel (repeatable)", metavar="NAME=s3://...", flag="--input"
    )
    shard_by_key: bool = option(
        False, "split the inputs' objects across hosts instead of copying all"
    )
    wait: bool = option(True, "return at once; follow in the panel", flag="--no-wait")
    trust_pickle: bool = option(
        False,
        "return --pull values as pickles (any object); whoever can read the job's description "
        "and write its S3 output could then run code in this kernel",
    )

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> SageMakerOptions:
        from ...cluster.cmdline import unquote

        values = {**defaults, **given}
        inputs = []
        for item in given.get("inputs", ()):
            name, eq, uri = item.partition("=")
            if not eq:
                raise SpecError(f"--input {item!r} must look like NAME=s3://bucket/prefix")
            inputs.append((name, uri))
        values["inputs"] = tuple(inputs)
        values["mpi_options"] = unquote(values.get("mpi_options") or "")
        return cls(**values)

    def __post_init__(self) -> None:
        if self.requirements:  # (read again when the job is packaged: package.build)
            userfiles.read_text("--requirements", self.requirements, MAX_REQUIREMENTS, REQUIREMENTS)
        if not INSTANCE_TYPE.match(self.instance_type):
            raise SpecError(
                f"--instance-type {self.instance_type!r} is not a SageMaker "
                "instance type like ml.p4d.24xlarge"
            )
        if self.role and not ROLE_ARN.match(self.role):
            raise SpecError(
                f"--role {self.role!r} must be an IAM role ARN like "
                "arn:aws:iam::123456789012:role/SageMakerRole"
            )
        if self.bucket and not BUCKET.match(self.bucket):
            raise SpecError(f"--bucket {self.bucket!r} is not a valid S3 bucket name")
        if self.region and not REGION.match(self.region):
            raise SpecError(f"--region {self.region!r} is not an AWS region like us-west-2")
        if self.job_name and not JOB_NAME.match(self.job_name):
            raise SpecError(
                f"--job-name {self.job_name!r}: use 1-63 letters, digits and "
                "hyphens, starting with a letter or digit"
            )
        if self.py_version and not PY_VERSION.match(self.py_version):
            raise SpecError(f"--py-version {self.py_version!r} must look like py311")
        if self.image and self.framework_version:
            raise SpecError("give either --image or --framework-version, not both")
        if not 1 <= self.max_run <= MAX_RUN_LIMIT:
            raise SpecError(f"--max-run must be 1-{MAX_RUN_LIMIT} seconds, got {self.max_run}")
        if not 0 <= self.keep_alive <= KEEP_ALIVE_LIMIT:
            raise SpecError(
                f"--keep-alive must be 0-{KEEP_ALIVE_LIMIT} seconds, got {self.keep_alive}"
            )
        try:
            shlex.split(self.mpi_options)
        except ValueError as exc:
            raise SpecError(f'--mpi-options "{self.mpi_options}": {exc}') from None
        if self.volume_size < 1:
            raise SpecError(f"--volume-size must be at least 1 GB, got {self.volume_size}")
        self._check_spot()
        if self.checkpoint_s3 and not S3_URI.match(self.checkpoint_s3):
            raise SpecError(f"--checkpoint-s3 {self.checkpoint_s3!r} must be an s3://bucket/path")
        seen: set[str] = set()
        for name, uri in self.inputs:
            if not CHANNEL.match(name):
                raise SpecError(
                    f"--input {name!r}: channel names are 1-64 letters, digits, '.', '-' or '_'"
                )
            if name in seen or name == "code":
                raise SpecError(f"--input {name} is given twice or reserved; rename it")
            seen.add(name)
            if not S3_URI.match(uri):
                raise SpecError(f"--input {name}={uri!r} must be an s3:// URI")
        if self.shard_by_key and not self.inputs:
            raise SpecError("--shard-by-key needs at least one --input NAME=s3://...")

    def _check_spot(self) -> None:
        if self.max_wait is not None and not self.spot:
            raise SpecError("--max-wait applies to spot training only; add --spot")
        if not self.spot:
            return
        if self.max_wait is None:
            raise SpecError(f"--spot needs --max-wait SECONDS (at least --max-run {self.max_run})")
        if self.max_wait < self.max_run:
            raise SpecError(
                f"--max-wait {self.max_wait} is shorter than --max-run "
                f"{self.max_run}; spot training needs max-wait ≥ max-run"
            )
        if self.keep_alive:
            raise SpecError(
                "--spot and --keep-alive do not combine: warm pools need "
                "on-demand instances; drop one"
            )

    # -- resolved values (configuration fills what the cell left out) ---------------------

    def resolved(self, environ: Mapping[str, str] | None = None) -> SageMakerOptions:
        """A copy with role, bucket, region, image and endpoint from configuration."""
        from dataclasses import replace

        def pick(value: str, name: str) -> str:
            return value or config(name, environ)

        region = pick(self.region, "REGION") or (os.environ if environ is None else environ).get(
            "AWS_DEFAULT_REGION", ""
        )
        return replace(
            self,
            role=pick(self.role, "ROLE"),
            bucket=pick(self.bucket, "BUCKET"),
            region=region,
            image=self.image or ("" if self.framework_version else config("IMAGE", environ)),
            endpoint_url=pick(self.endpoint_url, "ENDPOINT_URL"),
        )

    @property
    def accelerators(self) -> int | None:
        return INSTANCE_ACCELERATORS.get(self.instance_type)

    def image_python(self) -> tuple[int, int] | None:
        """The Python version of the training image, where the tag or --py-version says it."""
        match = PY_VERSION.match(self.py_version) or IMAGE_PY.search(self.image)
        return (3, int(match.group(1))) if match else None
