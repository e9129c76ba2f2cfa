"""The backends the contract suite runs against, and how to tell when one cannot run here.

A backend joins the suite by adding one :class:`BackendCase` to ``CASES``: a name, the spec
options it needs, the pytest fixtures it runs under, a reason to skip where its tools are missing,
and the contract capabilities it lacks by design, each with the reason (see ``CAPABILITIES``).
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

from jupyter_distributed.backends.mpi_options import MpiOptions
from jupyter_distributed.spec import BackendOptions

#: What a contract test may need beyond "run a cell on N ranks and report what happened".
CAPABILITIES = {
    "persistent": "rank namespaces persist from one cell to the next",
    "targets": "--targets runs a cell on some ranks of a live cluster",
    "timeout": "--timeout interrupts a cell and keeps the ranks",
    "local_ranks": "ranks are child processes of the kernel",
}


@dataclass(frozen=True)
class BackendCase:
    name: str
    options: Callable[[], BackendOptions | None] = lambda: None
    missing: Callable[[], str] = lambda: ""  # why it cannot run here; empty when it can
    fixtures: tuple[str, ...] = ()  # pytest fixtures the case runs under (e.g. its platform)
    lacks: dict[str, str] = field(default_factory=dict)  # capability -> why not, by design

    def __post_init__(self) -> None:
        unknown = set(self.lacks) - set(CAPABILITIES)
        assert not unknown, f"{self.name}: unknown capabilities {sorted(unknown)}"


def mpi_missing() -> str:
    if shutil.which("mpirun") is None:
        return "mpirun is not installed (apt-get install openmpi-bin)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install mpi4py)"
    return ""


def sagemaker_missing() -> str:
    for module in ("boto3", "moto"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[sagemaker,test]')"
    return ""


def sagemaker_options() -> BackendOptions:
    from jupyter_distributed.backends.sagemaker.options import SageMakerOptions

    return SageMakerOptions()  # role, bucket, image, endpoint: from the environment


CASES = [
    BackendCase("local"),
    BackendCase("mpi", options=MpiOptions, missing=mpi_missing),
    BackendCase(
        "sagemaker",
        options=sagemaker_options,
        missing=sagemaker_missing,
        fixtures=("configured",),  # moto's server on 127.0.0.1 and the local training platform
        lacks={
            "persistent": "each cell is its own training job; nothing lives between cells",
            "targets": "--targets is refused: a job runs the cell on all of its ranks",
            "timeout": "--timeout is refused: use --max-run (MaxRuntimeInSeconds)",
            "local_ranks": "a job's ranks run on the platform's hosts, not under the kernel",
        },
    ),
]
