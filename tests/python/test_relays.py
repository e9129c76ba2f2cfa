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
from jupyter_distributed.backends.slurm.backend import SlurmBackend
from jupyter_distributed.backends.slurm.options import SlurmOptions
from jupyter_distributed.cluster import fanin, relaybatch
from jupyter_distributed.cluster.cellrun import RECORD_AFTER, RECORD_AFTER_RELAYED
from jupyter_distributed.cluster.fanbatch import unbatch
from jupyter_distributed.cluster.fanin import BadReduction, expand
from jupyter_distributed.cluster.hoprun import TERMINATED
from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.cluster.processwatch import PACE_REST_MS, PACE_SENTINELS_MS
from jupyter_distributed.cluster.relays import RELAY_COMMAND, relay_map
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
    cell_name,
    rank_name,
)
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import status

from .backend_cases import mpi_missing
from .core_helpers import session_in
from .relay_helpers import KEY, NODE_RANKS, Wire, history_of, router_of


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
    assert relay.wait(30) == TERMINATED  # (not 0: that says it left after its ranks)
    assert not own.exists()


def test_a_relay_leaves_on_its_own_once_every_rank_of_its_node_is_gone(wire: Wire) -> None:
    relay = _hello_all(wire)
    for r in NODE_RANKS[:-1]:
        wire.ranks.pop(r).close(linger=0)
    last = NODE_RANKS[-1]
    sent = wire.up(last)  # the node's last rank is still served...
    assert wire.at_kernel() == [relay, *sent]
    wire.ranks.pop(last).close(linger=0)
    assert wire.relay.wait(30) == 0  # ...and once it is gone, the relay leaves (exit 0)


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


def test_the_ends_of_a_cell_reach_the_kernel_as_one_message_the_relay_signs(wire: Wire) -> None:
    signers = wire.cell_started()
    for r in NODE_RANKS:
        done = {"type": "done", "run_id": "r1", "status": "ok", "after": r}
        wire.ranks[r].send_multipart([bytes(f) for f in signers[r].pack(done)])
    reduced = wire.at_kernel()
    assert reduced is not None
    header, _ = wire.signer.unpack(reduced[1:])
    assert (header["src"], header["done"], header["of"], header["errors"]) == ("n1", 4, 4, 0)
    assert header["statuses"] == {"ok": 4} and header["slowest_rank"] in NODE_RANKS
    assert [(r, after) for r, _, after, _ in header["each"]] == [(r, r) for r in NODE_RANKS]
    assert wire.at_kernel(timeout=0.3) is None  # one message for the node, not one per rank


def test_output_goes_up_in_batches_the_relay_signs_each_ranks_lines_in_order(wire: Wire) -> None:
    signers = {r: Signer(KEY, rank_name(r)) for r in (4, 5)}
    for i in range(50):
        for r in (4, 5):
            out = {"type": "output", "run_id": "r1", "stream": "stdout", "lines": [f"{r} {i}"]}
            wire.ranks[r].send_multipart([bytes(f) for f in signers[r].pack(out)])
    wire.up(5)  # (another kind of message: after the lines the rank sent before it)
    lines: dict[str, list[str]] = {"r4": [], "r5": []}
    other = False
    while not (other and len(lines["r4"]) == 50):
        got = wire.at_kernel()
        assert got is not None, f"lines lost: {lines}"
        header, _ = wire.signer.unpack(got[1:])
        if header["src"] == "r5":  # (rank 5's own message, after all its lines)
            assert len(lines["r5"]) == 50
            other = True
            continue
        assert (header["src"], header["type"]) == ("n1", "batch")
        for src, _, fields in header["each"]:
            lines[src].extend(fields["lines"])
    assert lines == {f"r{r}": [f"{r} {i}" for i in range(50)] for r in (4, 5)}


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


