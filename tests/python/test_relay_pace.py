"""A relay of many ranks takes its ranks' ends a few at a time, not one wake-up each: after a
wake-up that only held ends it waits before it looks below again, except for a message from
above, which ends the wait at once; a small node, or a wake-up that took anything else, never
waits (issue 26, :mod:`jupyter_distributed.cluster.relaypace`). Counts, not timings: the wait
is made long here (a second, five) so that what comes during it is known to."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster import relaypace
from jupyter_distributed.cluster.relay import Relay
from jupyter_distributed.cluster.relaypace import PACE_AWAITED, RelayPace
from jupyter_distributed.cluster.relays import relay_addresses
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import KERNEL, Signer, cell_name, rank_name

KEY = b"p" * 32


class Node:
    """Node 1's real relay (its loop on a thread of the test's process, its drains below
    counted) between a kernel's ROUTER and the node's ranks (DEALERs)."""

    def __init__(self, directory: Path, per_node: int) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.kernel = self.ctx.socket(zmq.ROUTER)
        self.kernel.bind(f"ipc://{directory}/ctl")
        relays = relay_addresses(directory, 2)
        layout = Layout(nodes=2, procs_per_node=per_node)
        boot = {"address": f"ipc://{directory}/ctl", "key": KEY.hex(), "relays": relays,
                "layout": layout.to_json(), "ranges": 2}  # fmt: skip
        self.relay = Relay(boot, 1)
        self.drains: list[int] = []  # ends held by each look below that took any
        self.held, self.paused = 0, threading.Event()
        self._count(self.relay)
        self.thread = threading.Thread(target=self.relay.serve, daemon=True)
        self.thread.start()
        self.names = list(range(per_node, 2 * per_node))
        self.ranks, self.ctl, self.cells = {}, {}, {}
        for r in self.names:
            self.ranks[r] = self.ctx.socket(zmq.DEALER)
            self.ranks[r].connect(relays["1"])
            self.ctl[r], self.cells[r] = Signer(KEY, rank_name(r)), Signer(KEY, cell_name(r))
        self.signer = Signer(KEY, KERNEL)
        self.route = b""
        for r in self.names:  # (each rank speaks as itself and as its cell socket)
            for signer in (self.ctl[r], self.cells[r]):
                self.ranks[r].send_multipart([bytes(f) for f in signer.pack({"type": "x"})])
                got = self.at(self.kernel)
                self.route = got[0]

    def _count(self, relay: Relay) -> None:
        hold, below = relay._reducer.hold, relay._from_below
        pace = getattr(relay, "pace", None)  # (main has none: it never waits)

        def counted_hold(header: dict[str, Any], buffers: int) -> bool:
            took = hold(header, buffers)
            self.held += took
            return took

        def counted_below() -> None:
            before = self.held
            below()
            if self.held > before:
                self.drains.append(self.held - before)

        relay._reducer.hold = counted_hold  # type: ignore[method-assign]
        relay._from_below = counted_below  # type: ignore[method-assign]
        if pace is not None:
            pause = pace.pause

            def noted(due: float | None, slept: float) -> float:
                wait: float = pause(due, slept)
                if wait:
                    self.paused.set()
                return wait

            pace.pause = noted

    def at(self, sock: zmq.Socket[bytes], timeout: float = 5.0) -> list[bytes]:
        assert sock.poll(int(timeout * 1000)), "nothing came"
        return sock.recv_multipart()

    def down(self, fields: dict[str, Any], dst: list[str]) -> None:
        message = self.signer.pack_all(fields, dst)
        self.kernel.send_multipart([self.route, *[bytes(f) for f in message]])

    def cell(self, run_id: str) -> None:
        every = [cell_name(r) for r in range(2 * len(self.names))]
        self.down({"type": "execute", "run_id": run_id, "code": ""}, every)
        for r in self.names:
            self.at(self.ranks[r])

    def end(self, rank: int, run_id: str, status: str = "ok") -> None:
        done = {"type": "done", "run_id": run_id, "status": status, "after": 0}
        self.ranks[rank].send_multipart([bytes(f) for f in self.cells[rank].pack(done)])

    def until(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 10.0
        while not check():
            assert time.monotonic() < deadline, f"{what} (held {self.held}, drains {self.drains})"
            time.sleep(0.002)

    def close(self) -> None:
        for sock in self.ranks.values():
            sock.close(linger=0)
        self.thread.join(10.0)  # (its ranks gone, it leaves)
        self.ctx.destroy(linger=0)


@pytest.fixture
def node_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int, float], Node]]:
    """A node of so many ranks, its relay's wait made so long, cell ``r1`` sent to them."""
    made: list[Node] = []
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:

        def make(per_node: int, pace_s: float) -> Node:
            monkeypatch.setattr(relaypace, "PACE_S", pace_s)
            made.append(Node(Path(directory), per_node))
            made[-1].cell("r1")
            return made[-1]

        try:
            yield make
        finally:
            for node in made:
                node.close()


