"""FSDP on gloo ranks, as the launch line's ``shard_model`` sets it up: its collectives leave no
buffer of theirs live once they return, so a layout's peak memory is the same in every run (the
advisor predicts that one moment), and training gives what FSDP's own collectives give.

gloo frees a collective's buffers when the last of the caller and its worker thread drops the
work; with FSDP2's own collectives that was the worker thread in some runs, after the rank had
gone on, and the same layout's measured peak moved by a unit from run to run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from . import glooranks

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.fsdp")

STEPS = 40  # forwards, each gathering 4 units; the last one's buffers were late in ~1 in 3
MARK = 99_991  # bytes of the tensor allocated after each forward (no other has this size)


def _model() -> Any:
    torch.manual_seed(0)
    lin = torch.nn.Linear
    blocks = [torch.nn.Sequential(lin(32, 128), torch.nn.GELU(), lin(128, 32)) for _ in range(3)]
    return torch.nn.Sequential(*blocks, lin(32, 64))


def _rank(rank: int, port: int, out: str) -> None:
    """One rank, in its own process: its findings in ``out``/<rank>.json."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.profiler import ProfilerActivity, profile

    from jupyter_distributed.worker.measure import allocations, every_thread_counted
    from jupyter_distributed.worker.torch_helpers import shard_model

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    x = torch.randn(4, 32, generator=torch.Generator().manual_seed(rank))
    ours, theirs = shard_model(_model()), _model()
    for child in theirs.children():  # FSDP2 with its own collectives, for the same step
        fully_shard(child)
    fully_shard(theirs)
    _train(theirs, x)
    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        _train(ours, x)
        with torch.no_grad():
            for i in range(STEPS):
                ours(x)
                torch.empty(MARK + i, dtype=torch.uint8)  # the allocator's count right after
    events = allocations(prof)
    copies = sum(1 for _, size, _, _, ops in events if size > 0 and _in(ops, "c10d::_reduce_sc"))
    markers = sorted(
        (size, total) for _, size, total, _, _ in events if MARK <= size < MARK + STEPS
    )
    same = all(
        torch.equal(a.full_tensor(), b.full_tensor())
        for a, b in zip(ours.parameters(), theirs.parameters(), strict=True)
    )
    found = [rank, copies, [total - size for size, total in markers], same]
    Path(out, f"{rank}.json").write_text(json.dumps(found))
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(
        0
    )  # as a rank leaves (worker/leave.py): no teardown of gloo's and the profiler's threads


def _train(model: Any, x: Any) -> None:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def _in(ops: list[str], prefix: str) -> bool:
    return any(o.startswith(prefix) for o in ops)


@pytest.fixture(scope="module")
def ranks() -> list[tuple[int, int, list[int], bool]]:
    return [tuple(r) for r in glooranks.run(_rank)]


def test_the_reduce_scatter_does_not_copy_its_input(ranks: Any) -> None:
    """gloo's own reduce-scatter clones its input (a unit's gradients) and may free the clone
    after the rank has gone on; an in-place all-reduce of FSDP's input moves the same bytes."""
    assert [copies for _, copies, _, _ in ranks] == [0, 0]


def test_an_all_gather_frees_its_buffers_before_it_returns(ranks: Any) -> None:
    """Every forward gathers each unit and frees it after; the allocator's count right after
    each forward is the same every time, never one of gloo's buffers higher."""
    for _, _, counts, _ in ranks:
        assert len(counts) == STEPS
        assert set(counts) == {counts[0]}, sorted(set(counts))


def test_training_is_what_fsdp_s_own_collectives_give(ranks: Any) -> None:
    assert [same for _, _, _, same in ranks] == [True, True]
