"""A relay holding a cell's ends sends them at once when the ranks it still awaits are dead
(their connections closed), not after the hold; an aggregator does the same when a relay it
awaits dies (issue 26)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_distributed.cluster import fanin, hopnames
from jupyter_distributed.protocol.signing import KERNEL, Signer

from .relay_helpers import KEY, NODE_RANKS, Wire
from .test_aggregators import Tree


def long_hold(hop: str) -> tuple[str, ...]:
    """The real relay's (or aggregator's) program, its hold made far longer than any wait
    below: an end that reaches the kernel went up because every awaited rank was in (or
    gone), never because the hold expired."""
    return (
        sys.executable,
        "-c",
        "import sys\n"
        "from jupyter_distributed.cluster import fanin\n"
        "fanin.HOLD_S = fanin.QUIET_S = fanin.HOLD_MAX_S = 3600.0\n"
        f"from jupyter_distributed.cluster.{hop} import main\n"
        "sys.exit(main(sys.argv[1:]))",
    )


LONG_HOLD = long_hold("relay")


@pytest.fixture
def held() -> Iterator[Wire]:
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        w = Wire(Path(directory), LONG_HOLD)
        try:
            yield w
        finally:
            w.close()


def _end(wire: Wire, signers: dict[int, Signer], rank: int) -> None:
    done = {"type": "done", "run_id": "r1", "status": "ok", "after": 0}
    wire.ranks[rank].send_multipart([bytes(f) for f in signers[rank].pack(done)])


def _reduced(wire: Wire) -> tuple[str, int, int, list[int]]:
    got = wire.at_kernel(timeout=20.0)
    assert got is not None, "the relay held its ranks' ends though the rank it awaited is dead"
    header, _ = wire.signer.unpack(got[1:])
    return header["src"], header["done"], header["of"], [e[0] for e in header["each"]]


def test_the_other_ranks_ends_go_up_once_the_rank_awaited_dies(held: Wire) -> None:
    signers = held.cell_started()
    *ending, dying = NODE_RANKS
    for r in ending:
        _end(held, signers, r)
    assert held.at_kernel(timeout=0.5) is None  # held: rank 7 still runs
    held.ranks.pop(dying).close(linger=0)  # rank 7 dies mid-cell
    assert _reduced(held) == ("n1", 3, 3, ending)


def test_ends_go_up_with_the_last_living_ranks_after_one_died_first(held: Wire) -> None:
    signers = held.cell_started()
    held.ranks.pop(NODE_RANKS[0]).close(linger=0)  # rank 4 dies before any rank ended
    for r in NODE_RANKS[1:-1]:
        _end(held, signers, r)
    assert held.at_kernel(timeout=0.5) is None  # held: rank 7 still runs
    _end(held, signers, NODE_RANKS[-1])
    assert _reduced(held) == ("n1", 3, 3, list(NODE_RANKS[1:]))


@pytest.fixture
def held_tree() -> Iterator[Tree]:
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        t = Tree(Path(directory), long_hold("aggregator"))
        try:
            yield t
        finally:
            t.close()


def test_an_aggregators_held_ends_go_up_once_a_relay_it_awaits_dies(held_tree: Tree) -> None:
    """Aggregator 0 holds node 0's reduction while node 1's relay still runs; that relay dies
    mid-cell: node 0's ends reach the kernel at once, as one reduction it signs."""
    tree = held_tree
    tree.cell_started()
    reduction = {
        "type": fanin.REDUCED, "run_id": "x", "done": 2, "of": 2, "statuses": {"ok": 2},
        "errors": 0, "slowest_rank": 0, "slowest_ms": 1.0, "each": [], "ranges": [[0, 1]],
    }  # fmt: skip
    tree.relays[0].send_multipart(Signer(KEY, hopnames.relay_name(0)).pack(reduction))
    assert tree.receive(tree.kernel, 0.5) is None  # held: node 1's ranks still run
    tree.relays.pop(1).close(linger=0)  # node 1's relay dies mid-cell
    got = tree.receive(tree.kernel, 20.0)
    assert got is not None, "the aggregator held node 0's ends though node 1's relay is dead"
    header, _ = Signer(KEY, KERNEL).unpack(got[1:])
    assert (header["src"], header["done"], header["ranges"]) == ("a0-1", 2, [[0, 1]])