def test_ends_that_come_while_the_relay_waits_are_taken_in_one_look(
    node_of: Callable[[int, float], Node],
) -> None:
    node = node_of(16, 1.0)
    first, *rest = node.names
    node.end(first, "r1")
    node.until(lambda: node.held == 1, "the relay did not take the first end")
    for r in rest[:10]:  # (during the wait, 15 ends still awaited; each 20 ms after the last)
        time.sleep(0.02)
        node.end(r, "r1")
    node.until(lambda: node.held == 11, "the relay did not take the ends")
    assert node.drains == [1, 10]  # (on main, which never waits: [1, 1, 1, ...], one a look)
    assert node.paused.is_set()
    for r in rest[10:]:
        node.end(r, "r1")
    header, _ = node.signer.unpack(node.at(node.kernel)[1:])
    assert header["type"] == "dones" and header["ranges"] == [[16, 31]]  # (all, one reduction)


def test_a_message_from_above_ends_the_wait_at_once(
    node_of: Callable[[int, float], Node],
) -> None:
    node = node_of(16, 5.0)
    node.end(node.names[0], "r1")
    node.until(node.paused.is_set, "the relay did not wait after a look that only held an end")
    asked = time.monotonic()
    node.down({"type": "interrupt"}, [rank_name(20)])
    got = node.at(node.ranks[20], timeout=4.0)  # (not after the five seconds' wait)
    assert Signer(KEY, rank_name(20)).unpack(got)[0]["type"] == "interrupt"
    assert time.monotonic() - asked < 4.0


def test_an_error_goes_up_in_the_look_that_takes_it_and_no_wait_follows(
    node_of: Callable[[int, float], Node],
) -> None:
    node = node_of(16, 5.0)
    node.end(node.names[3], "r1", status="error")
    header, _ = node.signer.unpack(node.at(node.kernel, timeout=4.0)[1:])
    assert header["status"] == "error" and header["src"] == cell_name(node.names[3])
    assert not node.paused.is_set()


def test_a_node_of_eight_ranks_never_waits(
    node_of: Callable[[int, float], Node],
) -> None:
    node = node_of(PACE_AWAITED, 5.0)
    for run in ("r1", "r2"):
        if run == "r2":
            node.cell(run)
        for r in node.names:
            taken = node.held + 1
            node.end(r, run)
            node.until(lambda: node.held >= taken, "an end not taken")  # noqa: B023
        header, _ = node.signer.unpack(node.at(node.kernel, timeout=4.0)[1:])
        assert header["ranges"] == [[8, 15]]
    assert not node.paused.is_set()


def test_the_pace_waits_only_after_held_ends_alone_coming_fast_with_many_awaited() -> None:
    awaited = [PACE_AWAITED]
    pace = RelayPace(lambda: awaited[0])
    assert pace.pause(None, 0.0) == 0.0  # (nothing held)
    pace.held()
    assert pace.pause(None, 0.0) == relaypace.PACE_S
    pace.held()
    assert pace.pause(0.0002, 0.0) == 0.0002  # (never past what is due)
    pace.held()
    pace.other()  # (anything else this look: an output, an error, a message from above)
    assert pace.pause(None, 0.0) == 0.0
    pace.held()
    assert pace.pause(None, relaypace.PACE_S) == 0.0  # (its look had waited that long)
    awaited[0] = PACE_AWAITED - 1
    pace.held()
    assert pace.pause(None, 0.0) == 0.0
    assert pace.pauses == 2
