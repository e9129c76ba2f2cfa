"""The control channel against another user, a hostile peer on it, and a dying kernel.

Real sockets, real ranks: the kernel's end (:class:`Router`) with peers written here, and
clusters started through a :class:`Session`. The multi-host (CurveZMQ) checks live with the
two-host setup in ``test_mpi_hosts.py``.
"""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.backends.local.backend import LocalProcesses
from jupyter_distributed.cluster import process
from jupyter_distributed.cluster.inbox import Ready
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.throttle import WARN_BURST
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.display import CellView
from jupyter_distributed.history.store import Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.commands import Ping
from jupyter_distributed.protocol.frames import join_parts, split_large
from jupyter_distributed.protocol.reports import Hello
from jupyter_distributed.protocol.signing import BOOTSTRAP_ENV, KERNEL, BadMessage, Signer
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import proc_alive

pytestmark = pytest.mark.timeout(120)
KEY = secrets.token_bytes(32)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "history.sqlite")
    yield store
    store.close()


@pytest.fixture
def router(store: Store) -> Iterator[Router]:
    info = {0: RankInfo(0, "here", None, "starting", Layout().coords(0))}
    router = Router("jd-test", store, info, KEY, lambda: None, lambda why: None, Transport.ipc())
    router.start()
    yield router
    router.close()


@pytest.fixture
def session(store: Store) -> Iterator[Session]:
    session = Session(store)
    yield session
    session.shutdown()


def _run(session: Session, code: str, **spec: Any) -> dict[int, str]:
    spec_ = Spec(layout=Layout(procs_per_node=2), **spec)
    return session.run_cell(
        spec_, textwrap.dedent(code), {}, view=CellView(out=io.StringIO())
    ).values


def _hello(router: Router, sock: zmq.Socket[bytes], timeout: float = 30) -> None:
    """Say hello as rank 0 (signed) and wait until the kernel took it: every message sent on
    ``sock`` before it has been handled by then."""
    sock.send_multipart(Signer(KEY, "r0").pack(Hello(0, "here", os.getpid(), "3", {}).to_header()))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            item = router.inbox.get(timeout=0.1)
        except Exception:  # noqa: BLE001,S112 (queue.Empty: keep waiting)
            continue
        if isinstance(item, Ready):
            return
    raise AssertionError("the kernel never took rank 0's hello")


