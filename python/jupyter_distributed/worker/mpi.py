"""Under ``--backend mpi``: initialise MPI through mpi4py and put ``comm`` in the namespace.

Imported only when the launcher sets ``JUPYTER_DISTRIBUTED_MPI``, so local ranks never load MPI.
"""

from __future__ import annotations

import os
from typing import Any

from ..protocol.signing import MPI_FLAG_ENV


class MpiSetupError(Exception):
    """mpi4py cannot be used on this rank; the message says what to install."""


def setup_comm(namespace: dict[str, Any]) -> None:
    if not os.environ.get(MPI_FLAG_ENV):
        return
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MpiSetupError(
            f"--backend mpi needs mpi4py in the kernel's Python ({exc}): pip install mpi4py"
        ) from None
    namespace.update(MPI=MPI, comm=MPI.COMM_WORLD)
