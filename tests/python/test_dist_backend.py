"""The process group's backend is decided once per node, the same on every rank: nccl only
when every local rank has its own GPU (the device count is a parameter, no CUDA mocked)."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.errors import SpecError
from jupyter_distributed.layout import Layout, Strategy
from jupyter_distributed.worker.errors import StrategyError
from jupyter_distributed.worker.torch_helpers import choose_backend


def test_one_gpu_and_two_ranks_agree_on_gloo_with_a_notice() -> None:
    # every rank of the node sees the same count, so rank 0 (which has GPU 0) and rank 1 agree
    decisions = {choose_backend("auto", gpus=1, local_ranks=2) for _rank in range(2)}
    assert len(decisions) == 1
    backend, notice = decisions.pop()
    assert backend == "gloo"
    assert notice == (
        "gloo, not nccl: 1 GPU(s) for 2 rank(s) on this node (nccl needs one per rank; "
        "--dist-backend gloo silences this)"
    )


@pytest.mark.parametrize(
    ("requested", "gpus", "ranks", "expected"),
    [
        ("auto", 0, 4, ("gloo", "")),
        ("auto", 1, 1, ("nccl", "")),
        ("auto", 8, 8, ("nccl", "")),
        ("auto", 8, 4, ("nccl", "")),
        ("gloo", 8, 8, ("gloo", "")),
        ("nccl", 2, 2, ("nccl", "")),
    ],
)
def test_backend_decision(requested: str, gpus: int, ranks: int, expected: Any) -> None:
    assert choose_backend(requested, gpus, ranks) == expected


def test_forcing_nccl_without_a_gpu_per_rank_says_what_to_change() -> None:
    with pytest.raises(StrategyError, match=r"1 GPU\(s\) for 2 rank\(s\).*--dist-backend gloo"):
        choose_backend("nccl", 1, 2)


def test_the_flag_is_checked_in_the_spec_and_shown_by_dry_run(shell: Any) -> None:
    assert Layout(1, 2, Strategy.DDP, dist_backend="gloo").dist_backend == "gloo"
    with pytest.raises(SpecError, match="--dist-backend must be one of auto, nccl, gloo"):
        Layout(1, 2, Strategy.DDP, dist_backend="mpi")
    with pytest.raises(SpecError, match="needs a torch strategy"):
        Layout(1, 2, dist_backend="gloo")
    assert Layout.from_json(Layout(1, 2, Strategy.DDP, dist_backend="gloo").to_json()) == Layout(
        1, 2, Strategy.DDP, dist_backend="gloo"
    )
    with pytest.raises(UsageError, match="--dist-backend must be one of"):
        shell.run_cell_magic("distributed", "-n 2 --strategy ddp --dist-backend mpi", "rank")


def test_dry_run_names_the_choice(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("distributed", "-n 2 --strategy ddp --dry-run", "rank")
    out = capsys.readouterr().out
    assert "process group: gloo (" in out or "process group: nccl (" in out
    shell.run_cell_magic("distributed", "-n 2 --strategy ddp --dist-backend gloo --dry-run", "rank")
    assert "process group: gloo (--dist-backend)" in capsys.readouterr().out
    shell.run_cell_magic("distributed", "-n 2 --dry-run", "rank")
    assert "process group" not in capsys.readouterr().out
