"""The torch process group of a rank and the helpers a cell uses with it (DDP, FSDP2).

Imported only when a strategy needs torch; torch stays optional for users.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import Any

from ..layout import Layout, Strategy
from .errors import StrategyError

# torch's flight recorder: the last collectives of each rank, which the hang diagnosis names
FLIGHT_RECORDER_ENV = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FLIGHT_RECORDER_SIZE = "2000"


def import_torch(strategy: str) -> Any:
    try:
        import torch
        import torch.distributed
    except ImportError:
        raise StrategyError(
            f"--strategy {strategy} needs PyTorch in the kernel's Python: pip install torch"
        ) from None
    return torch


def choose_backend(requested: str, gpus: int, local_ranks: int) -> tuple[str, str]:
    """The process group's backend, the same on every rank of a node (each sees the same
    ``gpus`` and ``local_ranks``), and a one-line notice when it is not what one might expect.
    nccl only when every local rank has its own GPU: with fewer GPUs, ranks that picked nccl and
    ranks that picked gloo would never complete ``init_process_group``."""
    enough = gpus >= local_ranks and gpus > 0
    if requested == "gloo":
        return "gloo", ""
    if requested == "nccl":
        if not enough:
            raise StrategyError(
                f"--dist-backend nccl needs a GPU per local rank: {gpus} GPU(s) for "
                f"{local_ranks} rank(s) on this node; use fewer ranks or --dist-backend gloo"
            )
        return "nccl", ""
    if enough:
        return "nccl", ""
    if gpus:
        return "gloo", (
            f"gloo, not nccl: {gpus} GPU(s) for {local_ranks} rank(s) on this node "
            "(nccl needs one per rank; --dist-backend gloo silences this)"
        )
    return "gloo", ""


def enable_flight_recorder(environ: MutableMapping[str, str] | None = None) -> None:
    """Record the last collectives (read before the process group starts) unless the user
    chose a size, either name. Costs nothing noticeable (benchmarks/RESULTS.md)."""
    env = os.environ if environ is None else environ
    if not any(name in env for name in FLIGHT_RECORDER_ENV):
        env[FLIGHT_RECORDER_ENV[0]] = FLIGHT_RECORDER_SIZE


def init_process_group(layout: Layout, namespace: dict[str, Any]) -> Any:
    """The process group (:func:`choose_backend`); returns the rank's device."""
    torch = import_torch(layout.strategy.value)
    dist = torch.distributed
    local_rank = int(os.environ["LOCAL_RANK"])
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    backend, notice = choose_backend(layout.dist_backend, gpus, local_ranks)
    if notice and local_rank == 0:
        note(notice)
    use_cuda = backend == "nccl"
    if use_cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if not dist.is_initialized():
        from .stacks import set_stage

        addr = f"{os.environ.get('MASTER_ADDR', '')}:{os.environ.get('MASTER_PORT', '')}"
        set_stage("init_process_group", f"rendezvous at {addr}")
        enable_flight_recorder()
        dist.init_process_group(
            backend=backend,
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

    Returns the same module, now holding DTensor shards; optimisers are built after this. On
    CPU (gloo) its collectives free their buffers before they return (``gloo_comms``).
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
    if _device().type == "cpu":
        from .gloo_comms import install

        install(model)
    return model


def note(message: str) -> None:
    sys.stderr.write(f"jupyter-distributed: {message}\n")
    sys.stderr.flush()
