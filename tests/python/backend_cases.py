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

from jupyter_distributed.backends.mpi.options import MpiOptions
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
    # The contract tests run by default; the others are slow for this case (pytest --slow).
    # None: all of them.
    reduced: frozenset[str] | None = None
    relays: str = "auto"  # Distributed.relays: "always" runs the contract through node relays

    @property
    def id(self) -> str:
        """The case's test id: its backend, with ``-relays`` where relays are forced on."""
        return self.name + ("-relays" if self.relays == "always" else "")

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


def slurm_missing() -> str:
    from .engines.slurm import missing

    return missing()


def ray_missing() -> str:
    from .engines.ray import missing

    return missing()


CASES = [
    BackendCase("local"),
    BackendCase("local", relays="always"),  # one relay process per node, beside the ranks
    BackendCase("mpi", options=MpiOptions, missing=mpi_missing),
    BackendCase("mpi", options=MpiOptions, missing=mpi_missing, relays="always"),
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
    BackendCase(
        "slurm",
        missing=slurm_missing,
        fixtures=("in_slurm",),  # a Slurm cluster on loopback, in its own network namespace
        lacks={"local_ranks": "ranks are tasks of slurmd, not children of the kernel"},
    ),
    BackendCase(
        "ray",
        missing=ray_missing,
        fixtures=("in_ray",),  # a Ray head on loopback, in its own network namespace
        lacks={"local_ranks": "ranks are children of Ray actors, not of the kernel"},
        # Each test starts a placement group and an actor per rank (seconds each on a 2-core
        # machine): by default the tests whose Ray-specific code differs (start, output, errors,
        # interrupt and stop through the actors); variables, push/pull, --targets and --timeout
        # share the channel code with local and slurm (pytest --slow runs them on Ray too). A
        # dead rank and a dead kernel are test_ray_backend.py's.
        reduced=frozenset(
            {
                "test_output_is_tagged_per_rank_and_recorded",
                "test_error_reports_the_root_cause_first",
                "test_interrupt_stops_the_cell",
            }
        ),
    ),
]
