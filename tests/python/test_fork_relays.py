"""Local node relays and aggregators (``Distributed.relays = "always"``, ``"tree"``) are forked
from the ranks' fork server too, which imports their module the first time; each forked process
shows the command line it would have had spawned; where the fork server cannot, they are
spawned."""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster import zygote
from jupyter_distributed.cluster.relays import LocalRelays
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import pid_alive
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import session_in

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server is Linux's"),
]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


SLEEP = "time.sleep(120)"


def _run(session: Session, code: str, relays: str) -> Any:
    """``code`` on 2 nodes of a rank each (``relays``: ``Distributed.relays``)."""
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=2, procs_per_node=1), relays=relays)
    return session.run_cell(spec, code, {}, view=CellView(out=out, err=out))


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def test_relays_and_aggregators_are_forked_and_look_spawned(session: Session) -> None:
    spec = Spec(layout=Layout(nodes=2, procs_per_node=2), relays="tree")
    out = io.StringIO()
    result = session.run_cell(spec, "rank * 10", {}, view=CellView(out=out, err=out))
    assert result.values == {r: str(r * 10) for r in range(4)}
    (live,) = session.live.values()
    procs = live.cluster.processes  # type: ignore[attr-defined]
    servers = zygote.server_pids()
    hops = {
        **{
            p.pid: ["jupyter_distributed.cluster.relay", str(n)]
            for n, p in procs.relays.procs.items()
        },
        **{
            p.pid: ["jupyter_distributed.cluster.aggregator", str(i)]
            for i, p in procs.relays.aggregators.items()
        },
    }
    assert len(hops) == 3  # (2 relays, 1 aggregator)
    for pid, module in hops.items():
        assert _parent(pid) in servers
        assert _argv(pid) == [sys.executable, "-m", *module]
    for rank in procs.procs.values():
        assert _parent(rank.pid) in servers
        assert _argv(rank.pid) == [sys.executable, "-m", "jupyter_distributed.worker"]


@pytest.mark.parametrize("relays", ["always", "auto"])
def test_a_killed_fork_server_is_named_as_the_cause_of_its_processes_deaths(
    session: Session, tmp_path: Path, relays: str
) -> None:
    """A fork server killed (the OOM killer, a ``pkill python``) takes every rank and relay it
    forked along (their ``PR_SET_PDEATHSIG``): each death names it, and the next cell starts a
    new one."""
    _run(session, "pass", relays)
    (server,) = zygote.server_pids()
    marker = tmp_path / "started"

    def kill() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(server, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    with pytest.raises(RunFailed) as info:
        _run(
            session, f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\n{SLEEP}", relays
        )
    killer.join()
    why = f"the kernel's fork server (pid {server}), which started it, ended (killed by SIGKILL)"
    assert info.value.failures
    assert all(why in f.summary for f in info.value.failures), info.value.headline
    assert _run(session, "rank", relays).values == {0: "0", 1: "1"}
    assert zygote.server_pids() and server not in zygote.server_pids()


def test_the_fork_server_runs_a_module_as_python_m_would(tmp_path: Path) -> None:
    server = zygote.ForkServer(dict(os.environ), zygote.LIGHT)
    try:
        with pytest.raises(zygote.ForkRefused, match="cannot import jd_no_such_module"):
            server.fork(dict(os.environ), tmp_path / "x.log", "jd_no_such_module", ("0",))
        # (no bootstrap in its environment: the relay says how it is started, exit code 2)
        relay = "jupyter_distributed.cluster.relay"
        pid = server.fork(dict(os.environ), tmp_path / "relay.log", relay, ("0",))
        assert zygote.Forked(server, pid).wait() == 2
        assert (
            "usage: python -m jupyter_distributed.cluster.relay"
            in (tmp_path / "relay.log").read_text()
        )
        assert server.alive  # (after a module it could not import, it serves on)
    finally:
        server.close()


def test_relays_are_spawned_where_the_fork_server_cannot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = zygote.ForkServer(dict(os.environ), zygote.LIGHT)
    server.close()  # (gone before the relays start)
    with caplog.at_level(logging.WARNING, "jupyter_distributed"):
        relays = LocalRelays(2, dict(os.environ), tmp_path, server)
    try:
        assert [_parent(p.pid) for p in relays.procs.values()] == [os.getpid()] * 2
        assert "relays are spawned, not forked: the fork server is gone" in caplog.text
    finally:
        relays.terminate(1.0)
    assert not any(pid_alive(p.pid) for p in relays.procs.values())


def test_ranks_are_spawned_once_the_fork_server_cannot_fork(
    session: Session, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fork server that stops answering mid-launch: the rank it could not fork and the ranks
    after it are spawned, with a warning, and the cell runs on every rank."""
    real, calls = zygote.ForkServer.fork, []

    def fails_second(self: zygote.ForkServer, *args: Any, **kwargs: Any) -> int:
        calls.append(args)
        if len(calls) == 2:
            raise zygote.ForkRefused("cannot import x")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zygote.ForkServer, "fork", fails_second)
    with caplog.at_level(logging.WARNING, "jupyter_distributed"):
        assert _run(session, "rank", "never").values.keys() == {0, 1}
    assert "ranks are spawned, not forked: cannot import x" in caplog.text
    (live,) = session.live.values()
    procs = live.cluster.processes  # type: ignore[attr-defined]
    assert _parent(procs.procs[0].pid) in zygote.server_pids()
    assert _parent(procs.procs[1].pid) == os.getpid()
    assert len(calls) == 2  # (not asked again after it failed)
