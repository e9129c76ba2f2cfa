"""Node relays (``Distributed.relays = "always"`` on the local backend): the kernel holds one
connection per node, a cell is signed once for all ranks and forwarded unchanged, per-rank
messages are routed by rank, and a dead relay is named as a dead node.

The relay is the real one (``python -m jupyter_distributed.cluster.relay``); the first tests
drive it with the real protocol code from this process (a kernel's ROUTER, ranks' DEALERs), the
last through a Session with real rank processes.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.backends.mpi.backend import descendants
from jupyter_distributed.backends.mpi.options import MpiOptions
from jupyter_distributed.backends.ray.relays import check_nodes
from jupyter_distributed.cluster.relays import RELAY_COMMAND, relay_addresses
from jupyter_distributed.cluster.stackboard import StackBoard, collect
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import LaunchError, RunFailed, SpecError
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import pid_alive
from jupyter_distributed.protocol.signing import (
    BOOTSTRAP_ENV,
    KERNEL,
    BadMessage,
    Signer,
    rank_name,
)
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import status

from .backend_cases import mpi_missing
from .core_helpers import session_in

KEY = b"k" * 32
NODE_RANKS = (4, 5, 6, 7)  # node 1 of 2 nodes × 4


class Wire:
    """A kernel's ROUTER and node 1's ranks (DEALERs), with that node's real relay between."""

    def __init__(self, directory: Path) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.kernel = self.ctx.socket(zmq.ROUTER)
        self.kernel.bind(f"ipc://{directory}/ctl")
        relays = relay_addresses(directory, 2)
        boot = {
            "address": f"ipc://{directory}/ctl",
            "key": KEY.hex(),
            "relays": relays,
            "layout": Layout(nodes=2, procs_per_node=4).to_json(),
        }
        self.relay = subprocess.Popen(
            (*RELAY_COMMAND, "1"), env={**os.environ, BOOTSTRAP_ENV: json.dumps(boot)}
        )
        self.ranks: dict[int, zmq.Socket[bytes]] = {}
        for r in NODE_RANKS:
            sock = self.ctx.socket(zmq.DEALER)
            sock.connect(relays["1"])
            self.ranks[r] = sock
        self.signer = Signer(KEY, KERNEL)

    def up(self, rank: int, signer: Signer | None = None) -> list[bytes]:
        """Rank ``rank`` sends a message; the frames it sent."""
        frames = [bytes(f) for f in (signer or Signer(KEY, rank_name(rank))).pack({"type": "x"})]
        self.ranks[rank].send_multipart(frames)
        return frames

    def at_kernel(self, timeout: float = 5.0) -> list[bytes] | None:
        if not self.kernel.poll(int(timeout * 1000)):
            return None
        return self.kernel.recv_multipart()

    def at_rank(self, rank: int, timeout: float = 5.0) -> list[bytes] | None:
        if not self.ranks[rank].poll(int(timeout * 1000)):
            return None
        return self.ranks[rank].recv_multipart()

    def close(self) -> None:
        self.relay.kill()
        self.relay.wait()
        self.ctx.destroy(linger=0)


@pytest.fixture
def wire() -> Iterator[Wire]:
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        w = Wire(Path(directory))
        try:
            yield w
        finally:
            w.close()


def _hello_all(wire: Wire) -> bytes:
    """Every rank of the node speaks first (the relay learns its connections); the relay's
    routing id at the kernel: the same for all of them."""
    ids = set()
    for r in NODE_RANKS:
        sent = wire.up(r)
        got = wire.at_kernel()
        assert got is not None, f"rank {r}'s message never reached the kernel"
        assert got[1:] == sent  # forwarded unchanged: the rank's own signature
        ids.add(got[0])
    assert len(ids) == 1, "the node's ranks reach the kernel on one connection"
    return ids.pop()


def test_a_message_to_every_rank_is_signed_once_and_forwarded_unchanged(wire: Wire) -> None:
    relay = _hello_all(wire)
    names = [rank_name(r) for r in range(8)]  # (ranks 0-3 are another node's)
    once = [bytes(f) for f in wire.signer.pack_all({"type": "ping"}, names)]
    wire.kernel.send_multipart([relay, *once])
    for r in NODE_RANKS:
        got = wire.at_rank(r)
        assert got == once
        header, _ = Signer(KEY, rank_name(r)).unpack(got)
        assert header["type"] == "ping"


