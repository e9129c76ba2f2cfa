"""The advisor's memory per rank for pipeline layouts against 2 real gloo ranks running the
``pipeline`` helper (GPipe and 1F1B) with several microbatches: the last stage keeps every
microbatch's output until the schedule merges them after the last backward, so with large
outputs (logits) the prediction that counted one output was 23-53 % under the measured peak."""

from __future__ import annotations

import os
from typing import Any

import pytest

from . import glooranks
from .glooranks import found

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.pipelining")
pytestmark = pytest.mark.timeout(240)

SEQ = 32  # tokens a sample: each microbatch's output is 1 × 32 × 400 floats (51,200 B)


def _head() -> Any:  # a small body and a wide head: the last stage's outputs dominate
    lin = torch.nn.Linear
    return torch.nn.Sequential(lin(16, 32), torch.nn.ReLU(), lin(32, 32), torch.nn.ReLU(),
                               lin(32, 400))  # fmt: skip


LAYOUTS = [(8, False), (4, False), (8, True)]  # (microbatches, 1F1B) of 1 sample each


def _rank(rank: int, port: int, out: str) -> None:
    import gc

    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    from jupyter_distributed.layout import Layout, ModelParallel, Pipeline, Strategy
    from jupyter_distributed.modelshapes import loss_of, sample_input
    from jupyter_distributed.worker.measure import (
        _default_step,
        every_thread_counted,
        make_optimizer,
        peak_live_bytes,
    )
    from jupyter_distributed.worker.pipeline import PipelineRunner, build_mesh

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    device = torch.device("cpu")
    peaks = []
    for microbatches, one_f_one_b in LAYOUTS:
        kind = Pipeline.INTERLEAVED if one_f_one_b else Pipeline.SIMPLE
        mp = ModelParallel(partitions=2, microbatches=microbatches, pipeline=kind)
        layout = Layout(procs_per_node=2, strategy=Strategy.MODEL_PARALLEL, model_parallel=mp)
        mesh = build_mesh(layout, device)
        gc.collect()
        with (
            every_thread_counted(),
            profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
        ):  # as %distributed advise --verify measures a layout (worker.measure)
            model = _head()
            x = sample_input(model, microbatches, SEQ)  # 1 sample a microbatch
            runner = PipelineRunner(model, mesh, mp, lambda o, _t: loss_of(o), device)
            opt = make_optimizer("adamw", runner.parameters())
            for _ in range(2):
                _default_step(runner, opt, x)
        peaks.append(peak_live_bytes(prof))
        del model, x, runner, opt
        dist.barrier()
    dist.destroy_process_group()
    found(out, rank, peaks)


@pytest.fixture(scope="module")
def measured() -> list[int]:
    """The larger rank's peak of each layout."""
    a, b = glooranks.run(_rank)
    return [max(int(x), int(y)) for x, y in zip(a, b, strict=True)]


@pytest.mark.parametrize("i", range(len(LAYOUTS)))
def test_pipeline_memory_with_many_microbatches_is_not_under_predicted(
    measured: list[int], i: int
) -> None:
    from jupyter_distributed.advise.memory import layout_memory, trace

    microbatches, one_f_one_b = LAYOUTS[i]
    stages = trace(_head, 1, SEQ, "adamw", 2)
    predicted = layout_memory(
        stages, (), 0, "model-parallel", 1, microbatches, one_f_one_b, 0.0
    ).total
    # the goal: within ±5 %, never under by more than 3 % (before: -53, -26, -23 %)
    assert -0.03 <= predicted / measured[i] - 1 <= 0.05, (LAYOUTS[i], predicted, measured[i])
