"""Node relays on a real Slurm cluster (two slurmd nodes on loopback, see engines/): a second
step of the ranks' job, one relay task per node, beside the ranks and never one of them; the
kernel holds one connection per node, a killed relay is named as its dead node, and stopping
the cluster leaves no task and no relay directory."""

from __future__ import annotations

import io
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.slurm.options import SlurmOptions
from jupyter_distributed.cluster.nodedirs import NODE_LOCAL_DIR
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.reaper import leftover_prefix
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import status

from .core_helpers import session_in
from .engines.slurm import SlurmCluster
from .test_backend_contract import wait_gone
from .test_relays import kill_once_started, started_cell

pytestmark = pytest.mark.slurm


@pytest.fixture
def session(in_slurm: SlurmCluster, tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _run(session: Session, code: str, out: io.StringIO, nodes: int = 2, **kw: Any) -> Any:
    spec = Spec(layout=Layout(nodes=nodes, procs_per_node=2), backend="slurm", **kw)
    return session.run_cell(spec, textwrap.dedent(code), {}, view=CellView(out=out, err=out))


def _node_of(pid: int) -> str:
    """The Slurm node a task runs on (its ``SLURMD_NODENAME``)."""
    for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if item.startswith(b"SLURMD_NODENAME="):
            return item.split(b"=", 1)[1].decode()
    return ""


def _relay_on(cluster: SlurmCluster, node: str) -> int:
    """The pid of the node relay on Slurm node ``node``."""
    (pid,) = [p for p in cluster.relay_pids() if _node_of(p) == node]
    return pid


def _present() -> set[Path]:
    """This kernel's node-local relay directories now."""
    return set(Path(NODE_LOCAL_DIR).glob(f"{leftover_prefix()}relay-*"))


def _relay_directories(before: set[Path]) -> set[Path]:
    """This kernel's node-local relay directories, less those in ``before`` (other clusters'
    of earlier tests); waits up to 10 s for a stopped cluster's relays to remove theirs."""
    deadline = time.monotonic() + 10
    while (found := _present() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def test_two_nodes_reach_the_kernel_through_their_relays(
    in_slurm: SlurmCluster, session: Session
) -> None:
    out = io.StringIO()
    before = _present()
    outcome = _run(session, "print(f'hello from {rank}')\nrank", out)
    assert outcome.values == {r: str(r) for r in range(4)}
    for r in range(4):
        assert f"hello from {r}" in out.getvalue()
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 2  # (without relays: two per rank, 8)
    assert "kernel connections to the ranks: 2 (through 2 node relay(s))" in status(session)
    relays = in_slurm.relay_pids()
    assert sorted(map(_node_of, relays)) == ["node1", "node2"]  # one beside each node's ranks
    assert not relays & in_slurm.rank_pids() and len(in_slurm.rank_pids()) == 4
    assert len(_present() - before) == 2
    session.stop()
    assert wait_gone(in_slurm.task_pids(), within=10) == set()
    assert _relay_directories(before) == set()  # (each relay removed its own)


def test_relays_never_connects_every_rank_to_the_kernel(
    in_slurm: SlurmCluster, session: Session
) -> None:
    out = io.StringIO()
    assert _run(session, "rank", out, relays="never").values == {r: str(r) for r in range(4)}
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 8  # (each rank's control channel and cell socket)
    assert in_slurm.relay_pids() == set()


def test_relays_always_on_one_node(in_slurm: SlurmCluster, session: Session) -> None:
    out = io.StringIO()
    assert _run(session, "rank", out, nodes=1, relays="always").values == {0: "0", 1: "1"}
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 1
    assert len(in_slurm.relay_pids()) == 1


def test_a_relay_killed_mid_cell_names_its_node(
    in_slurm: SlurmCluster, session: Session, tmp_path: Path
) -> None:
    out = io.StringIO()
    before = _present()
    _run(session, "pass", out)
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: _relay_on(in_slurm, "node2"))
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), out)
    killer.join()
    root = info.value.root
    assert root.kind == "relay"
    assert root.summary == (
        "relay of node 1 on host node2 died (killed by signal 9): its ranks 2-3 are gone"
    )
    assert _run(session, "rank", out).values == {r: str(r) for r in range(4)}  # a new cluster
    session.stop()
    assert wait_gone(in_slurm.task_pids(), within=10) == set()
    # the killed relay could not remove its directory; the kernel did, on its own host
    assert _relay_directories(before) == set()


def test_cyclic_ranks_reach_their_own_nodes_relay_and_a_dead_relay_names_them(
    in_slurm: SlurmCluster, session: Session, tmp_path: Path
) -> None:
    """srun's ``-m cyclic`` puts ranks 0 and 2 on the first node, 1 and 3 on the second: each
    rank goes through its own node's relay, and a dead relay names that node's ranks."""
    out = io.StringIO()
    cyclic = SlurmOptions(slurm_options="-m cyclic")
    where = "import os\nprint(f'hello from {rank}')\nos.environ['SLURMD_NODENAME']"
    outcome = _run(session, where, out, options=cyclic)
    assert outcome.values == {0: "'node1'", 1: "'node2'", 2: "'node1'", 3: "'node2'"}
    for r in range(4):
        assert f"hello from {r}" in out.getvalue()
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 2  # (through the two relays)
    assert sorted(map(_node_of, in_slurm.relay_pids())) == ["node1", "node2"]
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: _relay_on(in_slurm, "node2"))
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), out, options=cyclic)
    killer.join()
    assert info.value.root.summary == (
        "relay of node 1 on host node2 died (killed by signal 9): its ranks 1,3 are gone"
    )
    session.stop()
    assert wait_gone(in_slurm.task_pids(), within=10) == set()
