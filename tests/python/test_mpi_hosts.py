"""``--backend mpi`` across two hosts made on this machine with a network namespace.

Host 1 is this machine's side of a veth pair, host 2 a network namespace on the other side, each
with its own address in a private /24. mpirun's remote-launch agent is a small script that enters
the namespace instead of using ssh, so the ranks on host 2 reach the kernel's control channel
and the other ranks only across the veth link.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from jupyter_distributed.backends.mpi.backend import descendants
from jupyter_distributed.backends.mpi.options import MpiOptions
from jupyter_distributed.cluster import relays as relays_module
from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import BOOTSTRAP_ENV
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .backend_cases import mpi_missing
from .core_helpers import session_in
from .test_relays import kill_once_started, killed_mid_cell, started_cell

AGENT = """#!/bin/sh
# mpirun's remote-launch agent: "agent HOST COMMAND..." runs COMMAND in HOST's namespace
host=$1; shift
case "$host" in
  {address}) exec ip netns exec {netns} /bin/sh -c "$*" ;;
esac
echo "no network namespace for host $host" >&2
exit 1
"""


@dataclass(frozen=True)
class TwoHosts:
    here: str  # this machine's end of the link
    there: str  # the namespace's address
    veth: str  # this machine's veth interface
    subnet: str
    agent: Path
    netns: str = ""  # the namespace of host 2
    peer: str = ""  # its end of the veth pair


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _cannot_make_namespaces() -> str:
    if missing := mpi_missing():
        return missing
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    return ""


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoHosts]:
    if reason := _cannot_make_namespaces():
        pytest.skip(f"two-host MPI test skipped: {reason}")
    tag = f"{os.getpid() % 100000}"
    netns, veth, peer = f"jdmpi-{tag}", f"jdv{tag}a", f"jdv{tag}b"
    octet = 100 + os.getpid() % 150
    subnet = f"10.231.{octet}.0/24"
    here, there = f"10.231.{octet}.1", f"10.231.{octet}.2"
    try:
        _ip("netns", "add", netns)
    except subprocess.CalledProcessError as exc:
        pytest.skip(
            f"two-host MPI test skipped: cannot make a network namespace: {exc.stderr.strip()}"
        )
    try:
        _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", netns)
        _ip("addr", "add", f"{here}/24", "dev", veth)
        _ip("link", "set", veth, "up")
        _ip("-n", netns, "addr", "add", f"{there}/24", "dev", peer)
        _ip("-n", netns, "link", "set", peer, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        agent = tmp_path_factory.mktemp("agent") / "netns-agent"
        agent.write_text(AGENT.format(address=there, netns=netns))
        agent.chmod(0o755)
        yield TwoHosts(here, there, veth, subnet, agent, netns, peer)
    finally:
        subprocess.run(["ip", "link", "del", veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _spec(hosts: TwoHosts) -> Spec:
    # no shared-memory transport: both hosts have the same hostname and /dev/shm, so Open MPI's
    # vader segments of the two "hosts" would collide (real hosts do not share them)
    mpi_options = (
        f"--mca plm_rsh_agent {hosts.agent} --mca oob_tcp_if_include {hosts.subnet} "
        f"--mca btl_tcp_if_include {hosts.subnet} --mca btl self,tcp"
    )
    return Spec(
        layout=Layout(nodes=2, procs_per_node=2),
        backend="mpi",
        options=MpiOptions(hosts=(hosts.here, hosts.there), mpi_options=mpi_options),
    )


def _counter(veth: str, name: str) -> int:
    return int(Path(f"/sys/class/net/{veth}/statistics/{name}").read_text())


def _run(session: Session, spec: Spec, code: str) -> dict[int, str]:
    outcome = session.run_cell(spec, textwrap.dedent(code), {}, view=CellView(out=io.StringIO()))
    return outcome.values


def test_ranks_span_two_hosts_across_the_veth_link(two_hosts: TwoHosts, session: Session) -> None:
    spec = _spec(two_hosts)
    values = _run(
        session,
        spec,
        """
        devices = sorted(line.split(':')[0].strip()
                         for line in open('/proc/self/net/dev').readlines()[2:])
        (node_rank, local_rank, comm.rank, comm.size, 'eth0' in devices)
    """,
    )
    # ranks 2 and 3 live in the namespace: no eth0 there, and their hello crossed the link
    assert {r: v.rsplit(",", 1)[0] for r, v in values.items()} == {
        0: "(0, 0, 0, 4",
        1: "(0, 1, 1, 4",
        2: "(1, 0, 2, 4",
        3: "(1, 1, 3, 4",
    }
    assert values[2].endswith("False)") and values[3].endswith("False)")
    received = _counter(two_hosts.veth, "rx_bytes")
    values = _run(
        session,
        spec,
        """
        payload = bytes(8_000_000)
        if rank == 0:
            got = comm.sendrecv(payload, dest=2, source=2)
        elif rank == 2:
            got = comm.sendrecv(payload, dest=0, source=0)
        else:
            got = payload
        total = comm.allreduce(len(got))
        total
    """,
    )
    assert set(values.values()) == {str(4 * 8_000_000)}
    assert _counter(two_hosts.veth, "rx_bytes") - received > 8_000_000  # MPI crossed the link
    plan = session.live["mpi"].cluster.plan
    assert [r.host for r in plan.ranks] == [two_hosts.here] * 2 + [two_hosts.there] * 2


def test_a_rank_dying_on_the_other_host_is_named(two_hosts: TwoHosts, session: Session) -> None:
    spec = _spec(two_hosts)
    _run(session, spec, "pass")
    with pytest.raises(RunFailed) as info:
        _run(
            session,
            spec,
            """
            import os, time
            if rank == 3:
                os._exit(7)
            time.sleep(120)
        """,
        )
    assert (info.value.root.rank, info.value.root.exit_code) == (3, 7)
    assert _run(session, spec, "rank") == {0: "0", 1: "1", 2: "2", 3: "3"}


class _Capture:
    """Every frame on ``veth`` while open (a raw AF_PACKET socket: root, Linux)."""

    def __init__(self, veth: str) -> None:
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind((veth, 0))
        self.sock.settimeout(0.2)
        self.frames: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                self.frames.append(self.sock.recv(65536))

    def close(self) -> bytes:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        return b"".join(self.frames)


def _handshake(address: str, curve: dict[str, bytes] | None) -> int:
    """The monitor event a DEALER gets when it dials ``address`` (with ``curve`` keys)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    for opt, key in (curve or {}).items():
        sock.setsockopt(getattr(zmq, opt), key)
    monitor = sock.get_monitor_socket()
    sock.connect(address)
    sock.send_multipart([b"0" * 64, b'{"type":"ping"}'])
    deadline = time.monotonic() + 10
    outcome = 0
    try:
        while time.monotonic() < deadline and not outcome:
            if monitor.poll(200):
                event = recv_monitor_message(monitor)["event"]
                if event in (
                    zmq.EVENT_HANDSHAKE_SUCCEEDED,
                    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
                    zmq.EVENT_HANDSHAKE_FAILED_AUTH,
                    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL,
                    zmq.EVENT_DISCONNECTED,
                ):
                    outcome = event
    finally:
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)
        ctx.term()
    return outcome


