"""``mpi``: ranks under a real ``mpirun``, on this machine or the hosts given."""

from __future__ import annotations

from ..plugin import Plugin
from .options import DistributedMPI, MpiOptions

PLUGIN = Plugin(
    name="mpi",
    title="MPI (--backend mpi; --mpi-options also for sagemaker)",
    backend="jupyter_distributed.backends.mpi.backend:MpiBackend",
    options=MpiOptions,
    settings=DistributedMPI,
)
