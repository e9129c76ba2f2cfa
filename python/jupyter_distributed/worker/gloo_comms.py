"""FSDP2's collectives on CPU tensors (gloo), with their buffers freed before the call returns.

gloo runs a collective on its own worker thread, and the work's buffers are freed when the last
of the caller and that thread drops the work. After a collective the caller waited for at once,
that is usually the worker thread, which on busy cores may run only after the rank has gone on:
the same layout's peak memory then moved by a unit's buffers from run to run (measured on 4
gloo ranks, ``benchmarks/RESULTS.md``). Here:

- the reduce-scatter is an in-place ``all_reduce`` of FSDP's input (which FSDP does not read
  again) and a copy of this rank's chunk: gloo's own reduce-scatter clones the input and
  all-reduces the clone, so the traffic is the same and the clone, freed late or not, is gone;
- the all-gather waits, after the call, until gloo's worker thread has dropped the work (the
  work holds the input and output tensors, so their use counts fall back when it is freed).

Only CPU tensors take this path; on a GPU (NCCL) FSDP's own collectives run unchanged.
"""

from __future__ import annotations

import time
from typing import Any

# how long the all-gather waits for gloo's thread before it stops waiting for good: a torch
# whose work holds its tensors longer must not slow every call
RELEASE_LIMIT_S = 0.05


def install(module: Any) -> bool:
    """Give each FSDP2 unit in ``module`` these collectives; False where this torch cannot."""
    try:
        from torch.distributed.fsdp import FSDPModule
        from torch.distributed.fsdp._fully_shard._fsdp_collectives import (
            DefaultAllGather,
            DefaultReduceScatter,
        )
    except ImportError:
        return False
    if not hasattr(FSDPModule, "set_custom_reduce_scatter"):
        return False
    gather = _all_gather_class(DefaultAllGather)()
    scatter = _reduce_scatter_class(DefaultReduceScatter)()
    for unit in module.modules():
        if isinstance(unit, FSDPModule):
            try:
                unit.set_custom_all_gather(gather)
                unit.set_custom_reduce_scatter(scatter)
            except ValueError:  # several parameter groups (per-parameter meshes): keep FSDP's
                return False
    return True


def _all_gather_class(base: type) -> type:
    class GlooAllGather(base):  # type: ignore[misc]
        waits = True

        def __call__(
            self, output_tensor: Any, input_tensor: Any, group: Any, async_op: bool = False
        ) -> Any:
            if async_op or output_tensor.device.type != "cpu" or not self.waits:
                return super().__call__(output_tensor, input_tensor, group, async_op)
            held = (input_tensor._use_count(), output_tensor._use_count())
            super().__call__(output_tensor, input_tensor, group, False)
            if not _released(input_tensor, output_tensor, held):
                type(self).waits = False
            return None

    return GlooAllGather


def _reduce_scatter_class(base: type) -> type:
    class GlooReduceScatter(base):  # type: ignore[misc]
        def __call__(
            self,
            output_tensor: Any,
            input_tensor: Any,
            group: Any,
            op: Any,
            async_op: bool = False,
        ) -> Any:
            if async_op or output_tensor.device.type != "cpu":
                return super().__call__(output_tensor, input_tensor, group, op, async_op)
            import torch.distributed as dist

            dist.all_reduce(input_tensor, op=op, group=group)
            rank, size = dist.get_rank(group), dist.get_world_size(group)
            output_tensor.copy_(input_tensor.view(size, -1)[rank])
            return None

    return GlooReduceScatter


def _released(a: Any, b: Any, held: tuple[int, int]) -> bool:
    """Wait (yielding the core) until gloo's thread has dropped the work that holds ``a`` and
    ``b``; False when it has not within the limit."""
    began = None
    while a._use_count() > held[0] or b._use_count() > held[1]:
        now = time.perf_counter()
        began = began or now
        if now - began > RELEASE_LIMIT_S:
            return False
        time.sleep(0)
    return True
