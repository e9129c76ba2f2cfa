"""The torch process group of a rank and the helpers a cell uses with it (DDP, FSDP2).

Imported only when a strategy needs torch; torch stays optional for users.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..spec import Layout, Strategy
from .errors import StrategyError


def import_torch(strategy: str) -> Any:
    try:
        import torch
        import torch.distributed
    except ImportError:
        raise StrategyError(
            f"--strategy {strategy} needs PyTorch in the kernel's Python: pip install torch"
        ) from None
    return torch


def init_process_group(layout: Layout, namespace: dict[str, Any]) -> Any:
    """gloo on CPU, nccl when this rank has its own GPU; returns the rank's device."""
    torch = import_torch(layout.strategy.value)
    dist = torch.distributed
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
            device_id=device if use_cuda else None,
        )
    namespace.update(torch=torch, dist=dist, device=device)
    if layout.strategy is Strategy.DDP:
        namespace["wrap_ddp"] = wrap_ddp
    elif layout.strategy is Strategy.FSDP:
        namespace["shard_model"] = shard_model
    return device


def _device() -> Any:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def wrap_ddp(model: Any, **kwargs: Any) -> Any:
    """Move ``model`` to this rank's device and wrap it in DistributedDataParallel."""
    import torch

    device = _device()
    model = model.to(device)
    if device.type == "cuda":
        kwargs.setdefault("device_ids", [device.index])
    return torch.nn.parallel.DistributedDataParallel(model, **kwargs)


def fsdp_support() -> str | None:
    """``None`` when FSDP2's ``fully_shard`` can run here, else why not (one line)."""
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        import torch

        return (
            f"torch {torch.__version__} has no FSDP2 fully_shard; install torch>=2.6 "
            "or use --strategy ddp"
        )
    return None


def shard_model(model: Any, *, per_layer: bool = True, **kwargs: Any) -> Any:
    """FSDP2: shard each child module with parameters (when ``per_layer``), then the root.

    Returns the same module, now holding DTensor shards; optimisers are built after this.
    """
    problem = fsdp_support()
    if problem:
        raise StrategyError(problem)
    from torch.distributed.fsdp import fully_shard

    model = model.to(_device())
    if per_layer:
        for child in model.children():
            if any(True for _ in child.parameters()):
                fully_shard(child, **kwargs)
    fully_shard(model, **kwargs)
    return model


def note(message: str) -> None:
    sys.stderr.write(f"jupyter-distributed: {message}\n")
    sys.stderr.flush()
