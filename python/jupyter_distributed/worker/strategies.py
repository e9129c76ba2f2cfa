"""Prepare a rank for its parallelism strategy before the first cell runs."""

from __future__ import annotations

import os
from typing import Any

from ..spec import Layout, Strategy


class StrategyError(Exception):
    """The strategy cannot be set up on this rank; the message says what to change."""


def setup(layout: Layout, namespace: dict[str, Any]) -> None:
    """Expose the rank's coordinates; initialise torch.distributed for torch strategies."""
    rank = int(os.environ["RANK"])
    coords = layout.coords(rank)
    namespace.update(
        coords=coords,
        data_parallel_rank=coords.data_parallel,
        pipeline_stage=coords.pipeline_stage,
        tensor_parallel_rank=coords.tensor_parallel,
        role=coords.role.value,
    )
    if layout.strategy.uses_torch:
        _init_torch(layout, namespace)


def _init_torch(layout: Layout, namespace: dict[str, Any]) -> None:
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        raise StrategyError(
            f"--strategy {layout.strategy.value} needs PyTorch in the kernel's Python: "
            "pip install torch"
        ) from None
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() > local_rank
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo",
            init_method="env://",
            rank=int(os.environ["RANK"]),
            world_size=layout.world_size,
        )
    namespace.update(torch=torch, dist=dist, device=device)
    if layout.strategy is Strategy.MODEL_PARALLEL:
        pass  # the device mesh is built lazily by the model-parallel helpers