def _relay_pids(module: str = "relay") -> list[int]:
    """The node relays below this process (whichever launcher started them); ``module``
    "aggregator": the aggregators above them."""
    out = []
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", f"jupyter_distributed.cluster.{module}".encode()]:  # (not mpirun)
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


def killed_mid_cell(run: Callable[[str], object], marker: Path, pick: Callable[[], int]) -> Any:
    """The root failure of a cell (``run`` runs it) that started and had the process ``pick``
    names SIGKILLed meanwhile."""
    killer = kill_once_started(marker, pick)
    with pytest.raises(RunFailed) as info:
        run(started_cell(marker))
    killer.join()
    return info.value.root


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


def test_a_relayed_cluster_ticks_every_half_second_and_records_a_cell_once(
    session: Session,
) -> None:
    """Its ends wake the kernel's I/O thread, its processes' pidfds too, and a held reply asks
    for its own tick: the look at the controls runs twice a second, not 20 times, in a cell as
    at rest (h15-hold; 4 times a second in a cell before); and as its ends
    are held up to 0.5 s for one transaction, so is the run's record (issue 26). Without relays
    50 ms while a cell runs and the record by 20 ms; at rest 0.5 s either way (a cell written
    straight to the ranks wakes the I/O thread then)."""
    _run(session, "pass", n=2, relays="always")
    (live,) = session.live.values()
    router = live.cluster.router  # type: ignore[attr-defined]
    assert (router._pace.poll_ms, router._pace.running_ms) == (PACE_REST_MS, PACE_SENTINELS_MS)
    assert router._loop._poll_ms == PACE_REST_MS == 500
    assert router.record_after == RECORD_AFTER_RELAYED == 0.5
    session.stop()
    _run(session, "pass", n=2)
    (live,) = session.live.values()
    router = live.cluster.router  # type: ignore[attr-defined]
    pace = router._pace
    assert (pace.poll_ms, pace.rest_ms, router.record_after) == (50, 500, RECORD_AFTER)
    assert router._outbox.wake_cells


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
    check_nodes(["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"], [0, 0, 1, 1])  # (one each)
    with pytest.raises(
        LaunchError,
        match=r"^node relays on ray: node 1's ranks were placed on "
        r"several Ray nodes \(10.0.0.1, 10.0.0.2\), so no one relay can reach",
    ):
        check_nodes(["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.1"], [0, 0, 1, 1])


def test_slurm_plans_each_ranks_node_as_srun_distributes_them() -> None:
    """srun's ``-m cyclic`` puts rank r on node r % nodes: the plan says so, and the relays
    follow it; block (the default) keeps the layout's nodes; a distribution that does not say
    where each rank is refused in one line where relays need it."""

    def plan(slurm_options: str, relays: str = "auto") -> list[tuple[int, int]]:
        options = SlurmOptions(slurm_options=slurm_options)
        spec = Spec(Layout(nodes=2, procs_per_node=2), "slurm", options=options, relays=relays)
        ranks = SlurmBackend().plan(spec).ranks
        return [(r.coords.node_rank, r.coords.local_rank) for r in ranks]

    assert (
        plan("-m cyclic") == plan("--distribution=cyclic:block") == [(0, 0), (1, 0), (0, 1), (1, 1)]
    )
    assert relay_map([0, 1, 0, 1], Layout(nodes=2, procs_per_node=2)) == [0, 1, 0, 1]
    assert plan("") == plan("-m block") == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert relay_map([0, 0, 1, 1], Layout(nodes=2, procs_per_node=2)) is None
    with pytest.raises(SpecError, match=r"^--slurm-options: --distribution arbitrary does not"):
        plan("-m arbitrary")
    assert plan("-m arbitrary", relays="never") == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_the_ranks_behind_a_dead_relay_are_not_asked_for_their_stacks() -> None:
    asked: list[list[int]] = []
    stacks = collect(
        StackBoard(), lambda ranks, _: asked.append(list(ranks)), {}, [0, 1, 2], "",
        answer_wait=0.01, unreachable={1, 2},
    )  # fmt: skip
    assert asked == [[0]]
    assert sorted(stacks) == [0, 1, 2]  # (each says why it could not be read)


