"""A relay's work per rank per cell (issue 26): a cell's ``dst`` read once, not per cell; its
messages sent and taken frame by frame as pyzmq's multipart calls would; a held end's fields
copied out only where it does not go as part of a range."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster import fanin
from jupyter_distributed.cluster.hopframes import send, take
from jupyter_distributed.cluster.relayalike import Alike
from jupyter_distributed.protocol.receivers import Receivers
from jupyter_distributed.protocol.signing import cell_name

NODE = range(125, 250)  # node 1 of 80 nodes of 125 ranks
DST = ["c0-9999"]  # a cell for every rank, as the kernel signs it once


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each ``Receivers`` made (a ``dst`` read against names)."""
    made: list[object] = []
    real = Receivers.__init__

    def counted(self: Receivers, dst: object) -> None:
        made.append(dst)
        real(self, dst)

    monkeypatch.setattr(Receivers, "__init__", counted)
    return made


def test_a_relay_reads_a_cells_dst_once_not_once_per_cell(reads: list[object]) -> None:
    reducer, alike = fanin.Reducer(NODE, accepted=lambda src: 0), Alike(NODE)
    for run in range(3):
        header = {"type": "execute", "run_id": f"run-{run}", "dst": DST}
        reducer.sent(header)
        alike.sent(header)
    assert len(reads) == 2  # (one each; on main: one each per cell, 125 look-ups each)
    for run in range(3):  # ... and each cell still awaits every rank of the node
        for rank in NODE:
            end = {"type": "done", "src": cell_name(rank), "seq": 1 + rank, "run_id": f"run-{run}"}
            assert reducer.hold({**end, "status": "ok", "after": 0}, 0)
        (reduced,), _ = reducer.due()
        assert reduced["ranges"] == [[125, 249]] and reduced["done"] == 125
    other = {"type": "execute", "run_id": "run-9", "dst": [cell_name(r) for r in (3, 130, 131)]}
    reducer.sent(other)
    for rank in (130, 131):
        end = {"type": "done", "src": cell_name(rank), "seq": 900 + rank, "run_id": "run-9"}
        assert reducer.hold({**end, "status": "ok", "after": 0}, 0)
    (reduced,), _ = reducer.due()  # (a cell for two of its ranks: due once those two ended)
    assert reduced["ranges"] == [[130, 131]] and reduced["of"] == 2


def test_an_end_that_is_not_plain_goes_with_its_fields_and_nothing_of_its_envelope() -> None:
    reducer = fanin.Reducer(NODE, accepted=lambda src: 5)
    reducer.sent({"type": "execute", "run_id": "r", "dst": DST})
    seq = itertools.count(1000)
    for rank in NODE:
        extra: dict[str, Any] = {"value": "42"} if rank == 200 else {}
        end = {"type": "done", "src": cell_name(rank), "dst": "k", "seq": next(seq), "v": 2}
        assert reducer.hold({**end, "run_id": "r", "status": "ok", "after": 5, **extra}, 0)
    (reduced,), _ = reducer.due()
    assert reduced["ranges"] == [[125, 199], [201, 249]]
    assert reduced["each"] == [
        [200, 1075, 5, {"type": "done", "run_id": "r", "status": "ok", "value": "42"}]
    ]
    assert reduced["statuses"] == {"ok": 125}


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    a.bind("inproc://hopframes")
    b.connect("inproc://hopframes")
    yield a, b
    ctx.destroy(linger=0)


def test_a_hops_messages_go_and_come_whole_frame_by_frame(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    a, b = pair
    assert take(b) is None  # (nothing waiting: no exception, no wait)
    big = b"x" * 100_000
    send(a, [b"sig", zmq.Frame(b"header"), memoryview(big)])
    send(a, [b"alone"])
    assert b.poll(2000)
    first = take(b)
    assert first is not None and [f.bytes for f in first] == [b"sig", b"header", big]
    second = take(b)
    assert second is not None and [f.bytes for f in second] == [b"alone"]
    assert take(b) is None