def test_the_channel_across_hosts_is_encrypted_and_admits_only_the_cluster(
    two_hosts: TwoHosts, session: Session
) -> None:
    spec = _spec(two_hosts)
    _run(session, spec, "pass")
    cluster = session.live["mpi"].cluster
    assert isinstance(cluster, ProcessCluster) and cluster.router.curve is not None
    assert cluster.address.startswith(f"tcp://{two_hosts.here}:")
    capture = _Capture(two_hosts.veth)
    try:
        marker = "never-on-the-wire-" + os.urandom(6).hex()
        values = _run(session, spec, f"text = {marker!r}\nprint(text)\ntext")
    finally:
        seen = capture.close()
    assert set(values.values()) == {repr(marker)}  # ranks 2, 3 ran it across the link
    port = int(cluster.address.rsplit(":", 1)[1]).to_bytes(2, "big")
    # the capture saw the channel's packets (the cell out and its ends back: at least one
    # frame each way; the ACKs may ride on them or come after the capture closed)...
    assert seen.count(port) >= 2
    assert marker.encode() not in seen  # ...and neither the code nor its output in them
    # a peer without the server's key never completes a handshake; with the server key but
    # not the cluster's client keypair, the kernel refuses it
    assert _handshake(cluster.address, None) != zmq.EVENT_HANDSHAKE_SUCCEEDED
    public, secret = zmq.curve_keypair()
    server = cluster.router.curve["server"].encode()
    stranger = {"CURVE_SERVERKEY": server, "CURVE_PUBLICKEY": public, "CURVE_SECRETKEY": secret}
    assert _handshake(cluster.address, stranger) == zmq.EVENT_HANDSHAKE_FAILED_AUTH
    assert _run(session, spec, "rank") == {0: "0", 1: "1", 2: "2", 3: "3"}


