"""``--strategy parameter-server``: ranks ``0..S-1`` serve parameters, the rest are workers.

``TF_CONFIG`` is set as TensorFlow's ``ParameterServerStrategy`` expects it. Task addresses are
the hosts of this cluster: every rank's host comes from MPI when the rank runs under MPI, else
all ranks share ``MASTER_ADDR`` (the local backend). Ports follow ``MASTER_PORT``: task ``r``
listens on ``MASTER_PORT + 1 + r``.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from ..layout import Layout, Role
from .horovod import under_mpi


def rank_hosts(world_size: int) -> list[str]:
    if under_mpi():
        try:
            from mpi4py import MPI
        except ImportError:
            pass
        else:
            return list(MPI.COMM_WORLD.allgather(socket.gethostname()))
    return [os.environ.get("MASTER_ADDR", "127.0.0.1")] * world_size


def tf_config(layout: Layout, rank: int, hosts: list[str], base_port: int) -> dict[str, Any]:
    """TensorFlow's cluster spec for this layout and the task of ``rank``."""
    servers = layout.parameter_servers
    addresses = [f"{host}:{base_port + 1 + r}" for r, host in enumerate(hosts)]
    coords = layout.coords(rank)
    is_ps = coords.role is Role.PARAMETER_SERVER
    return {
        "cluster": {"ps": addresses[:servers], "worker": addresses[servers:]},
        "task": {"type": "ps" if is_ps else "worker", "index": rank if is_ps else rank - servers},
    }


def setup_parameter_server(layout: Layout, namespace: dict[str, Any]) -> None:
    rank = int(os.environ["RANK"])
    config = tf_config(
        layout, rank, rank_hosts(layout.world_size), int(os.environ.get("MASTER_PORT", "29500"))
    )
    os.environ["TF_CONFIG"] = json.dumps(config)
    namespace.update(
        parameter_servers=list(range(layout.parameter_servers)),
        workers=list(range(layout.parameter_servers, layout.world_size)),
        is_parameter_server=layout.coords(rank).role is Role.PARAMETER_SERVER,
    )