def test_a_message_to_one_rank_reaches_that_rank_only(wire: Wire) -> None:
    relay = _hello_all(wire)
    one = [bytes(f) for f in wire.signer.pack({"type": "ping"}, to=rank_name(6))]
    wire.kernel.send_multipart([relay, *one])
    assert wire.at_rank(6) == one
    assert all(wire.at_rank(r, timeout=0.3) is None for r in (4, 5, 7))


def test_the_relay_drops_what_is_not_signed_with_the_clusters_key(wire: Wire) -> None:
    relay = _hello_all(wire)
    wire.up(5, Signer(b"x" * 32, rank_name(5)))  # another key
    wire.up(5, Signer(KEY, rank_name(2)))  # a rank of the other node
    assert wire.at_kernel(timeout=0.5) is None
    forged = [bytes(f) for f in Signer(b"x" * 32, KERNEL).pack({"type": "ping"}, to="r4")]
    wire.kernel.send_multipart([relay, *forged])
    assert wire.at_rank(4, timeout=0.5) is None


def test_a_message_signed_for_many_is_refused_by_a_rank_not_named() -> None:
    signed = Signer(KEY, KERNEL).pack_all({"type": "ping"}, ["r0", "r1"])
    assert Signer(KEY, "r1").unpack(signed)[0]["type"] == "ping"
    with pytest.raises(BadMessage, match="reached r2"):
        Signer(KEY, "r2").unpack(signed)
    rank0 = Signer(KEY, "r0")
    rank0.unpack(signed)
    with pytest.raises(BadMessage, match="replayed"):
        rank0.unpack(signed)


def _relay_at(directory: Path, listen: Path) -> subprocess.Popen[str]:
    """Node 0's real relay, listening on a Unix socket in ``listen`` (a node-local address)."""
    boot = {
        "address": f"ipc://{directory}/ctl",
        "key": KEY.hex(),
        "relays": {"0": f"ipc://{listen}/r"},
        "layout": Layout(nodes=1, procs_per_node=1).to_json(),
    }
    env = {**os.environ, BOOTSTRAP_ENV: json.dumps(boot)}
    return subprocess.Popen((*RELAY_COMMAND, "0"), env=env, stderr=subprocess.PIPE, text=True)


def test_a_node_local_relay_makes_its_directory_0700_and_removes_it_when_ended(
    tmp_path: Path,
) -> None:
    own = tmp_path / "relay-0"
    relay = _relay_at(tmp_path, own)
    deadline = time.monotonic() + 30
    while not (own / "r").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (own.stat().st_mode & 0o777, (own / "r").is_socket()) == (0o700, True)
    relay.terminate()  # (slurmd ends a step's tasks with SIGTERM)
    assert relay.wait(30) == 0
    assert not own.exists()


def test_a_relay_refuses_a_socket_directory_that_others_can_enter(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    relay = _relay_at(tmp_path, shared)
    _, err = relay.communicate(timeout=30)
    assert relay.returncode == 1
    assert err == (
        f"jupyter-distributed relay of node 0: {shared} exists and is not this user's alone "
        "(mode 0700)\n"
    )
    assert list(shared.iterdir()) == []  # (it never listened there)


# -- through a Session: real ranks, a real relay ------------------------------------------


def _run(session: Session, code: str, n: int = 4, nodes: int = 1, **kwargs: Any) -> Any:
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=nodes, procs_per_node=n), **kwargs)
    return session.run_cell(spec, textwrap.dedent(code), {}, view=CellView(out=out, err=out))


def _relays(backend: str) -> dict[str, Any]:
    """The Spec arguments of a cell through relays on ``backend`` (skipped where it cannot run)."""
    if backend == "mpi":
        if reason := mpi_missing():
            pytest.skip(reason)
        return {"backend": "mpi", "options": MpiOptions(), "relays": "always"}
    return {"relays": "always"}