def test_probe_shows_the_veth_link_slower_than_loopback(
    two_hosts: TwoHosts, session: Session
) -> None:
    """The veth link is made an Ethernet-like 400 Mbit/s one (a token bucket, both ways):
    on a shared 2-core machine an unshaped veth and loopback differ by less than the noise."""
    from jupyter_distributed.probe import ProbeSettings, run

    if shutil.which("tc") is None:
        pytest.skip("the tc command (iproute2) is not installed")
    netns, peer = two_hosts.netns, two_hosts.peer
    shape = ["qdisc", "add", "dev", "{}", "root", "tbf", "rate", "400mbit"]
    shape += ["burst", "64kb", "latency", "50ms"]
    subprocess.run(["tc", *[a.format(two_hosts.veth) for a in shape]], check=True)
    try:
        subprocess.run(
            ["ip", "netns", "exec", netns, "tc", *[a.format(peer) for a in shape]], check=True
        )
        result = run(session, _spec(two_hosts), ProbeSettings(quick=True), CellView(quiet=True))
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", two_hosts.veth, "root"], check=False)
        subprocess.run(
            ["ip", "netns", "exec", netns, "tc", "qdisc", "del", "dev", peer, "root"], check=False
        )
    assert result["library"].startswith("mpi4py")
    assert result["hosts"] == [two_hosts.here] * 2 + [two_hosts.there] * 2
    links = {(p["a"], p["b"]): p["link"] for p in result["pairs"]}
    assert links == {
        (0, 1): "intra",
        (2, 3): "intra",
        **{(a, b): "inter" for a in (0, 1) for b in (2, 3)},
    }
    intra, inter = result["groups"]["intra"], result["groups"]["inter"]
    assert inter["bandwidth_gbs"] < 0.06  # what the link allows (0.05 GB/s)
    assert inter["bandwidth_gbs"] < intra["min_bandwidth_gbs"]


def _relays_by_node(module: str = "relay") -> dict[int, int]:
    """The node relays below this process (on either host), by their node (process rank);
    ``module`` "aggregator": the aggregators, by their number."""
    out = {}
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", f"jupyter_distributed.cluster.{module}".encode()]:
            (rank,) = [e for e in environ if e.startswith(b"OMPI_COMM_WORLD_RANK=")]
            out[int(rank.split(b"=")[1])] = pid
    return out


def test_each_host_reaches_the_kernel_through_its_relay(
    two_hosts: TwoHosts, session: Session, tmp_path: Path
) -> None:
    spec = _spec(two_hosts)  # (relays "auto": on, the ranks span hosts)
    out = io.StringIO()
    outcome = session.run_cell(spec, "print('hi', rank)\nrank", {}, view=CellView(out=out))
    assert outcome.values == {0: "0", 1: "1", 2: "2", 3: "3"}
    assert all(f"hi {r}" in out.getvalue() for r in range(4))
    cluster = session.live["mpi"].cluster
    assert cluster.peer_count() == 2  # (without relays: two per rank, 8)
    relays = _relays_by_node()
    assert sorted(relays) == [0, 1]
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: relays[1])  # the relay on host 2
    with pytest.raises(RunFailed) as info:
        _run(session, spec, started_cell(marker))
    killer.join()
    root = info.value.root
    assert (root.kind, root.host) == ("relay", socket.gethostname())
    assert root.summary.startswith("relay of node 1 on host ")
    assert root.summary.endswith("died (killed by signal 9): its ranks 2-3 are gone")
    assert _run(session, spec, "rank") == {0: "0", 1: "1", 2: "2", 3: "3"}
    session.stop()
    assert _relays_by_node() == {}


