"""Checks of a SageMaker cell that need both its spec and its SageMaker options.

:class:`~.options.SageMakerOptions` checks each flag alone when it is built; here the flags
meet the layout, the strategy, ``--env``, ``--push`` and a sweep, before any request is made.
Pure: no AWS library.
"""

from __future__ import annotations

import sys

from ...errors import SpecError
from ...layout import Strategy
from ...redact import looks_secret
from ...spec import Spec
from .instances import SMDDP_INSTANCES
from .options import SageMakerOptions

MAX_ENVIRONMENT = 100
MAX_ENV_VALUE = 512


def check_spec(spec: Spec, options: SageMakerOptions) -> None:
    """Checks that need both the layout and the SageMaker options (before any request)."""
    layout = spec.layout
    layout.check_accelerators(options.accelerators, options.instance_type)
    per_host = options.accelerators
    torchrun = layout.strategy in (Strategy.DDP, Strategy.FSDP) and not options.smddp
    if torchrun and per_host and layout.procs_per_node != per_host:
        raise SpecError(
            f"--strategy {layout.strategy.value} runs torchrun with one process per GPU: "
            f"{options.instance_type} has {per_host}, so use --procs-per-node {per_host}"
        )
    if options.smddp and layout.strategy is not Strategy.DDP:
        raise SpecError(
            "--smddp (SageMaker's data-parallel library) needs --strategy ddp; "
            "model-parallel and data-parallel libraries do not combine"
        )
    if options.smddp and options.instance_type not in SMDDP_INSTANCES:
        raise SpecError(
            f"--smddp runs on {', '.join(sorted(SMDDP_INSTANCES))} only, not "
            f"{options.instance_type}"
        )
    mpi_launched = (Strategy.MODEL_PARALLEL, Strategy.HOROVOD, Strategy.NONE)
    if options.mpi_options and layout.strategy not in mpi_launched and not options.smddp:
        launcher = (
            "parameter servers" if layout.strategy is Strategy.PARAMETER_SERVER else "torchrun"
        )
        raise SpecError(
            f"--mpi-options needs an MPI launcher; --strategy {layout.strategy.value} uses "
            f"{launcher}"
        )
    if spec.targets is not None and spec.targets != tuple(range(spec.world_size)):
        raise SpecError(
            "--targets is not supported with --backend sagemaker: every job runs "
            "the cell on all ranks"
        )
    _check_sweep(spec, options)
    if spec.timeout is not None:
        raise SpecError(
            "--timeout is for live clusters; with --backend sagemaker use --max-run "
            "SECONDS (SageMaker stops the job then)"
        )
    if len(spec.env) > MAX_ENVIRONMENT:
        raise SpecError(f"--env: {len(spec.env)} variables; SageMaker allows {MAX_ENVIRONMENT}")
    for key, value in spec.env:
        if looks_secret(key, value):
            raise SpecError(
                f"--env {key} looks like a secret and would be visible in "
                "DescribeTrainingJob; use the job role or AWS Secrets Manager"
            )
        if len(value) > MAX_ENV_VALUE:
            raise SpecError(
                f"--env {key}: value is {len(value)} characters; SageMaker allows {MAX_ENV_VALUE}"
            )
    theirs = options.image_python()
    if spec.push and theirs is not None and theirs != sys.version_info[:2]:
        raise SpecError(
            f"--push pickles values with Python {sys.version_info[0]}."
            f"{sys.version_info[1]} but the image runs Python {theirs[0]}."
            f"{theirs[1]}; use a matching --image/--py-version or drop --push"
        )


def _check_sweep(spec: Spec, options: SageMakerOptions) -> None:
    names = [n for n, _ in spec.params] or list(spec.sweep.names if spec.sweep else ())
    if not names:
        return
    reserved = [n for n in names if n.startswith("sagemaker_")]
    if reserved:
        raise SpecError(f"--sweep {reserved[0]}: names starting with sagemaker_ are SageMaker's")
    if options.job_name:
        raise SpecError("--job-name names one job; a sweep starts one per combination: remove it")
    if not options.wait:
        raise SpecError("--no-wait cannot bound a sweep's parallelism; remove --no-wait")