def _relay_pids() -> list[int]:
    """The node relays below this process (whichever launcher started them)."""
    out = []
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", b"jupyter_distributed.cluster.relay"]:  # (not its mpirun)
            out.append(pid)
    return out


def kill_once_started(marker: Path, pick: Callable[[], int]) -> threading.Thread:
    """A thread that SIGKILLs the process ``pick`` names once a cell touched ``marker`` (the
    cell of :func:`started_cell`); join it after the cell."""

    def kill() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(pick(), signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def started_cell(marker: Path) -> str:
    """A cell that says it started (touches ``marker``) and then sleeps."""
    return f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(120)"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def test_the_kernel_holds_one_connection_for_a_node_of_four_ranks(session: Session) -> None:
    assert _run(session, "rank", relays="always").values == {r: str(r) for r in range(4)}
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 1
    assert "kernel connections to the ranks: 1 (through 1 node relay(s))" in status(session)
    session.stop()
    _run(session, "rank")  # without relays: each rank's control channel and cell socket
    (live,) = session.live.values()
    assert live.cluster.peer_count() == 8
    assert "kernel connections to the ranks: 8\n" in status(session)


# (mpi: this machine is one node; two hosts through relays: test_mpi_hosts.py; slurm:
# test_slurm_relays.py)
SHAPES = [("local", 2), ("mpi", 1)]


@pytest.mark.parametrize(("backend", "nodes"), SHAPES)
def test_each_node_reaches_the_kernel_through_its_relay(
    session: Session, backend: str, nodes: int
) -> None:
    given = _relays(backend)
    values = _run(session, "rank", n=2, nodes=nodes, **given).values
    assert values == {r: str(r) for r in range(2 * nodes)}
    (live,) = session.live.values()
    assert (live.cluster.peer_count(), len(_relay_pids())) == (nodes, nodes)


@pytest.mark.parametrize(("backend", "nodes"), SHAPES)
def test_a_relay_killed_mid_cell_names_its_node(
    session: Session, tmp_path: Path, backend: str, nodes: int
) -> None:
    given = _relays(backend)
    _run(session, "pass", n=2, nodes=nodes, **given)
    marker = tmp_path / "started"
    killed: list[int] = []

    def node_0() -> int:
        killed.append(min(_relay_pids()))  # (the relay of node 0 started first)
        return killed[0]

    killer = kill_once_started(marker, node_0)
    with pytest.raises(RunFailed) as info:
        _run(session, started_cell(marker), n=2, nodes=nodes, **given)
    killer.join()
    root = info.value.root
    assert root.kind == "relay"
    assert root.summary.startswith("relay of node 0 on host ")
    assert root.summary.endswith("died (killed by signal 9): its ranks 0-1 are gone")
    assert not pid_alive(killed[0])
    values = _run(session, "rank", n=2, nodes=nodes, **given).values
    assert values == {r: str(r) for r in range(2 * nodes)}


def test_relays_on_a_backend_without_them_are_refused_in_one_line(session: Session) -> None:
    with pytest.raises(SpecError, match=r"the sagemaker backend starts no node relays yet; set it"):
        session.plan(Spec(backend="sagemaker", relays="always"))
    with pytest.raises(SpecError, match=r"Distributed.relays is 'sometimes'"):
        Spec(relays="sometimes")


def test_ray_relays_refuse_a_node_whose_ranks_ray_placed_on_several_nodes() -> None:
    check_nodes(["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"], 2)  # (each node on one)
    with pytest.raises(
        LaunchError,
        match=r"^node relays on ray: node 1's ranks were placed on "
        r"several Ray nodes \(10.0.0.1, 10.0.0.2\), so no one relay can reach",
    ):
        check_nodes(["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.1"], 2)


def test_the_ranks_behind_a_dead_relay_are_not_asked_for_their_stacks() -> None:
    asked: list[list[int]] = []
    stacks = collect(
        StackBoard(), lambda ranks, _: asked.append(list(ranks)), {}, [0, 1, 2], "",
        answer_wait=0.01, unreachable={1, 2},
    )  # fmt: skip
    assert asked == [[0]]
    assert sorted(stacks) == [0, 1, 2]  # (each says why it could not be read)