# -- fan-in: the ends of a cell as one reduction per relay --------------------------------


CELL = "print('from', rank)\nrank * 10"


def test_a_cell_through_two_relays_records_what_it_records_without_them(
    session: Session,
) -> None:
    direct = _run(session, CELL, n=2, nodes=2)
    direct_history = history_of(session.store, session.store.runs(limit=1)[0].id)
    assert router_of(session).reduced_ends == 0
    session.stop()
    relayed = _run(session, CELL, n=2, nodes=2, relays="always")
    assert relayed.values == direct.values == {r: str(r * 10) for r in range(4)}
    assert history_of(session.store, session.store.runs(limit=1)[0].id) == direct_history
    assert ("output", 3, "stdout", "from 3") in direct_history
    assert router_of(session).reduced_ends == 4  # every rank's end came in its relay's reduction


def _rejected(caplog: pytest.LogCaptureFixture, cause: str) -> bool:
    """Whether the kernel logged that it rejected a message for ``cause`` (waits up to 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(cause in r.getMessage() for r in caplog.records):
            return True
        time.sleep(0.02)
    return False


def test_a_forged_reduction_is_dropped(session: Session, caplog: pytest.LogCaptureFixture) -> None:
    _run(session, CELL, n=2, nodes=2, relays="always")
    router = router_of(session)
    run_id = session.store.runs(limit=1)[0].id
    before = history_of(session.store, run_id)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(router.address)
    done = {"type": "done", "run_id": run_id, "status": "error"}
    forged = {"type": "dones", "run_id": run_id, "done": 1, "of": 1, "each": [[1, 1, 0, done]]}
    try:
        sock.send_multipart([bytes(f) for f in Signer(b"x" * 32, "n0").pack(forged)])
        assert _rejected(caplog, "bad signature")
    finally:
        ctx.destroy(linger=0)
    assert router.reduced_ends == 4
    assert history_of(session.store, run_id) == before


def test_a_relay_speaks_only_for_its_own_nodes_ranks() -> None:
    done = {"type": "done", "run_id": "r", "status": "ok"}
    reduction = {"src": "n0", "each": [[1, 5, 0, done]]}
    assert expand(reduction, lambda r: r // 2) == [(1, 5, 0, done)]
    with pytest.raises(BadReduction, match="relay n0 spoke for rank 3 of another node"):
        expand({**reduction, "each": [[1, 5, 0, done], [3, 6, 0, done]]}, lambda r: r // 2)
    with pytest.raises(BadReduction, match="no Done"):
        expand({**reduction, "each": [[1, 5, 0, {"type": "hello"}]]}, lambda r: r // 2)
    out = {"type": "output", "run_id": "r", "stream": "stdout", "lines": ["x"]}
    batch = {"src": "n0", "each": [["r1", 7, out]]}
    assert unbatch(batch, lambda r: r // 2) == [(1, 7, out)]
    with pytest.raises(BadReduction, match="relay n0 spoke for r2 of another node"):
        unbatch({**batch, "each": [["r2", 7, out]]}, lambda r: r // 2)
    with pytest.raises(BadReduction, match="no output"):
        unbatch({**batch, "each": [["r1", 7, done]]}, lambda r: r // 2)


def test_an_error_arrives_while_the_other_rank_of_its_node_still_runs(
    session: Session, tmp_path: Path
) -> None:
    _run(session, "pass", n=2, nodes=2, relays="always")
    go = tmp_path / "go"
    seen: list[dict[str, Any]] = []

    def release_when_the_error_is_recorded() -> None:
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            runs = session.store.runs(limit=1)
            events = session.store.events_after(0, runs[0].id) if runs else []
            seen.extend(e for _, e in events if e.get("rank") == 0 and e["kind"] == "error")
            time.sleep(0.02)
        go.touch()  # (rank 1, on rank 0's node, ends only now)

    watcher = threading.Thread(target=release_when_the_error_is_recorded, daemon=True)
    watcher.start()
    code = f"""
        import pathlib, time
        if rank == 0:
            raise ValueError("first")
        while rank == 1 and not pathlib.Path({str(go)!r}).exists():
            time.sleep(0.01)
        rank
        """
    with pytest.raises(RunFailed) as info:
        _run(session, code, n=2, nodes=2, relays="always")
    watcher.join()
    assert seen, "rank 0's error was recorded only after rank 1 ended"
    assert "ValueError: first" in str(info.value)
    assert (
        router_of(session).reduced_ends == 4 + 3
    )  # the first cell's and 3 of these (not the error)


def test_the_lines_of_two_ranks_through_a_relay_are_all_recorded_in_order(
    session: Session,
) -> None:
    _run(session, "for i in range(300):\n    print(rank, i)", n=2, relays="always")
    lines = history_of(session.store, session.store.runs(limit=1)[0].id)
    for r in (0, 1):
        mine = [text for kind, rank, _, text in lines if kind == "output" and rank == r]
        assert mine == [f"{r} {i}" for i in range(300)]
    assert router_of(session).batched > 0  # (in the relay's batches, not one message per write)


def test_a_relay_answers_for_the_ranks_that_ended_once_one_keeps_it_waiting() -> None:
    now = [100.0]
    reducer = fanin.Reducer(range(4, 8), clock=lambda: now[0])
    reducer.sent({"type": "execute", "run_id": "r1", "dst": [cell_name(r) for r in range(8)]})
    for r in (4, 5, 6):  # rank 7 never ends (it died, or it is a straggler)
        end = {"type": "done", "src": cell_name(r), "seq": r, "run_id": "r1", "status": "ok"}
        assert reducer.hold(end, 0)
    assert reducer.due() == ([], fanin.HOLD_S)
    now[0] += fanin.HOLD_S
    (reduced,), _ = reducer.due()
    assert (reduced["done"], reduced["of"], [e[0] for e in reduced["each"]]) == (3, 4, [4, 5, 6])
    late = {"type": "done", "src": cell_name(7), "seq": 7, "run_id": "r1", "status": "ok"}
    assert reducer.hold(late, 0)
    (reduced,), _ = reducer.due()
    assert (reduced["done"], reduced["of"], reduced["slowest_rank"]) == (1, 1, 7)


def test_a_batch_stays_within_the_kernels_cap_on_a_header() -> None:
    batcher = relaybatch.Batcher(range(4, 8))
    out = {"type": "output", "src": "r4", "seq": 1, "run_id": "r", "stream": "stdout"}
    half = relaybatch.MAX_BATCH_BYTES // 2 + 1
    assert batcher.keep(out, 0, half)
    assert not batcher.keep({**out, "seq": 2}, 0, half)  # (sent on its own, after the batch)
    assert batcher.take() is not None
    assert batcher.keep({**out, "seq": 2}, 0, half)


def test_a_relay_whose_ranks_all_died_leaves_and_is_not_named_for_them(session: Session) -> None:
    """Node 1's two ranks are killed between cells: its relay leaves on its own (exit 0), and
    the cluster is lost by a rank's death, not by a dead relay."""
    _run(session, "pass", n=2, nodes=2, relays="always")
    (live,) = session.live.values()
    cluster = live.cluster
    assert isinstance(cluster, ProcessCluster)
    relays = cluster.processes.relays  # type: ignore[attr-defined]
    for rank in (2, 3):
        pid = cluster.info[rank].pid
        assert pid is not None and pid > 1
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while relays.procs[1].poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert relays.procs[1].poll() == 0  # it left; the kernel did not end it
    assert relays.procs[0].poll() is None  # (node 0's ranks are alive: its relay stays)
    while cluster.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "rank" in cluster.lost and "relay" not in cluster.lost
