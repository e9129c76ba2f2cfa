"""Node relays on a real Ray head (``Distributed.relays = "always"``): one actor per node beside
the node's ranks and never one of them; the kernel holds one connection per node, and a relay
killed mid-cell is named as its dead node."""

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
from .test_relays import kill_once_started, started_cell

pytestmark = pytest.mark.ray


@pytest.fixture
def session(in_ray: RayHead, tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _run(session: Session, code: str, out: io.StringIO) -> Any:
    spec = Spec(layout=Layout(nodes=2, procs_per_node=1), backend="ray", relays="always")
    return session.run_cell(spec, code, {}, view=CellView(out=out, err=out))


def _relays(head: RayHead) -> dict[int, int]:
    """The node relays the Ray head's workers run, by node (their command line's last word)."""
    out = {}
    for pid in descendants(head.proc.pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", b"jupyter_distributed.cluster.relay"]:
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
