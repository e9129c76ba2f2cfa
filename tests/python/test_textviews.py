"""``%distributed status`` at many ranks: one line per node, the odd ranks named."""

from __future__ import annotations

import time

from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.line_commands import line_parser
from jupyter_distributed.textviews import node_lines, rank_lines


def _ranks(nodes: int, per_node: int) -> list[RankInfo]:
    layout = Layout(nodes=nodes, procs_per_node=per_node)
    now = time.time()
    return [
        RankInfo(r, f"host-{r // per_node}", 1000 + r, "idle", layout.coords(r), now)
        for r in range(layout.world_size)
    ]


def test_status_above_many_ranks_is_one_line_per_node_with_the_odd_ranks_named() -> None:
    ranks = _ranks(nodes=3, per_node=40)
    ranks[45].state = "failed"
    ranks[46].state = "running"
    lines = node_lines(ranks)
    assert len(lines) == 1 + 3 + 2  # the heading, a line per node, the two odd ranks
    assert "0  host-0" in lines[1] and "0-39" in lines[1] and "40 idle" in lines[1]
    assert "40-79" in lines[2] and "38 idle · 1 failed · 1 running" in lines[2]
    assert lines[3].strip() == "rank 45: failed" and lines[4].strip() == "rank 46: running"
    assert "80-119" in lines[5]
    assert len(rank_lines(ranks)) == 1 + 120  # --ranks: every rank, as below 64 ranks


def test_status_takes_ranks_flag() -> None:
    assert line_parser().parse_args(["status", "--ranks"]).ranks is True
    assert line_parser().parse_args(["status"]).ranks is False
