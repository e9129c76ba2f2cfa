"""A second level of relays (issue 26): aggregators between the kernel and the node relays
(``Distributed.relays = "tree"`` on the local backend; above 200 nodes with relays). The kernel
holds one connection, the root aggregator's (aggregator 0, which the others dial); a cell
reaches every rank through both levels; messages for some ranks are routed by rank; a dead
aggregator is named by the nodes behind it (the root by every node), and a dead node relay
below one by its node.

The aggregator is the real one (``python -m jupyter_distributed.cluster.aggregator``): the
first test drives it with the real protocol code from this process (a kernel's ROUTER, two
DEALERs where node relays would be), the others through a Session with real rank processes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster import fanin, hopnames
from jupyter_distributed.cluster.aggregators import (
    AGGREGATOR_COMMAND,
    aggregator_addresses,
    bind_address,
    fanout,
)
from jupyter_distributed.errors import RunFailed, SpecError
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import pid_alive
from jupyter_distributed.protocol.signing import BOOTSTRAP_ENV, KERNEL, Signer, cell_name, rank_name
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import status

from .core_helpers import session_in
from .relay_helpers import KEY
from .test_relays import _relay_pids, _run, kill_once_started, started_cell

NODES, PER = 4, 2  # 4 nodes of 2 ranks: 2 aggregators of 2 node relays each
TREE: dict[str, Any] = {"n": PER, "nodes": NODES, "relays": "tree"}


def test_the_second_level_starts_above_200_nodes_with_about_their_square_root_each() -> None:
    assert [fanout(n, forced=False) for n in (1, 8, 200, 201, 1250)] == [0, 0, 0, 15, 36]
    assert [fanout(n, forced=True) for n in (1, 2, 4, 80)] == [0, 2, 2, 9]
    assert -(-1250 // fanout(1250, forced=False)) <= 40  # the kernel's peers at 10,000 ranks


def test_an_aggregator_binds_its_nodes_address_or_every_interface_where_its_name_is_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = {"node1": "10.0.0.5", "login": "127.0.1.1"}  # (Debian names itself 127.0.1.1)
    monkeypatch.setattr(socket, "gethostbyname", lambda host: names.get(host, host))
    assert bind_address("tcp://node1:7001") == "tcp://10.0.0.5:7001"
    assert bind_address("tcp://127.0.0.1:7001") == "tcp://127.0.0.1:7001"  # (a test's NodeAddr)
    assert bind_address("tcp://login:7001") == "tcp://*:7001"  # (its relays dial "login")
    assert bind_address("ipc:///tmp/x/aggregator-0") == "ipc:///tmp/x/aggregator-0"


class Tree:
    """A kernel's ROUTER, aggregator 0 (nodes 0 and 1 of 4), and a DEALER in the place of
    each of those two nodes' relays."""

    def __init__(self, directory: Path, command: tuple[str, ...] = AGGREGATOR_COMMAND) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.kernel = self.ctx.socket(zmq.ROUTER)
        self.kernel.bind(f"ipc://{directory}/ctl")
        below = aggregator_addresses(directory, NODES, 2)
        boot = {
            "address": f"ipc://{directory}/ctl",
            "key": KEY.hex(),
            "aggregators": below,
            "fanout": 2,
            "layout": Layout(nodes=NODES, procs_per_node=PER).to_json(),
        }
        env = {**os.environ, BOOTSTRAP_ENV: json.dumps(boot)}
        self.proc = subprocess.Popen((*command, "0"), env=env)
        self.relays = []
        for _ in range(2):
            sock = self.ctx.socket(zmq.DEALER)
            sock.connect(below["0"])
            self.relays.append(sock)
        self.signer = Signer(KEY, KERNEL)

    def cell_started(self) -> None:
        """Each rank's cell socket speaks first (its route is learned), then cell ``x``
        reaches both nodes' relays."""
        got = None
        for r in range(4):
            self.relays[r // 2].send_multipart(Signer(KEY, cell_name(r)).pack({"type": "x"}))
            got = self.receive(self.kernel)
            assert got is not None
        names = [cell_name(r) for r in range(4)]
        assert got is not None
        self.kernel.send_multipart(
            [got[0], *self.signer.pack_all({"type": "execute", "run_id": "x"}, names)]
        )
        for relay in self.relays:
            assert self.receive(relay) is not None

    def receive(self, sock: zmq.Socket[bytes], timeout: float = 5.0) -> list[bytes] | None:
        return sock.recv_multipart() if sock.poll(int(timeout * 1000)) else None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.ctx.destroy(linger=0)


@pytest.fixture
def tree() -> Iterator[Tree]:
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        t = Tree(Path(directory))
        try:
            yield t
        finally:
            t.close()


def test_an_aggregator_forwards_what_is_signed_unchanged_and_drops_replays(tree: Tree) -> None:
    rank0, rank2 = Signer(KEY, rank_name(0)), Signer(KEY, rank_name(2))
    node0, node1 = tree.relays
    sent = {}
    for relay, signer, rank in ((node0, rank0, 0), (node1, rank2, 2)):
        frames = [bytes(f) for f in signer.pack({"type": "x"})]
        relay.send_multipart(frames)
        got = tree.receive(tree.kernel)
        assert got is not None and got[1:] == frames, "a rank's message reaches the kernel as sent"
        sent[rank] = frames
    node0.send_multipart(sent[0])  # replayed
    outsider = [bytes(f) for f in Signer(KEY, rank_name(4)).pack({"type": "x"})]  # node 2's
    node1.send_multipart(outsider)
    forged = [b"0" * 64, *sent[2][1:]]
    node1.send_multipart(forged)
    assert tree.receive(tree.kernel, 0.5) is None  # all three dropped
    # down: one message signed for four ranks reaches each relay once, unchanged
    once = tree.signer.pack_all({"type": "y"}, [rank_name(r) for r in range(4)])
    tree.kernel.send_multipart([_aggregator_id(tree), *once])
    for relay in (node0, node1):
        assert tree.receive(relay) == [bytes(f) for f in once]
        assert tree.receive(relay, 0.2) is None
    # a message for one rank goes to its node's relay only
    (one,) = tree.signer.pack_each({"type": "z"}, [rank_name(2)])
    tree.kernel.send_multipart([_aggregator_id(tree), *one])
    assert tree.receive(node1) == [bytes(f) for f in one]
    assert tree.receive(node0, 0.2) is None


def test_its_relays_reductions_reach_the_kernel_as_one_it_signs(tree: Tree) -> None:
    """Nodes 0 and 1 end a cell in a reduction each: the kernel gets one, signed by the
    aggregator under its own counter (no rank's), their ranges one span across the two nodes;
    one speaking for node 2's rank is refused, or for a span reaching into node 2."""
    tree.cell_started()
    for relay, node in zip(tree.relays, (0, 1), strict=True):
        first = 2 * node
        reduction = {
            "type": fanin.REDUCED, "run_id": "x", "done": 2, "of": 2, "statuses": {"ok": 2},
            "errors": 0, "slowest_rank": first, "slowest_ms": 1.0 + node, "each": [],
            "ranges": [[first, first + 1]],
        }  # fmt: skip
        relay.send_multipart(Signer(KEY, hopnames.relay_name(node)).pack(reduction))
    got = tree.receive(tree.kernel)
    assert got is not None and tree.receive(tree.kernel, 0.3) is None  # one message
    header, _ = Signer(KEY, KERNEL).unpack(got[1:])
    assert header["src"] == "a0-1"  # the aggregator of nodes 0-1, its own name
    assert (header["done"], header["slowest_ms"], header["nodes"]) == (4, 2.0, ["n0", "n1"])
    layout = Layout(nodes=NODES, procs_per_node=PER)
    node_of = lambda r: layout.coords(r).node_rank if 0 <= r < 8 else None  # noqa: E731
    assert fanin.ranged(header, node_of) == [(0, 3)]  # ONE span across its two nodes
    assert "seqs" not in header  # its own counter stands for its relays' (and their ranks')
    with pytest.raises(fanin.BadReduction, match="spoke for ranks 4-4"):
        fanin.ranged({**header, "ranges": [[4, 4]]}, node_of)
    with pytest.raises(fanin.BadReduction, match="spoke for ranks 0-5"):
        fanin.ranged({**header, "ranges": [[0, 5]]}, node_of)


def test_an_aggregator_leaves_on_its_own_once_its_relays_are_gone(tree: Tree) -> None:
    for r in range(4):  # every rank behind it spoke through its node's relay
        tree.relays[r // 2].send_multipart(Signer(KEY, rank_name(r)).pack({"type": "x"}))
        assert tree.receive(tree.kernel) is not None
    tree.relays.pop(0).close(linger=0)
    sent = [bytes(f) for f in Signer(KEY, rank_name(2)).pack({"type": "x"})]
    tree.relays[0].send_multipart(sent)  # the other relay is still served...
    got = tree.receive(tree.kernel)
    assert got is not None and got[1:] == sent
    tree.relays.pop(0).close(linger=0)
    assert tree.proc.wait(30) == 0  # ...and once it is gone too, the aggregator leaves


def _aggregator_id(tree: Tree) -> bytes:
    """The aggregator's routing id at the kernel (it has forwarded a message before)."""
    frames = [bytes(f) for f in Signer(KEY, rank_name(1)).pack({"type": "x"})]
    tree.relays[0].send_multipart(frames)
    got = tree.receive(tree.kernel)
    assert got is not None
    return got[0]


# -- through a Session: real ranks, real relays and aggregators ------------------------------


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def test_a_cell_reaches_every_rank_through_two_levels(session: Session) -> None:
    values = _run(session, "rank", **TREE).values
    assert values == {r: str(r) for r in range(NODES * PER)}
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 1  # one connection: the root aggregator's
    assert (len(_relay_pids()), len(_relay_pids("aggregator"))) == (NODES, 2)
    assert "kernel connections to the ranks: 1 (through 2 aggregator(s) above 4 node relays)" in (
        status(session)
    )
    targets = (0, 7)  # one rank behind each aggregator: a message per rank, routed by rank
    values = _run(session, "rank * 10", targets=targets, **TREE).values
    assert values == {0: "0", 7: "70"}
    values = _run(session, "rank + 1", targets=(2, 3, 4), **TREE).values
    assert values == {2: "3", 3: "4", 4: "5"}


def test_the_root_aggregator_killed_mid_cell_names_every_node_cut_off(
    session: Session, tmp_path: Path
) -> None:
    _run(session, "pass", **TREE)
    marker = tmp_path / "started"
    killed: list[int] = []

    def aggregator_0() -> int:
        killed.append(min(_relay_pids("aggregator")))  # (aggregator 0 started first)
        return killed[0]

    killer = kill_once_started(marker, aggregator_0)
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), **TREE)
    killer.join()
    root = info.value.root
    assert root.kind == "relay"
    assert root.summary.startswith(
        "aggregator 0 (the root, through which every aggregator reaches the kernel) on host "
    )
    assert root.summary.endswith(
        "died (killed by signal 9): its nodes 0-3 are gone, with their ranks 0-7"
    )
    assert not pid_alive(killed[0])
    values = _run(session, "rank", **TREE).values  # a new cluster, both levels again
    assert values == {r: str(r) for r in range(NODES * PER)}


