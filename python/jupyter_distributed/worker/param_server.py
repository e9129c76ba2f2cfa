"""``--strategy parameter-server``: ranks ``0..S-1`` serve parameters, the rest are workers.

``TF_CONFIG`` is set as TensorFlow's ``ParameterServerStrategy`` expects it. Task addresses are
the hosts of this cluster, each rank its own: from MPI when the rank runs under MPI, from Ray
(``JD_RANK_HOSTS``, set by the Ray backend), from the step's node list under Slurm, else
``MASTER_ADDR`` for all (the local backend). Ports follow ``MASTER_PORT``: task ``r`` listens on
``MASTER_PORT + 1 + r``.

With ``--framework tensorflow`` each rank also starts its ``tf.distribute.Server`` here, before
the first cell, and keeps it serving; ``TF_CONFIG`` then names the kernel as ``chief`` (the
coordinator, on port ``MASTER_PORT + 1 + world size``). All ranks on one machine: every
address is loopback. On several hosts the servers start only with the explicit opt-in
(``Distributed.tensorflow_across_hosts``, which sets ``JD_TF_ACROSS_HOSTS``): TensorFlow's
servers speak unauthenticated gRPC that runs any operation sent to them.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from ..layout import TF_ACROSS_HOSTS_ENV, TF_CHIEF_HOST_ENV, Layout, Role
from .errors import StrategyError
from .horovod import under_mpi
from .slurm import node_addresses

RANK_HOSTS_ENV = "JD_RANK_HOSTS"  # each rank's host, comma-separated (set by the Ray backend)
LOOPBACK = "127.0.0.1"

_servers: list[Any] = []  # this rank's tf.distribute.Server, kept serving across cells


def rank_hosts(layout: Layout) -> list[str]:
    """The host of every rank, in rank order, as the other ranks reach it."""
    world_size = layout.world_size
    given = os.environ.get(RANK_HOSTS_ENV, "")
    if given:
        return given.split(",")
    if under_mpi():
        try:
            from mpi4py import MPI
        except ImportError:
            pass
        else:
            return list(MPI.COMM_WORLD.allgather(socket.gethostname()))
    if "SLURM_PROCID" in os.environ and layout.nodes > 1:
        nodes = node_addresses()
        if len(nodes) >= layout.nodes:  # srun places ranks in blocks of --ntasks-per-node
            return [nodes[layout.coords(r).node_rank] for r in range(world_size)]
    return [os.environ.get("MASTER_ADDR", LOOPBACK)] * world_size


def tf_config(
    layout: Layout, rank: int, hosts: list[str], base_port: int, chief: str | None = None
) -> dict[str, Any]:
    """TensorFlow's cluster spec for this layout and the task of ``rank`` (with ``chief``, the
    coordinator's address, when the kernel coordinates)."""
    servers = layout.parameter_servers
    addresses = [f"{host}:{base_port + 1 + r}" for r, host in enumerate(hosts)]
    coords = layout.coords(rank)
    is_ps = coords.role is Role.PARAMETER_SERVER
    cluster = {"ps": addresses[:servers], "worker": addresses[servers:]}
    if chief is not None:
        cluster["chief"] = [chief]
    return {
        "cluster": cluster,
        "task": {"type": "ps" if is_ps else "worker", "index": rank if is_ps else rank - servers},
    }


def tensorflow_hosts(hosts: list[str]) -> tuple[list[str], str]:
    """The task hosts and the chief's host for TensorFlow's servers: loopback on one machine;
    on several hosts only with the opt-in, refused in one line without it."""
    if len(set(hosts)) <= 1:
        return [LOOPBACK] * len(hosts), LOOPBACK
    if os.environ.get(TF_ACROSS_HOSTS_ENV) != "1":
        raise StrategyError(
            f"--framework tensorflow: the ranks are on {len(set(hosts))} hosts and TensorFlow's "
            "servers speak unauthenticated gRPC that runs any operation sent to them; set "
            "%config Distributed.tensorflow_across_hosts = True on a trusted network to allow it"
        )
    return hosts, os.environ.get(TF_CHIEF_HOST_ENV) or socket.gethostname()


def setup_parameter_server(layout: Layout, namespace: dict[str, Any]) -> None:
    rank = int(os.environ["RANK"])
    base_port = int(os.environ.get("MASTER_PORT", "29500"))
    hosts = rank_hosts(layout)
    chief = None
    if layout.uses_tensorflow:
        hosts, chief_host = tensorflow_hosts(hosts)
        chief = f"{chief_host}:{base_port + 1 + layout.world_size}"
    config = tf_config(layout, rank, hosts, base_port, chief)
    os.environ["TF_CONFIG"] = json.dumps(config)
    namespace.update(
        parameter_servers=list(range(layout.parameter_servers)),
        workers=list(range(layout.parameter_servers, layout.world_size)),
        is_parameter_server=layout.coords(rank).role is Role.PARAMETER_SERVER,
    )
    if layout.uses_tensorflow:
        namespace["tf_cluster"] = config["cluster"]  # what the kernel's coordinator connects to
        namespace["tf_server"] = start_server(config)


def start_server(config: dict[str, Any]) -> Any:
    """This rank's ``tf.distribute.Server`` for its task, started and kept serving."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # no start-up banner on every rank
    try:
        import tensorflow as tf
    except ImportError:
        raise StrategyError(
            "--framework tensorflow: TensorFlow is not installed on the ranks; "
            "pip install tensorflow (or tensorflow-cpu)"
        ) from None
    task = config["task"]
    server = tf.distribute.Server(
        tf.train.ClusterSpec(config["cluster"]),
        job_name=task["type"],
        task_index=task["index"],
        protocol="grpc",
        start=True,
    )
    _servers.append(server)
    return server