def test_ranks_dealt_round_the_hosts_go_through_their_own_hosts_relay(
    two_hosts: TwoHosts, session: Session, tmp_path: Path
) -> None:
    """``--map-by node`` puts ranks 0, 2 on host 1 and 1, 3 on host 2: each rank joins its own
    host's relay, and the relay of host 2 dying names ranks 1 and 3 (not the block 2-3)."""
    base = _spec(two_hosts)
    assert isinstance(base.options, MpiOptions)
    options = replace(base.options, mpi_options=base.options.mpi_options + " --map-by node")
    spec = replace(base, options=options)
    where = "import os\nos.readlink('/proc/self/ns/net')"
    spaces = _run(session, spec, where)
    assert spaces[0] == spaces[2] != spaces[1] == spaces[3]
    assert spaces[0] == repr(Path("/proc/self/ns/net").readlink().name)  # (host 1: this machine)
    nodes = _run(session, spec, "os.environ['NODE_RANK'], os.environ['LOCAL_RANK']")
    assert nodes == {r: repr((str(r % 2), str(r // 2))) for r in range(4)}
    cluster = session.live["mpi"].cluster
    assert cluster.peer_count() == 2
    relays = _relays_by_node()
    marker = tmp_path / "started"
    killer = kill_once_started(marker, lambda: relays[1])  # the relay on host 2
    with pytest.raises(RunFailed) as info:
        _run(session, spec, started_cell(marker))
    killer.join()
    assert info.value.root.summary.endswith("died (killed by signal 9): its ranks 1,3 are gone")
    session.stop()


def _first_cell_peers(session: Session, spec: Spec) -> int | None:
    """Run a cell that prints on every rank; check every rank's value and line came back, and
    return the kernel's peer count."""
    out = io.StringIO()
    outcome = session.run_cell(spec, "print('hi', rank)\nrank", {}, view=CellView(out=out))
    assert outcome.values == {0: "0", 1: "1", 2: "2", 3: "3"}
    assert all(f"hi {r}" in out.getvalue() for r in range(4))
    return session.live["mpi"].cluster.peer_count()


def _bootstrap_of(pid: int) -> dict[str, Any]:
    """The bootstrap a relay or an aggregator was started with (its first environment)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (boot,) = [e for e in environ if e.startswith(BOOTSTRAP_ENV.encode() + b"=")]
    found: dict[str, Any] = json.loads(boot.split(b"=", 1)[1])
    return found


def test_a_tree_goes_through_an_aggregator_on_the_first_host_over_tcp(
    two_hosts: TwoHosts, session: Session, tmp_path: Path
) -> None:
    """``Distributed.relays = "tree"``: one aggregator above the two hosts' relays, on host 1,
    listening on its TCP address (CurveZMQ), which the relay on host 2 dials across the link;
    the kernel holds one connection, and the aggregator's death names both nodes."""
    spec = replace(_spec(two_hosts), relays="tree")
    assert _first_cell_peers(session, spec) == 1  # (the two relays alone: 2)
    (aggregator,) = _relays_by_node("aggregator").values()
    assert sorted(_relays_by_node()) == [0, 1]
    boot = _bootstrap_of(aggregator)
    assert boot["aggregators"]["0"].startswith(f"tcp://{two_hosts.here}:")
    assert boot["aggregator_curve"]["server"] != boot["curve"]["server"]
    run = lambda code: _run(session, spec, code)  # noqa: E731
    root = killed_mid_cell(run, tmp_path / "started", lambda: aggregator)
    assert root.kind == "relay"
    assert root.summary == (
        f"aggregator 0 on host {socket.gethostname()} died (killed by signal 9): its nodes 0-1 "
        "are gone, with their ranks 0-3"
    )
    assert _run(session, spec, "rank") == {0: "0", 1: "1", 2: "2", 3: "3"}  # a new cluster
    session.stop()
    assert _relays_by_node("aggregator") == {} and _relays_by_node() == {}


@pytest.mark.slow
def test_two_aggregators_reach_the_kernel_through_the_root_on_host_1(
    two_hosts: TwoHosts, session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two aggregators (one relay each: the threshold forced, as two hosts would give one):
    aggregator 1, on host 2, dials the root (aggregator 0, on host 1) across the link; a cell
    reaches every rank, the kernel holds one connection (the root's), and the root's death
    names every node."""
    monkeypatch.setattr(relays_module, "fanout", lambda nodes, forced: 1)
    spec = replace(_spec(two_hosts), relays="tree")
    assert _first_cell_peers(session, spec) == 1  # the root (the two aggregators alone: 2)
    aggregators = _relays_by_node("aggregator")
    assert sorted(aggregators) == [0, 1] and sorted(_relays_by_node()) == [0, 1]
    boot = _bootstrap_of(aggregators[1])
    assert boot["root"] == 0 and boot["aggregators"]["0"].startswith(f"tcp://{two_hosts.here}:")
    assert boot["aggregators"]["1"].startswith(f"tcp://{two_hosts.there}:")
    assert _run(session, spec, "rank * 10") == {r: str(r * 10) for r in range(4)}
    run = lambda code: _run(session, spec, code)  # noqa: E731
    root = killed_mid_cell(run, tmp_path / "started", lambda: aggregators[0])
    assert root.kind == "relay"
    assert root.summary == (
        "aggregator 0 (the root, through which every aggregator reaches the kernel) on host "
        f"{socket.gethostname()} died (killed by signal 9): its nodes 0-1 are gone, with their "
        "ranks 0-3"
    )
    session.stop()
    assert _relays_by_node("aggregator") == {} and _relays_by_node() == {}
