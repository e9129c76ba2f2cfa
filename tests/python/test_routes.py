"""Who a cell goes to is worked out once per cluster and used again (issue 26), but never
after a rank's connection changed: a rank heard from on another relay, or not reached yet."""

from __future__ import annotations

from dataclasses import dataclass, field

from jupyter_distributed.cluster.cellpeers import CellPeer
from jupyter_distributed.cluster.routes import Routes, Table


@dataclass
class Conns:
    peers: dict[int, bytes] = field(default_factory=dict)
    cell_peers: dict[int, bytes | CellPeer] = field(default_factory=dict)


def test_a_route_is_kept_while_the_connections_stay_and_made_again_when_one_moves() -> None:
    conns, routes = Conns(), Routes()
    conns.peers.update({0: b"a", 1: b"a", 2: b"b", 3: b"b"})
    first = routes.of([0, 1, 2, 3], False, conns)
    assert first == ([(0, b"a"), (1, b"a"), (2, b"b"), (3, b"b")], ["r0", "r1", "r2", "r3"],
                     [b"a", b"b"], [0, 1, 2, 3])  # fmt: skip
    assert routes.of((0, 1, 2, 3), False, conns) is first  # the same ranks and connections
    conns.peers[3] = b"c"  # rank 3 heard from through another relay
    assert routes.of([0, 1, 2, 3], False, conns)[2] == [b"a", b"b", b"c"]
    del conns.peers[1]  # (not reached: skipped)
    _, names, relays, reached = routes.of([0, 1, 2, 3], False, conns)
    assert reached == [0, 2, 3] and names == ["r0", "r2", "r3"]
    assert relays == []  # (a connection each now: no relay is shared)
    assert routes.of([0, 2], False, conns)[3] == [0, 2]  # other ranks: worked out again


class Counted(Table[bytes]):
    looked = 0

    def get(self, rank: int, default: object = None) -> bytes | None:  # type: ignore[override]
        self.looked += 1
        return super().get(rank, default)  # type: ignore[arg-type]


def test_a_kernels_tables_keep_a_route_without_a_look_at_each_rank_until_one_changes() -> None:
    """The intake's tables count their changes: a route to 1,000 ranks is used again at no
    look per rank while nothing changed, and never after a change (however it was made)."""
    peers = Counted()
    conns, routes = Conns(peers=peers), Routes()
    peers.update(dict.fromkeys(range(1000), b"a"))
    ranks = tuple(range(1000))
    first = routes.of(ranks, False, conns)
    looked = peers.looked
    for _ in range(3):
        assert routes.of(ranks, False, conns) is first
    assert peers.looked == looked  # no rank looked up again
    peers[5] = b"a"  # a rank's next message on the same connection: no change
    assert routes.of(ranks, False, conns) is first and peers.looked == looked
    peers[5] = b"b"  # rank 5 heard from through another relay
    assert routes.of(ranks, False, conns)[2] == [b"a", b"b"]
    del peers[7]
    assert 7 not in routes.of(ranks, False, conns)[3]
    peers.update({7: b"a"})
    assert routes.of(ranks, False, conns)[3] == list(ranks)


def test_the_main_threads_routes_are_the_cell_sockets_and_apart() -> None:
    conns, routes = Conns(), Routes()
    conns.peers.update({0: b"a", 1: b"b"})
    conns.cell_peers.update({0: b"x", 1: b"y"})
    assert routes.of([0, 1], False, conns)[1] == ["r0", "r1"]
    peers, names, relays, _ = routes.of([0, 1], True, conns)
    assert (peers, names, relays) == ([(0, b"x"), (1, b"y")], ["c0", "c1"], [])  # one each
    assert routes.of([0, 1], False, conns)[0] == [(0, b"a"), (1, b"b")]


def test_a_message_through_relays_names_the_routes_ranks_as_a_fresh_signer_would() -> None:
    """The ranks a cell names (its ``dst``, thousands through relays) are encoded once per
    route; what the relays receive is the same message a signer encoding them anew sends."""
    from itertools import count

    from jupyter_distributed.protocol.signing import KERNEL, Signer

    conns, routes = Conns(), Routes()
    conns.cell_peers.update({r: b"n0" if r < 2 else b"n1" for r in range(4)})
    conns.peers.update(dict.fromkeys(range(3), b"n0"))
    messages = []
    for ranks, main in [([0, 1, 2, 3], True), ([0, 1, 2], False), ([0, 1, 2, 3], True),
                        ([1, 2, 3], True)]:  # fmt: skip
        _, names, _, _ = routes.of(ranks, main, conns)
        kept, fresh = Signer(b"k" * 32, KERNEL), Signer(b"k" * 32, KERNEL)
        kept._counter, fresh._counter = count(7), count(7)  # (the same counters for both)
        sent = kept.pack_all({"type": "ping"}, names, dst=routes.dst(names, main))
        assert sent == fresh.pack_all({"type": "ping"}, names)
        messages.append(bytes(sent[1]))
    assert b'"dst":["c1-3"]' in messages[3] and b'"dst":["r0-2"]' in messages[1]