def test_an_aggregator_below_the_root_killed_mid_cell_names_the_nodes_behind_it(
    session: Session, tmp_path: Path
) -> None:
    _run(session, "pass", **TREE)
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: sorted(_relay_pids("aggregator"))[1])
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), **TREE)
    killer.join()
    root = info.value.root
    assert root.summary.startswith("aggregator 1 on host ")
    assert root.summary.endswith(
        "died (killed by signal 9): its nodes 2-3 are gone, with their ranks 4-7"
    )


def test_a_relay_killed_below_an_aggregator_names_its_node(
    session: Session, tmp_path: Path
) -> None:
    _run(session, "pass", **TREE)
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: sorted(_relay_pids())[2])  # node 2's relay
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), **TREE)
    killer.join()
    root = info.value.root
    assert root.summary.startswith("relay of node 2 on host ")
    assert root.summary.endswith("died (killed by signal 9): its ranks 4-5 are gone")


def test_a_tree_on_a_backend_without_aggregators_is_refused_in_one_line(
    session: Session,
) -> None:
    spec = Spec(layout=Layout(nodes=2, procs_per_node=2), backend="sagemaker", relays="tree")
    with pytest.raises(SpecError, match=r"the sagemaker backend starts no aggregators yet; set it"):
        session.plan(spec)