def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_local_cluster_listens_where_only_this_user_can_reach(session: Session) -> None:
    assert _run(session, "rank") == {0: "0", 1: "1"}
    cluster = session.live["local"].cluster
    assert isinstance(cluster, process.ProcessCluster)
    address = cluster.address
    assert address.startswith("ipc://"), address
    path = Path(address.removeprefix("ipc://"))
    cells = Path(cluster.router.cells_address or "")  # the ranks' cell sockets, beside it
    assert cells.parent == path.parent and cells.is_socket()
    mode = path.parent.stat()
    assert stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == os.getuid()
    if os.geteuid() == 0:  # another user cannot even open the sockets
        probe = (
            "import os, socket, sys\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "for path, kind in ((sys.argv[1], socket.SOCK_STREAM), "
            "(sys.argv[2], socket.SOCK_SEQPACKET)):\n"
            "    s = socket.socket(socket.AF_UNIX, kind)\n"
            "    try:\n        s.connect(path)\n    except PermissionError:\n"
            "        print('refused')\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe, str(path), str(cells)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert out.stdout.split() == ["refused", "refused"], out.stderr
    session.shutdown()
    assert not path.parent.exists()  # removed when the cluster stops


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_a_512_mb_frame_does_not_grow_the_kernel(router: Router) -> None:
    sender = textwrap.dedent(
        """
        import sys, time, zmq
        s = zmq.Context().socket(zmq.DEALER)
        s.connect(sys.argv[1])
        s.send(bytes(512 << 20), copy=False)  # zero pages: cheap for the sender
        time.sleep(3)
        """
    )
    _peak_rss_reset()
    before = _peak_rss_mb()
    subprocess.run([sys.executable, "-c", sender, router.address], check=True, timeout=60)
    assert _peak_rss_mb() - before < 100
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(router.address)
    _hello(router, sock)  # the kernel still works for its ranks
    sock.close(0)
    ctx.term()


def test_a_flood_of_junk_gives_a_few_warnings(router: Router, caplog: Any) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.connect(router.address)
    with caplog.at_level(logging.WARNING, logger="jupyter_distributed"):
        for i in range(20_000):
            sock.send_multipart([b"0" * 64, b'{"type":"ping","n":%d}' % i])
        _hello(router, sock, timeout=90)
    sock.close(0)
    ctx.term()
    lines = [r for r in caplog.records if "rejected" in r.getMessage()]
    assert 1 <= len(lines) <= WARN_BURST + 1
    assert "bad signature" in lines[0].getMessage()
    assert router.rejected.dropped == 20_000 - WARN_BURST  # counted, told when the minute ends


def test_connecting_first_as_rank_0_does_not_stop_a_cluster(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = zmq.Context()
    squatter = ctx.socket(zmq.DEALER)
    squatter.setsockopt(zmq.IDENTITY, b"rank-0")
    start = LocalProcesses.__init__

    def squat_first(self: LocalProcesses, plan: Any, boot: dict[str, str]) -> None:
        squatter.connect(json.loads(boot[BOOTSTRAP_ENV])["address"])
        squatter.send_multipart([b"0" * 64, b"{}"])
        time.sleep(0.3)  # connected before any rank
        start(self, plan, boot)

    monkeypatch.setattr(LocalProcesses, "__init__", squat_first)
    monkeypatch.setattr(process.ProcessCluster, "start_timeout", 20.0)
    try:
        assert _run(session, "rank * 10") == {0: "0", 1: "10"}
        assert _run(session, "rank") == {0: "0", 1: "1"}
        assert squatter.poll(200) == 0  # nothing meant for rank 0 went to the squatter
    finally:
        squatter.close(0)
        ctx.term()


def test_a_replay_is_refused_however_many_newer_messages_passed() -> None:
    rank, kernel = Signer(KEY, "r0"), Signer(KEY, KERNEL)
    first = rank.pack(Ping().to_header())
    newer = [rank.pack(Ping().to_header()) for _ in range(10_000)]
    kernel.unpack(first)
    for frames in newer:
        kernel.unpack(frames)
    with pytest.raises(BadMessage, match="replayed"):
        kernel.unpack(first)
    with pytest.raises(BadMessage, match="replayed"):
        kernel.unpack(newer[-1])
    # direction and receiver are signed: a message cannot be reflected or redirected
    to_r1 = kernel.pack(Ping().to_header(), to="r1")
    with pytest.raises(BadMessage, match="reached k"):
        kernel.unpack(to_r1)
    with pytest.raises(BadMessage, match="reached r2"):
        Signer(KEY, "r2").unpack(to_r1)
    header, _ = Signer(KEY, "r1").unpack(to_r1)
    assert (header["src"], header["dst"]) == (KERNEL, "r1")


def test_large_buffers_travel_as_frames_under_the_limit(session: Session) -> None:
    frames, parts = split_large([b"a" * 10, b"b" * 25, b""], limit=10)
    assert parts == [1, 3, 1] and all(len(f) <= 10 for f in frames)
    assert join_parts(frames, parts) == [b"a" * 10, b"b" * 25, b""]
    assert split_large([b"x"], limit=10) == ([b"x"], None)
    with pytest.raises(ValueError, match="frames for counts"):
        join_parts(frames, [1, 1])
    # a pulled value larger than one frame (64 MiB) arrives whole
    ns: dict[str, Any] = {}
    spec = Spec(layout=Layout(procs_per_node=1), pull=("big",))
    code = "big = bytes(range(256)) * (300_000)  # 76.8 MB"
    session.run_cell(spec, code, ns, view=CellView(out=io.StringIO()))
    assert ns["big"] == [bytes(range(256)) * 300_000]  # one value per rank


KERNEL_SCRIPT = """
import io, sys, time
from jupyter_distributed.display import CellView
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.layout import Layout
from jupyter_distributed.history.store import Store

session = Session(Store(sys.argv[1]))
code = (
    "import subprocess\\n"
    "child = subprocess.Popen(['sleep', '300'])\\n"
    f"open({sys.argv[2]!r} + '/child-' + str(rank), 'w').write(str(child.pid))\\n"
)
spec = Spec(layout=Layout(procs_per_node=2))
session.run_cell(spec, code, {}, view=CellView(out=io.StringIO()))
print("ready", flush=True)
time.sleep(300)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_what_a_rank_started_dies_when_the_kernel_is_killed(tmp_path: Path) -> None:
    kernel = subprocess.Popen(
        [sys.executable, "-c", KERNEL_SCRIPT, str(tmp_path / "h.sqlite"), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert kernel.stdout is not None and kernel.stdout.readline().strip() == "ready"
        children = [int((tmp_path / f"child-{r}").read_text()) for r in (0, 1)]
        assert all(proc_alive(pid) for pid in children)
        kernel.send_signal(signal.SIGKILL)
        kernel.wait()
        deadline = time.monotonic() + 15
        while any(proc_alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(proc_alive(p) for p in children), "rank code's processes were orphaned"
    finally:
        kernel.kill()
        for path in tmp_path.glob("child-*"):
            pid = int(path.read_text())
            if proc_alive(pid):
                os.kill(pid, signal.SIGKILL)
