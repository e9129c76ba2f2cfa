"""``--strategy multi-worker``: TensorFlow's ``MultiWorkerMirroredStrategy`` on every rank.

Every rank is a worker of one ``TF_CONFIG`` (no parameter servers, no chief), set before the
first cell; the namespace gets ``strategy``, built once, so a cell runs Keras's ``model.fit``
under ``strategy.scope()`` unchanged on every rank. Task ``r`` listens on ``MASTER_PORT + 1 + r``
at its own host, as for ``--strategy parameter-server --framework tensorflow``: loopback on one
machine, and on several hosts only with ``Distributed.tensorflow_across_hosts``.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from ..layout import Layout
from .errors import StrategyError
from .param_server import rank_hosts, tensorflow_hosts
from .stacks import set_stage


def workers_config(rank: int, hosts: list[str], base_port: int) -> dict[str, Any]:
    """``TF_CONFIG`` for ``MultiWorkerMirroredStrategy``: every rank a worker, task ``rank``."""
    workers = [f"{host}:{base_port + 1 + r}" for r, host in enumerate(hosts)]
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}


def setup_multi_worker(layout: Layout, namespace: dict[str, Any]) -> None:
    rank = int(os.environ["RANK"])
    hosts, _chief = tensorflow_hosts(rank_hosts(layout))
    config = workers_config(rank, hosts, int(os.environ.get("MASTER_PORT", "29500")))
    os.environ["TF_CONFIG"] = json.dumps(config)
    me = config["cluster"]["worker"][rank]
    _check_free(me)
    set_stage("import tensorflow")  # 10-20 s on 2 busy cores: the start-up line says why
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise StrategyError(
            f"--strategy multi-worker needs TensorFlow in the ranks' Python ({exc}): "
            "pip install tensorflow"
        ) from None
    set_stage("MultiWorkerMirroredStrategy", f"worker {rank} at {me}, waiting for the others")
    namespace.update(tf=tf, strategy=_strategy_class(tf)())


def _check_free(address: str) -> None:
    """One line when this rank's port is taken (TensorFlow would fail on it much later and
    less clearly). TensorFlow listens on every interface, so that is where we look."""
    port = int(address.rsplit(":", 1)[1])
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC: TIME_WAIT is fine
        try:
            probe.bind(("", port))
        except OSError as exc:
            raise StrategyError(
                f"--strategy multi-worker: port {port} for worker {address} is in use "
                f"({exc.strerror}); the workers listen on MASTER_PORT + 1 + rank: "
                "choose another with --env MASTER_PORT=..."
            ) from None


def _strategy_class(tf: Any) -> type:
    """``MultiWorkerMirroredStrategy`` whose ``reduce`` takes what Keras 3's ``fit`` passes it.

    Keras 3 (3.15) reduces a whole ``(x, y)`` batch in one call and its scalar logs with
    ``axis=0``; the strategy accepts one value at a time and fails on a scalar with an axis.
    """

    class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):  # type: ignore[misc]
        def reduce(self, reduce_op: Any, value: Any, axis: Any = None) -> Any:
            def one(v: Any) -> Any:
                scalar = self.experimental_local_results(v)[0].shape.rank == 0
                return super(MultiWorkerMirroredStrategy, self).reduce(
                    reduce_op, v, None if scalar else axis
                )

            return tf.nest.map_structure(one, value)

    return MultiWorkerMirroredStrategy
