"""Node relays on a real Ray head (``Distributed.relays = "always"``): one actor per node beside
the node's ranks and never one of them; the kernel holds one connection per node, and a relay
killed mid-cell is named as its dead node. On ``"auto"`` (the default), a relay actor per Ray
node once the ranks span several (a second Ray node joins the head for that test)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.mpi.backend import descendants
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import status

from .core_helpers import session_in
from .engines.ray import RayHead
from .test_backend_contract import wait_gone
from .test_relays import kill_once_started, killed_mid_cell, started_cell

pytestmark = pytest.mark.ray


@pytest.fixture
def session(in_ray: RayHead, tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _run(session: Session, code: str, out: io.StringIO, relays: str = "always") -> Any:
    nodes = 1 if relays == "auto" else 2  # (auto: the Ray nodes decide)
    spec = Spec(layout=Layout(nodes=nodes, procs_per_node=3 - nodes), backend="ray", relays=relays)
    return session.run_cell(spec, code, {}, view=CellView(out=out, err=out))


def _relays(head: RayHead, *more: int, module: str = "relay") -> dict[int, int]:
    """The node relays the Ray nodes' workers run (the head's, and those below the processes
    ``more``), by node (their command line's last word); ``module`` "aggregator": the
    aggregators, by number."""
    out = {}
    for pid in {p for root in (head.proc.pid, *more) for p in descendants(root)}:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", f"jupyter_distributed.cluster.{module}".encode()]:
            out[int(argv[3])] = pid
    return out


def test_each_node_reaches_the_kernel_through_its_relay_actor(
    in_ray: RayHead, session: Session, tmp_path: Path
) -> None:
    out = io.StringIO()
    assert _run(session, "print('hi', rank)\nrank", out).values == {0: "0", 1: "1"}
    assert "hi 0" in out.getvalue() and "hi 1" in out.getvalue()
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 2  # (without relays: two per rank, 4)
    assert "kernel connections to the ranks: 2 (through 2 node relay(s))" in status(session)
    relays = _relays(in_ray)
    assert sorted(relays) == [0, 1]
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: relays[1])
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), out)
    killer.join()
    root = info.value.root
    assert root.kind == "relay"
    assert root.summary.startswith("relay of node 1 on host ")
    assert root.summary.endswith("died (killed by signal 9): its rank 1 is gone")
    assert _run(session, "rank", out).values == {0: "0", 1: "1"}  # a new cluster
    pids = set(_relays(in_ray).values())
    assert len(pids) == 2
    session.stop()  # (the relay actors end with the ranks')
    assert wait_gone(pids, within=30) == set()


def test_auto_starts_a_relay_actor_per_ray_node_once_the_ranks_span_several(
    in_ray: RayHead, session: Session, tmp_path: Path
) -> None:
    out = io.StringIO()
    assert _run(session, "rank", out, relays="auto").values == {0: "0", 1: "1"}
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 4  # (one Ray node: no relays, two per rank)
    assert _relays(in_ray) == {}
    session.stop()
    with in_ray.second_node() as second:  # (the ranks spread: one on each Ray node)
        assert _run(session, "rank", out, relays="auto").values == {0: "0", 1: "1"}
        (live,) = session.live.values()
        assert live.cluster.peer_count() == 2
        assert "kernel connections to the ranks: 2 (through 2 node relay(s))" in status(session)
        relays = _relays(in_ray, second.pid)
        assert sorted(relays) == [0, 1]
        marker = tmp_path / "started"
        killer = kill_once_started(marker, lambda: relays[1])
        with pytest.raises(RunFailed) as info:
            _run(session, started_cell(marker), out, relays="auto")
        killer.join()
        assert info.value.root.kind == "relay"
        assert info.value.root.summary.endswith("died (killed by signal 9): its rank 1 is gone")
        session.stop()
        assert wait_gone(set(relays.values()), within=30) == set()


def test_a_tree_goes_through_an_aggregator_actor_and_its_death_names_its_nodes(
    in_ray: RayHead, session: Session, tmp_path: Path
) -> None:
    """``Distributed.relays = "tree"``: one aggregator actor above the two nodes' relays, in
    the bundle of node 0's first rank, listening on TCP (CurveZMQ) on that Ray node's address."""
    out = io.StringIO()
    assert _run(session, "print('hi', rank)\nrank", out, relays="tree").values == {0: "0", 1: "1"}
    assert "hi 0" in out.getvalue() and "hi 1" in out.getvalue()
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 1  # (the two relays alone: 2)
    assert "(through 1 aggregator(s) above 2 node relays)" in status(session)
    (aggregator,) = _relays(in_ray, module="aggregator").values()
    assert sorted(_relays(in_ray)) == [0, 1]
    run = lambda code: _run(session, code, out, relays="tree")  # noqa: E731
    root = killed_mid_cell(run, tmp_path / "started", lambda: aggregator)
    assert root.kind == "relay"
    assert root.summary.startswith("aggregator 0 on host ")
    assert root.summary.endswith(
        "died (killed by signal 9): its nodes 0-1 are gone, with their ranks 0-1"
    )
    session.stop()
