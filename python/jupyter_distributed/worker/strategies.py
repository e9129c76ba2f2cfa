"""Prepare a rank for its parallelism strategy before the first cell runs.

Every rank's namespace gets its coordinates (``coords``, ``data_parallel_rank``,
``pipeline_stage``, ``tensor_parallel_rank``, ``role``) and ``parallel``, the layout's settings.
Per strategy:

- ``ddp``: a ready process group, ``torch``, ``dist``, ``device`` and ``wrap_ddp(model)``;
- ``fsdp``: the same with ``shard_model(model)`` (FSDP2 ``fully_shard``);
- ``model-parallel``: the same with ``mesh`` (dims ``dp``, ``pp``, ``tp``) and
  ``pipeline(sequential, loss_fn)`` that runs this rank's stage in ``--microbatches``;
- ``horovod``: ``hvd`` (real Horovod, else over MPI or gloo); ``horovod.tensorflow``'s API
  with ``--framework tensorflow``;
- ``parameter-server``: ``TF_CONFIG``, ``parameter_servers``, ``workers``, ``is_parameter_server``;
- ``multi-worker``: ``TF_CONFIG`` (workers only), ``tf`` and ``strategy``, a ready
  ``MultiWorkerMirroredStrategy``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..layout import Layout, ModelParallel, Strategy
from .errors import StrategyError

__all__ = ["StrategyError", "setup"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def setup(layout: Layout, namespace: dict[str, Any]) -> None:
    rank = int(os.environ["RANK"])
    coords = layout.coords(rank)
    mp = layout.model_parallel
    namespace.update(
        coords=coords,
        data_parallel_rank=coords.data_parallel,
        pipeline_stage=coords.pipeline_stage,
        tensor_parallel_rank=coords.tensor_parallel,
        role=coords.role.value,
        parallel=_settings(layout, mp),
    )
    if (
        sys.platform.startswith("linux")
        and os.environ.get("MASTER_ADDR") in _LOOPBACK
        and "GLOO_SOCKET_IFNAME" not in os.environ
    ):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo would resolve the host name otherwise
    _share_cpus()
    if layout.uses_tensorflow:
        # TensorFlow's C++ INFO and WARNING lines ("dataset will not be optimized") would show
        # under every cell of every rank; errors still do (--env TF_CPP_MIN_LOG_LEVEL=0: all).
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    strategy = layout.strategy
    if strategy.uses_torch:
        from .torch_helpers import init_process_group

        # FSDP2 and the pipeline import DTensor (seconds on a busy machine): before the
        # rendezvous, whose wait is bounded, not inside it
        if strategy is Strategy.FSDP:
            from .torch_helpers import fsdp_support

            problem = fsdp_support()
            if problem:
                raise StrategyError(problem)
        if strategy is Strategy.MODEL_PARALLEL:
            import torch.distributed.pipelining  # noqa: F401
        device = init_process_group(layout, namespace)
        if strategy is Strategy.MODEL_PARALLEL:
            from .pipeline import build_mesh, make_pipeline_helper

            mesh = build_mesh(layout, device)
            namespace.update(mesh=mesh, pipeline=make_pipeline_helper(layout, mesh, device))
    elif strategy is Strategy.HOROVOD:
        if layout.uses_tensorflow:
            from .horovod_tf import make_tf_hvd

            namespace["hvd"] = make_tf_hvd()
        else:
            from .horovod import make_hvd

            namespace["hvd"] = make_hvd()
    elif strategy is Strategy.PARAMETER_SERVER:
        from .param_server import setup_parameter_server

        setup_parameter_server(layout, namespace)
    elif strategy is Strategy.MULTI_WORKER:
        from .multi_worker import setup_multi_worker

        setup_multi_worker(layout, namespace)


def _share_cpus() -> None:
    """One OpenMP thread per rank where ranks share a machine, as torchrun does unless
    ``OMP_NUM_THREADS`` is set: threads of ranks that share cores otherwise spin against each
    other (50× slower steps on 2 cores; on 16 cores a rank's share, 8 threads at 2 ranks, made a
    small model's DDP step 1.8× slower than under torchrun). A rank forked with torch already
    imported (:mod:`.zygote`) sized its thread pool when OpenMP read the variable, before it was
    set: the pool is resized too (15× slower DDP steps otherwise)."""
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if local_ranks > 1 and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = "1"
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "set_num_threads"):
            torch.set_num_threads(1)


def _settings(layout: Layout, mp: ModelParallel | None) -> dict[str, Any]:
    """The layout as plain values: what a cell needs to size its work."""
    out: dict[str, Any] = {
        "strategy": layout.strategy.value,
        "data_parallel_degree": layout.data_parallel_degree,
    }
    if mp is not None:
        out.update(
            partitions=mp.partitions,
            microbatches=mp.microbatches,
            pipeline=mp.pipeline.value,
            placement=mp.placement.value,
            optimize=mp.optimize.value,
            tensor_parallel=mp.tensor_parallel,
        )
    if layout.strategy is Strategy.PARAMETER_SERVER:
        out["parameter_servers"] = layout.parameter_servers
    return out
