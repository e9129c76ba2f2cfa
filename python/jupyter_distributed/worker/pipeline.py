"""Model parallel: the dp × pp × tp device mesh and pipeline stages of a ``torch.nn.Sequential``.

The mesh is laid out as :meth:`Layout.coords` numbers ranks (tensor-parallel fastest, then
pipeline, then data parallel), so ``mesh["pp"]`` holds the ranks that share this rank's data
replica and tensor-parallel index. Stages run with ``torch.distributed.pipelining``:
``--pipeline simple`` is GPipe (all forwards, then all backwards), ``interleaved`` is 1F1B.
With ``--tensor-parallel T``, every tensor-parallel rank runs its own copy of the pipeline; shard
the stage's layers over ``mesh["tp"]`` (``torch.distributed.tensor.parallel.parallelize_module``
on ``runner.module``) before the first step to split their work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..layout import Layout, ModelParallel, Pipeline
from ..modelshapes import cut, pieces
from .errors import StrategyError
from .torch_helpers import note

MESH_DIMS = ("dp", "pp", "tp")


def build_mesh(layout: Layout, device: Any) -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    mp = layout.model_parallel or ModelParallel()
    shape = (layout.data_parallel_degree, mp.partitions, mp.tensor_parallel)
    return init_device_mesh(device.type, shape, mesh_dim_names=MESH_DIMS)


def split_sequential(model: Any, parts: int) -> list[Any]:
    """Cut ``model`` (a ``torch.nn.Sequential``) into ``parts`` consecutive pieces whose
    parameter counts are as even as the layer boundaries allow."""
    import torch

    if not isinstance(model, torch.nn.Sequential):
        raise StrategyError(
            f"pipeline stages are cut from a torch.nn.Sequential, got {type(model).__name__}; "
            "write the model as nn.Sequential(...) or build the stage module yourself"
        )
    layers = list(model)
    if len(layers) < parts:
        raise StrategyError(
            f"the model has {len(layers)} layers for {parts} pipeline stages; "
            "use fewer --partitions or more layers"
        )
    sizes = [sum(p.numel() for p in layer.parameters()) for layer in layers]
    return [torch.nn.Sequential(*layers[a:b]) for a, b in pieces(cut(sizes, parts))]


class PipelineRunner:
    """One rank's pipeline stage and its schedule; ``step()`` runs one batch in microbatches
    and averages the stage's gradients over the data-parallel replicas."""

    def __init__(
        self,
        model: Any,
        mesh: Any,
        mp: ModelParallel,
        loss_fn: Callable[[Any, Any], Any] | None,
        device: Any,
    ) -> None:
        from torch.distributed import pipelining

        pp = mesh["pp"]
        self.stage_index: int = pp.get_local_rank()
        self.num_stages: int = mp.partitions
        self.module = split_sequential(model, self.num_stages)[self.stage_index].to(device)
        self.microbatches = mp.microbatches
        self.dp_group = mesh["dp"].get_group() if mesh["dp"].size() > 1 else None
        stage = pipelining.PipelineStage(
            self.module, self.stage_index, self.num_stages, device, group=pp.get_group()
        )
        kind: Any = pipelining.ScheduleGPipe
        if mp.pipeline is Pipeline.INTERLEAVED:
            if mp.microbatches >= self.num_stages:
                kind = pipelining.Schedule1F1B
            else:
                note(
                    f"--pipeline interleaved needs --microbatches >= --partitions "
                    f"({self.num_stages}); running the simple (GPipe) schedule"
                )
        self.schedule_name = kind.__name__
        self.schedule = kind(stage, n_microbatches=mp.microbatches, loss_fn=loss_fn)

    @property
    def is_first(self) -> bool:
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        return self.stage_index == self.num_stages - 1

    def parameters(self) -> Any:
        return self.module.parameters()

    def step(self, inputs: Any = None, target: Any = None) -> Any:
        """Run one batch. The first stage needs ``inputs``, the last ``target`` (when a loss
        function was given). Returns the last stage's mean loss (or output), else None."""
        import torch

        args = (inputs,) if self.is_first else ()
        kwargs: dict[str, Any] = {}
        losses: list[Any] = []
        if self.is_last and target is not None:
            kwargs.update(target=target, losses=losses)
        out = self.schedule.step(*args, **kwargs)
        self._average_gradients()
        if losses:
            return torch.stack([loss.detach() for loss in losses]).mean()
        return out

    def _average_gradients(self) -> None:
        import torch.distributed as dist

        if self.dp_group is None:
            return
        size = dist.get_world_size(self.dp_group)
        for p in self.module.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, group=self.dp_group)
                p.grad.div_(size)


def make_pipeline_helper(layout: Layout, mesh: Any, device: Any) -> Callable[..., PipelineRunner]:
    mp = layout.model_parallel or ModelParallel()

    def pipeline(model: Any, loss_fn: Callable[[Any, Any], Any] | None = None) -> PipelineRunner:
        """This rank's stage of ``model`` (an nn.Sequential) with the --pipeline schedule and
        --microbatches of the cell; call ``.step(inputs, target)`` on every rank."""
        return PipelineRunner(model, mesh, mp, loss_fn, device)

    return pipeline
