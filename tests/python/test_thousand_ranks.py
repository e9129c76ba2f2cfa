"""A thousand ranks from one notebook (issue 26), with fake ranks: the kernel is real (the
session, the local backend's plan, the router, its control channel and cell sockets, the history
store), the ranks are ``benchmarks/fake_ranks.py``'s, four helper processes serving 250 ranks
each with the real protocol code. Each answers a cell with what reached it. A cell reaches every
rank, ``--targets`` and ``--push`` reach exactly the ranks named, and the kernel's descriptors
stay within the bound: in a star, the README's (3 per rank and about 30 more); through 8 node
relays (``Distributed.relays = "always"``, real relay processes), issue 26's (2 per relay + 16);
through the same relays behind 3 aggregators (``"tree"``: a second level, real aggregator
processes), the kernel holds one connection, the root aggregator's, and takes one reduction
per cell."""

from __future__ import annotations

import importlib
import io
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_distributed.backends.local.backend as local
from jupyter_distributed import textviews
from jupyter_distributed.backends.local.options import LocalOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import session_in
from .relay_helpers import router_of

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
FakeRanks: Any = importlib.import_module("bench_scale").FakeRanks

pytestmark = pytest.mark.timeout(300)

N = 1000
NODES = 8  # behind relays: 8 nodes of 125 ranks, each node's relay a real process
AGGREGATORS = 3  # "tree": 3 aggregators above them (about √8 relays each)


@pytest.fixture(scope="module", params=["star", "relays", "tree"])
def topology(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, topology: str) -> Iterator[Session]:
    folder = tmp_path_factory.mktemp("thousand")
    FakeRanks.folder = folder
    real = local.LocalProcesses
    local.LocalProcesses = FakeRanks  # type: ignore[misc]
    try:
        yield from session_in(folder)
    finally:
        local.LocalProcesses = real  # type: ignore[misc]


