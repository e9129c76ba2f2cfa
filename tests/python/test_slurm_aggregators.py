"""Aggregators on a real Slurm cluster (four slurmd nodes on loopback, see engines/): with
``Distributed.relays = "tree"``, a third step of the ranks' job, one aggregator task on the
first node of each group of relays, listening on TCP (CurveZMQ) on that node's address; the
others dial aggregator 0 (the root, over TCP with CurveZMQ too) and the kernel holds one
connection, the root's; a cell reaches every rank through both levels, a
killed aggregator names the nodes behind it, and the stop leaves no task."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.session import Session
from jupyter_distributed.textviews import status

from .core_helpers import session_in
from .engines import slurm
from .engines.fixtures import kernel_in, slurm_of
from .test_backend_contract import wait_gone
from .test_relays import killed_mid_cell
from .test_slurm_relays import _node_of
from .test_slurm_relays import _run as run_on

pytestmark = pytest.mark.slurm

NODES = 4  # 4 nodes of 2 ranks: 2 aggregators of 2 relays each


@pytest.fixture(scope="module")
def four_nodes() -> Iterator[slurm.SlurmCluster]:
    yield from slurm_of(NODES)


@pytest.fixture
def session(
    four_nodes: slurm.SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Session]:
    for _ in kernel_in(four_nodes, monkeypatch):
        yield from session_in(tmp_path)


def _run(session: Session, code: str, out: io.StringIO, **kw: Any) -> Any:
    return run_on(session, code, out, nodes=NODES, relays="tree", **kw)


def test_a_cell_reaches_every_rank_through_aggregators_on_the_first_node_of_each_group(
    four_nodes: slurm.SlurmCluster, session: Session
) -> None:
    out = io.StringIO()
    outcome = _run(session, "print(f'hello from {rank}')\nrank", out)
    assert outcome.values == {r: str(r) for r in range(2 * NODES)}
    for r in range(2 * NODES):
        assert f"hello from {r}" in out.getvalue()
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 1  # the root aggregator (relays alone: 4)
    assert "kernel connections to the ranks: 1 (through 2 aggregator(s) above 4 node relays)" in (
        status(session)
    )
    aggregators = four_nodes.relay_pids("aggregator")
    assert sorted(map(_node_of, aggregators)) == ["node1", "node3"]  # each group's first node
    assert len(four_nodes.relay_pids()) == NODES
    assert _run(session, "rank * 10", out, targets=(1, 6)).values == {1: "10", 6: "60"}
    session.stop()
    assert wait_gone(four_nodes.task_pids(), within=10) == set()


@pytest.mark.parametrize(
    ("host", "summary"),
    [
        (  # the root: every node is cut off from the kernel
            "node1",
            "aggregator 0 (the root, through which every aggregator reaches the kernel) on host "
            "node1 died (killed by signal 9): its nodes 0-3 are gone, with their ranks 0-7",
        ),
        (  # below the root: its own nodes only
            "node3",
            "aggregator 1 on host node3 died (killed by signal 9): its nodes 2-3 are gone, "
            "with their ranks 4-7",
        ),
    ],
)
def test_an_aggregator_killed_mid_cell_names_the_nodes_cut_off(
    four_nodes: slurm.SlurmCluster, session: Session, tmp_path: Path, host: str, summary: str
) -> None:
    out = io.StringIO()
    _run(session, "pass", out)

    def on_host() -> int:
        (pid,) = [p for p in four_nodes.relay_pids("aggregator") if _node_of(p) == host]
        return pid

    root = killed_mid_cell(lambda code: _run(session, code, out), tmp_path / "started", on_host)
    assert root.kind == "relay"
    assert root.summary == summary
    session.stop()
    assert wait_gone(four_nodes.task_pids(), within=10) == set()
