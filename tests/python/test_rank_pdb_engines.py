"""pdb on a rank of the Slurm and Ray backends, through a real kernel that answers stdin: the
kernel runs as on the engine's login node (in its network namespace, with its environment),
so the ranks' prompts cross the same channel to the kernel as a real allocation's would."""

from __future__ import annotations

from pathlib import Path

import pytest

from .engines.ray import RayHead
from .engines.slurm import SlurmCluster
from .test_rank_pdb import BREAK_ON_1, _run, started_kernel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _breakpoint_on_rank_1(cell: str, store: Path) -> None:
    with started_kernel(store) as kernel:
        reply, prompts, text = _run(kernel, cell + BREAK_ON_1, ["p x", "w", "c"])
        assert reply["status"] == "ok", text
        assert prompts == ["(Pdb rank 1) "] * 3
        assert "[rank 1] 11" in text  # p x: rank 1's x, tagged with its rank
        assert "<module>()" in text  # w: the cell's frame
        assert "[rank 0] done 2" in text and "[rank 1] done 12" in text
        # post-mortem on the same live ranks
        reply, _, text = _run(kernel, cell + "v = rank\nif rank == 1:\n    1 / 0\n")
        assert reply["status"] == "error" and "ZeroDivisionError" in text
        reply, prompts, text = _run(kernel, "%distributed debug", ["p v", "q"])
        assert reply["status"] == "ok", text
        assert prompts == ["(Pdb rank 1) "] * 2 and "[rank 1] 1" in text


@pytest.mark.slurm
def test_breakpoint_on_rank_1_under_slurm(in_slurm: SlurmCluster, tmp_path: Path) -> None:
    _breakpoint_on_rank_1(
        "%%distributed --backend slurm --nodes 2 --procs-per-node 1\n", tmp_path / "h.sqlite"
    )


@pytest.mark.ray
def test_breakpoint_on_rank_1_under_ray(in_ray: RayHead, tmp_path: Path) -> None:
    _breakpoint_on_rank_1("%%distributed --backend ray -n 2\n", tmp_path / "h.sqlite")
