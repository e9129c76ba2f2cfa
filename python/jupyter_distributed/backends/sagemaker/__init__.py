"""``--backend sagemaker``: options and checks, request (pure), package, follow, results, backend,
lifecycle (attach, cancel, release). boto3 is imported only here, inside ``backend``.

This module is the backend's declaration (``PLUGIN``): it imports nothing heavy."""

from __future__ import annotations

from ..plugin import LineCommand, Plugin
from .options import DistributedSageMaker, SageMakerOptions

_COMMANDS = "jupyter_distributed.backends.sagemaker.commands"

PLUGIN = Plugin(
    name="sagemaker",
    title="SageMaker (--backend sagemaker; defaults: c.DistributedSageMaker.* or "
    "JUPYTER_DISTRIBUTED_SAGEMAKER_*)",
    backend="jupyter_distributed.backends.sagemaker.backend:SageMakerBackend",
    options=SageMakerOptions,
    settings=DistributedSageMaker,
    commands=(
        LineCommand(
            "attach",
            "attach JOB",
            "follow a SageMaker job again and fetch its results",
            f"{_COMMANDS}:attach",
            ((("job",), {}),),
        ),
        LineCommand(
            "cancel",
            "cancel RUN",
            "stop a SageMaker run's job",
            f"{_COMMANDS}:cancel",
            ((("run",), {}),),
        ),
        LineCommand(
            "release",
            "release [JOB]",
            "end a SageMaker warm pool (default: the latest kept one)",
            f"{_COMMANDS}:release",
            ((("job",), {"nargs": "?"}),),
        ),
    ),
    follow=f"{_COMMANDS}:follow",
)
