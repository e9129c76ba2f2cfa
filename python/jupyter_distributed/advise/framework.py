"""What DDP, FSDP2 and the pipeline schedule add to a step besides their collectives' traffic,
timed here.

A block timed alone misses the framework's work per call: FSDP2's pre- and post-forward and
backward hooks (Python, per unit), copying each unit's parameters into and out of the
all-gather's buffer, the gradient's copy into the reduce-scatter's input, and an optimizer step
whose every op dispatches through DTensor. Measured on the suite's models (2-vCPU machine, one
thread): the forward and backward of ``deep`` (16 small units) took 0.7 ms alone and 14 ms
under ``fully_shard`` with every collective a no-op; ``mlp`` 2.2 → 8.7 ms. So FSDP's compute is
timed as the ranks run it: the model sharded with ``fully_shard`` per child over a fake group of
the layout's world size (torch's ``fake`` backend: collectives return at once, the shards have
their real shapes), forward+backward and the optimizer's step; the collectives are costed apart
(:mod:`.comm`).

DDP cannot run on the fake backend (its reducer needs a collective's result), so it is timed on
a real gloo group of one rank in this process: the reducer's hooks, bucket copies and the hand-off
to gloo's worker thread per bucket (on loaded cores, each hand-off waits for the scheduler).
Measured here (load ~7, median of 15): ``mlp`` 1.7 ms plain, 4.7-5.1 ms under DDP; ``deep``
0.7 → 2.7-3.1 ms.

The pipeline helper's schedule (``torch.distributed.pipelining``) does work of its own for each
microbatch on each stage: it splits the batch, runs ``forward_one_chunk`` and
``backward_one_chunk`` (flattening, keeping the outputs for the backward, the loss), and posts
the sends and receives. Each stage is timed here as a one-stage pipeline of ``SCHEDULED``
microbatches on a one-rank gloo group (no message is sent), less that many plain
forward+backward runs of the stage: the slowest stage's excess per microbatch. Measured on the
suite's models (2 stages, microbatch 1, CPU seconds, load 5-30): ``mlp`` 0.14-0.60 ms a
microbatch, ``deep`` 0.20-0.38, ``tfm`` 0.37, against a stage's block of 0.4-1.1 ms. It was in
no part of the prediction, while the measured steps spent ~0.8 ms a slot beyond the block on a
quiet machine (1.2-1.8 ms at load 8), the rest being the messages (:meth:`.comm.Links.p2p`).

Where this process has a GPU (``timing.compute_device``), both run on it as GPU ranks do: FSDP2
puts the shards there itself (its default mesh is the GPU's), the batch follows them; DDP runs on
a one-rank NCCL group; each run is timed after ``torch.cuda.synchronize``.

Needs no default process group in this process (the notebook's kernel has none); where one is
there, or torch lacks the fake backend, nothing is timed and the advice says so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..modelshapes import loss_of, sample_input
from .timing import compute_device, device_sync, step_seconds, typical_seconds


def _free() -> bool:
    """Whether this process may make (and then destroy) the default process group."""
    import torch.distributed as dist

    return bool(dist.is_available() and not dist.is_initialized())


def ddp_seconds(
    factory: Callable[[], Any], seq: int | None, threads: int, micro: int
) -> float | None:
    """Seconds of forward+backward of ``factory()`` under DDP on a one-rank gloo group at
    ``micro`` samples; None where it cannot be timed."""
    return _ddp(factory, seq, threads, micro) if _free() else None


def pipeline_seconds(
    factory: Callable[[], Any], seq: int | None, threads: int, pp: int
) -> float | None:
    """Seconds the pipeline schedule adds per microbatch on the slowest of ``pp`` stages of
    ``factory()`` (at one sample a microbatch: the work is per call, not per sample); None
    where it cannot be timed."""
    return _pipeline(factory, seq, threads, pp) if pp > 1 and _free() else None


def fsdp_seconds(
    factory: Callable[[], Any], seq: int | None, threads: int, micro: int, world: int
) -> tuple[float, float] | None:
    """Seconds of forward+backward and of the optimizer's step of ``factory()`` sharded over
    ``world`` ranks at ``micro`` samples, collectives excluded; None where it cannot be timed."""
    return _fsdp(factory, seq, threads, micro, world) if world > 1 and _free() else None


@functools.lru_cache(maxsize=64)
def _ddp(factory: Callable[[], Any], seq: int | None, threads: int, micro: int) -> float | None:
    import torch
    import torch.distributed as dist

    device = compute_device()
    backend = "nccl" if device == "cuda" else "gloo"
    if not (dist.is_nccl_available() if backend == "nccl" else dist.is_gloo_available()):
        return None
    from torch.nn.parallel import DistributedDataParallel

    try:  # (NCCL's group may fail to start where gloo's does not)
        with _one_rank(backend, threads):
            torch.manual_seed(0)
            model = factory().to(device)
            x = _on(sample_input(model, micro, seq), device)
            # CPU seconds count gloo's worker thread too (all of this process's threads); the
            # DDP module is gone before its process group is (no reference kept here)
            run = functools.partial(_forward_backward, DistributedDataParallel(model), x)
            try:
                cpu = threads == 1 and device == "cpu"
                return typical_seconds(run, cpu=cpu, sync=device_sync(device))
            finally:
                del run
    except Exception:  # noqa: BLE001 (a model DDP cannot wrap: no framework term)
        return None


@contextmanager
def _one_rank(backend: str, threads: int) -> Iterator[None]:
    """A process group of one rank in this process, ``threads`` torch threads; both undone
    after."""
    import torch
    import torch.distributed as dist

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)  # type: ignore[attr-defined]
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        torch.set_num_threads(was)


def _on(x: Any, device: Any) -> Any:
    return x.to(device) if x is not None else x


def _forward_backward(model: Any, x: Any) -> None:
    model.zero_grad(set_to_none=True)
    loss_of(model(x)).backward()


@functools.lru_cache(maxsize=64)
def _fsdp(
    factory: Callable[[], Any], seq: int | None, threads: int, micro: int, world: int
) -> tuple[float, float] | None:
    import torch
    import torch.distributed as dist

    try:
        from torch.distributed.fsdp import fully_shard
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError:
        return None
    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        torch.manual_seed(0)
        with torch.device(compute_device()):  # built where FSDP2's mesh puts it
            model = factory()
        x = sample_input(model, micro, seq)
        for child in model.children():
            if any(True for _ in child.parameters()):
                fully_shard(child)
        fully_shard(model)
        device = next(model.parameters()).device  # FSDP2's mesh's (on a GPU: the GPU)
        x = _on(x, device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
        cpu = threads == 1 and device.type == "cpu"
        run = functools.partial(_forward_backward, model, x)
        return step_seconds(run, opt.step, cpu, device.type)
    except Exception:  # noqa: BLE001 (a model FSDP2 cannot shard: no framework term)
        return None
    finally:
        dist.destroy_process_group()
        torch.set_num_threads(was)


SCHEDULED = 4  # microbatches of the one-stage schedule timed per stage


@functools.lru_cache(maxsize=16)
def _pipeline(factory: Callable[[], Any], seq: int | None, threads: int, pp: int) -> float | None:
    import torch

    try:
        from torch.distributed import pipelining
    except ImportError:
        return None
    from ..modelshapes import cut, pieces

    device = compute_device()
    cpu, sync = threads == 1 and device == "cpu", device_sync(device)
    try:
        with _one_rank("gloo", threads):
            torch.manual_seed(0)
            with torch.device(device):
                model = factory()
            layers = list(model)
            counts = [sum(p.numel() for p in layer.parameters()) for layer in layers]
            stages = [torch.nn.Sequential(*layers[a:b]) for a, b in pieces(cut(counts, pp))]
            x = _on(sample_input(model, SCHEDULED, seq), device)
            excess = []
            for stage in stages:
                one = x[:1]  # as the one-stage schedule's input: no gradient of its own
                alone = typical_seconds(functools.partial(_forward_backward, stage, one), cpu, sync)
                pipe = pipelining.PipelineStage(stage, 0, 1, torch.device(device))
                schedule = pipelining.ScheduleGPipe(pipe, SCHEDULED, loss_fn=_loss)
                run = functools.partial(schedule.step, x, target=x, losses=[])
                excess.append(typical_seconds(run, cpu, sync) / SCHEDULED - alone)
                with torch.no_grad():
                    x = stage(x)
            return max(0.0, *excess)
    except Exception:  # noqa: BLE001 (a stage the schedule cannot run: no schedule term)
        return None


def _loss(output: Any, _target: Any) -> Any:
    return loss_of(output)