def run(
    session: Session, topology: str, code: str, ns: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    nodes = NODES if topology != "star" else 1
    spec = Spec(
        layout=Layout(nodes=nodes, procs_per_node=N // nodes),
        options=LocalOptions(oversubscribe=True),
        relays={"star": "auto", "relays": "always", "tree": "tree"}[topology],
        **kwargs,
    )
    out = io.StringIO()
    return session.run_cell(spec, code, ns or {}, view=CellView(out=out, err=out))


def descriptors() -> int:
    return sum(1 for _ in Path("/proc/self/fd").iterdir())


def test_a_cell_reaches_each_of_a_thousand_ranks(session: Session, topology: str) -> None:
    before = descriptors()
    values = run(session, topology, "pass").values
    assert values == {r: f"{r}: pass (0 pushed bytes)" for r in range(N)}
    (live,) = session.live.values()
    if topology == "star":  # each rank's control channel and cell socket
        assert live.cluster.peer_count() == 2 * N
        assert descriptors() - before <= 3 * N + 30
    else:  # one connection per node's relay (or the root aggregator's): 2 per relay + 16
        assert live.cluster.peer_count() == (NODES if topology == "relays" else 1)
        assert descriptors() - before <= 2 * NODES + 16


def test_targets_reach_the_ranks_named_and_no_other(session: Session, topology: str) -> None:
    targets = (0, 499, 500, 998, 999)
    values = run(session, topology, "rank", targets=targets).values
    assert values == {r: f"{r}: rank (0 pushed bytes)" for r in targets}
    values = run(session, topology, "again").values  # and the next cell reaches all of them again
    assert sorted(values) == list(range(N))
    apart = (0, 500, 999)  # one per node relay and aggregator: a message per rank
    values = run(session, topology, "apart", targets=apart).values
    assert values == {r: f"{r}: apart (0 pushed bytes)" for r in apart}


def test_a_push_reaches_every_rank_it_is_sent_to(session: Session, topology: str) -> None:
    ns = {"blob": b"x" * 10_000}
    targets = tuple(range(0, N, 7))
    values = run(session, topology, "len(blob)", ns, push=("blob",), targets=targets).values
    assert sorted(values) == list(range(0, N, 7))
    sizes = {v.rsplit("(", 1)[1] for v in values.values()}
    assert len(sizes) == 1  # the same pickled bytes everywhere
    assert int(sizes.pop().split()[0]) >= 10_000


def recorded(session: Session, run_id: str) -> tuple[int, dict[int, list[str]]]:
    """The history's rows of a run, and each rank's states as its readers get them back (the
    live stream the panel follows: one rank event per state, in order)."""
    store = session.store
    sql = "SELECT COUNT(*) FROM events WHERE run=(SELECT key FROM run_keys WHERE id=?)"
    ((rows,),) = store._query(sql, (run_id,))  # (the rows themselves: what a cell costs)
    states: dict[int, list[str]] = {}
    seq = 0
    while page := store.events_after(seq, run_id):
        for seq, event in page:  # noqa: B007 (the last one pages on)
            if event["kind"] == "rank":
                states.setdefault(event["rank"], []).append(event["state"])
    return rows, states


def rank_rows(session: Session, run_id: str) -> int:
    ((count,),) = session.store._query("SELECT COUNT(*) FROM ranks WHERE run_id=?", (run_id,))
    return int(count)


def test_a_trivial_cell_through_relays_is_recorded_in_rows_per_node(
    session: Session, topology: str
) -> None:
    """A relay's reduction is one row per node of the history, not one or two per rank; every
    rank's states read back as they were, and the ranks' rows (the panel's) say done."""
    outcome = run(session, topology, "None")
    assert outcome.state.value == "completed" and not outcome.values
    (last,) = session.store.runs(limit=1)
    rows, states = recorded(session, last.id)
    assert states == {r: ["running", "done"] for r in range(N)}
    assert {r.state for r in session.store.ranks(last.id)} == {"done"}
    if topology != "star":  # a node's reduction may come in parts: within 4 per node
        assert rows <= 4 * NODES + 4
        assert rank_rows(session, last.id) <= 4 * NODES  # the ranks' rows: spans, per node
    else:
        assert rows >= 2 * N


def test_one_failing_rank_among_a_thousand_is_its_own(session: Session, topology: str) -> None:
    """Rank 637 fails: its failure is its own event (rank, host, cause), it alone is failed in
    the panel's rows and in the history's states, and ``%distributed runs`` says the run
    failed; the 999 others are done, recorded compactly through relays."""
    with pytest.raises(RunFailed) as failed:
        run(session, topology, "fail 637")
    assert [(f.rank, f.ename, f.evalue) for f in failed.value.failures] == [
        (637, "ValueError", "rank 637 failed on purpose")
    ]
    (last,) = session.store.runs(limit=1)
    assert last.id == failed.value.run_id
    rows, states = recorded(session, last.id)
    assert states[637][-1] == "failed"
    assert all(states[r] == ["running", "done"] for r in range(N) if r != 637)
    ranks = {r.rank: r.state for r in session.store.ranks(last.id)}
    assert ranks == {r: "failed" if r == 637 else "done" for r in range(N)}
    errors = [e for _, e in session.store.events_after(0, last.id, 10_000) if e["kind"] == "error"]
    assert [(e["failure"]["rank"], e["failure"]["ename"]) for e in errors] == [(637, "ValueError")]
    assert errors[0]["failure"]["host"]  # named with its host
    assert last.state.value == "failed"
    assert "failed" in textviews.runs(session.store, 1).splitlines()[1]
    if topology != "star":
        assert rows <= 4 * NODES + 10
        assert rank_rows(session, last.id) <= 4 * NODES + 3  # rank 637 alone


def test_a_ping_stops_at_the_relays_and_reaches_ranks_held_directly(
    session: Session, topology: str
) -> None:
    """The kernel pings its connections every 2 s (a rank ignores a ping). Behind relays a
    ping signed once for all named every rank (90 kB at 10,000 ranks) and each relay copied it
    to each of its ranks; now it goes to the relays only. In a star each rank still gets one."""
    run(session, topology, "None")  # (the cluster is up)
    router = router_of(session)
    router.call(lambda: setattr(router, "_last_ping", 0.0))  # (a ping at the next tick)
    while router._last_ping == 0.0:  # (queued before anything this test sends next)
        time.sleep(0.01)
    run(session, topology, "None")  # (a round trip after it: the ping is delivered by then)
    counts = {int(v.split()[-1]) for v in run(session, topology, "control").values.values()}
    if topology == "star":
        assert min(counts) >= 1
    else:
        assert counts == {0}


def test_a_cells_end_reaches_the_kernel_as_one_reduction_with_one_span(
    session: Session, topology: str
) -> None:
    """Through aggregators a trivial cell's 1,000 ends reach the kernel as one reduction with
    one span of ranks (``[0, 999]``), merged by the root aggregator from the others': what the
    kernel takes per cell does not grow with the nodes, the ranks or the aggregators. (A cell
    held past the hold rules under load may come in parts: never more than one per
    aggregator.)"""
    if topology != "tree":
        pytest.skip("aggregators only")
    run(session, topology, "None")  # (the cluster is up)
    intake = router_of(session).intake
    taken: list[tuple[str, int]] = []
    real = intake._take_relayed

    def counted(into: Any, peer: Any, header: dict[str, Any]) -> None:
        if header.get("type") == "dones":
            taken.append((str(header["run_id"]), len(header.get("ranges") or ())))
        real(into, peer, header)

    intake._take_relayed = counted  # type: ignore[method-assign,assignment]
    try:
        per_cell = []
        for _ in range(3):
            outcome = run(session, topology, "None")
            assert outcome.state.value == "completed"
            (last,) = session.store.runs(limit=1)
            mine = [spans for run_id, spans in taken if run_id == last.id]
            assert len(mine) <= AGGREGATORS and sum(mine) <= AGGREGATORS, mine
            per_cell.append((len(mine), sum(mine)))
        assert min(per_cell) == (1, 1), per_cell  # one message, one span
    finally:
        del intake._take_relayed
