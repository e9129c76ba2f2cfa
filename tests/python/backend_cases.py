"""The backends the contract suite runs against, and how to tell when one cannot run here.

A backend joins the suite by adding one :class:`BackendCase` to ``CASES``: a name, the spec
options it needs, and a reason to skip where its tools are missing.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from jupyter_distributed.backends.mpi_options import MpiOptions
from jupyter_distributed.spec import BackendOptions


@dataclass(frozen=True)
class BackendCase:
    name: str
    options: Callable[[], BackendOptions | None] = lambda: None
    missing: Callable[[], str] = lambda: ""  # why it cannot run here; empty when it can


def mpi_missing() -> str:
    if shutil.which("mpirun") is None:
        return "mpirun is not installed (apt-get install openmpi-bin)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install mpi4py)"
    return ""


CASES = [
    BackendCase("local"),
    BackendCase("mpi", options=MpiOptions, missing=mpi_missing),
]
