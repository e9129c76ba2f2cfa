"""What a node's ranks send alike goes up once through their relay (issue 26): identical lines
(``[ranks 0-7] text``, every rank's line still in the history) and identical stack dumps (the
hang diagnosis's groups). The relay is the real one; the first tests drive it with the real
protocol code from this process, the last through a Session with real rank processes.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster.fanbatch import relayed, unbatch
from jupyter_distributed.cluster.fancollapse import Shared
from jupyter_distributed.cluster.fanin import BadReduction
from jupyter_distributed.cluster.relayalike import STACKS_WAIT_S, Alike
from jupyter_distributed.cluster.relaybatch import Batcher
from jupyter_distributed.collapse import WINDOW
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.events import OutputLines, SharedLines, Stream
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import Signer, rank_name
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import session_in
from .relay_helpers import KEY, NODE_RANKS, Wire, history_of, router_of

LINE = "epoch 1 done"


def _start(wire: Wire, signers: dict[int, Signer], kind: str, fields: dict[str, Any]) -> None:
    """Each rank speaks first (the relay learns its connection), then the kernel sends
    ``fields`` (a cell, a stack request) to every rank, signed once."""
    relay = b""
    for r in NODE_RANKS:
        wire.ranks[r].send_multipart([bytes(f) for f in signers[r].pack({"type": "x"})])
        got = wire.at_kernel(timeout=30)  # (the relay process may start slowly when loaded)
        assert got is not None
        relay = got[0]
    names = [rank_name(r) for r in range(8)]  # (ranks 0-3 are another node's)
    message = wire.signer.pack_all({"type": kind, **fields}, names)
    wire.kernel.send_multipart([relay, *[bytes(f) for f in message]])
    for r in NODE_RANKS:
        assert wire.at_rank(r, timeout=30) is not None


def _batch(wire: Wire) -> dict[str, Any]:
    got = wire.at_kernel(timeout=30)
    assert got is not None
    header, _ = wire.signer.unpack(got[1:])
    assert (header["src"], header["type"]) == ("n1", "batch")
    return header


def test_the_same_line_of_a_nodes_ranks_goes_up_once_with_each_ranks_counter_and_time(
    wire: Wire,
) -> None:
    signers = {r: Signer(KEY, rank_name(r)) for r in NODE_RANKS}
    _start(wire, signers, "execute", {"run_id": "r1", "code": ""})
    t0, sent = time.time(), {}
    for r in NODE_RANKS:  # (the relay waits for the cell's ranks to write the same)
        out = {"type": "output", "run_id": "r1", "stream": "stdout"}
        frames = [bytes(f) for f in signers[r].pack({**out, "lines": [[t0 + r / 1000, LINE]]})]
        sent[rank_name(r)] = (Signer(KEY, "reader").check(frames)["seq"], t0 + r / 1000)
        wire.ranks[r].send_multipart(frames)
    mine = {"type": "output", "run_id": "r1", "stream": "stdout", "lines": [[t0, "4's own"]]}
    wire.ranks[4].send_multipart([bytes(f) for f in signers[4].pack(mine)])
    header = _batch(wire)
    (names, seqs, fields, times), *rest = header["each"]
    assert sorted(names) == sorted(sent)  # one entry for the four, each rank's counter
    assert [sent[n][0] for n in names] == seqs
    assert fields["lines"] == [[sent[names[0]][1], LINE]]
    assert times == [[sent[n][1]] for n in names[1:]]  # each other rank's own time
    # after its line, as texts and times (see relaybatch.compact)
    assert [(e[0], e[2]["texts"], e[2]["times"]) for e in rest] == [("r4", ["4's own"], [t0])]
    shared, one = relayed(header, lambda r: r // 4)
    assert isinstance(shared[4], Shared) and sorted(shared[4].ranks) == list(NODE_RANKS)
    assert one[:2] == (4, "r4")


def test_lines_written_apart_or_out_of_a_ranks_order_stay_each_ranks_own() -> None:
    batcher = Batcher(range(4))

    def out(rank: int, seq: int, t: float, text: str) -> dict[str, Any]:
        return {"type": "output", "src": f"r{rank}", "seq": seq, "run_id": "r", "stream": "stdout",
                "lines": [[t, text]]}  # fmt: skip

    for header in (
        out(0, 1, 10.0, "a"),
        out(1, 1, 10.0, "b"),  # rank 1's "b" came before its "a": its "a" cannot join rank 0's
        out(1, 2, 10.0, "a"),
        out(2, 1, 10.5, "a"),  # written 0.5 s later, by rank 2's own clock: not the same line
        out(3, 1, 10.01, "a"),  # joins rank 0's "a" (the first after its own last line)
        out(2, 2, 10.0, "b"),  # not rank 1's "b": rank 2 wrote a line after that one
    ):
        assert batcher.keep(header, 0, 100)
    each = batcher.take()["each"]  # type: ignore[index]
    ranks = [e[0] if isinstance(e[0], list) else [e[0]] for e in each]
    assert ranks == [["r0", "r3"], ["r1"], ["r1"], ["r2"], ["r2"]]
    texts = [e[2]["texts"][0] if len(e) == 3 else e[2]["lines"][0][1] for e in each]
    assert texts == ["a", "b", "a", "a", "b"]


def test_a_relay_shares_lines_only_for_its_own_nodes_ranks_with_each_ranks_times() -> None:
    out = {"type": "output", "run_id": "r", "stream": "stdout", "lines": [[1.0, "x"]]}
    batch = {"src": "n0", "type": "batch", "each": [[["r0", "r1"], [5, 6], out, [[1.5]]]]}
    assert unbatch(batch, lambda r: r // 2) == [([0, 1], [5, 6], out, ([1.5],))]
    with pytest.raises(BadReduction, match=r"relay n0 spoke for \['r1', 'r2'\] of another node"):
        unbatch({**batch, "each": [[["r1", "r2"], [5, 6], out, [[1.5]]]]}, lambda r: r // 2)
    with pytest.raises(BadReduction, match="without each rank's times"):
        unbatch({**batch, "each": [[["r0", "r1"], [5, 6], out, []]]}, lambda r: r // 2)
    done = {"type": "done", "run_id": "r", "status": "ok"}
    with pytest.raises(BadReduction, match="no output or stacks"):
        unbatch({**batch, "each": [[["r0", "r1"], [5, 6], done, None]]}, lambda r: r // 2)


def test_the_same_stacks_of_a_nodes_ranks_go_up_once(wire: Wire) -> None:
    signers = {r: Signer(KEY, rank_name(r)) for r in NODE_RANKS}
    _start(wire, signers, "stack_request", {"request_id": "q1"})
    frames = [["<cell 1>", 3, "<module>", "", "x()"]]
    threads = [{"name": "MainThread", "main": True, "frames": frames}]
    for r in NODE_RANKS:  # rank 7 stands elsewhere
        stacks = {"type": "stacks", "request_id": "q1", "stage": "", "threads": threads}
        if r == 7:
            stacks["threads"] = [{**threads[0], "frames": [["<cell 1>", 4, "<module>", "", "y()"]]}]
        wire.ranks[r].send_multipart([bytes(f) for f in signers[r].pack(stacks)])
    header = _batch(wire)
    entries = sorted(header["each"], key=lambda e: isinstance(e[0], list))
    assert [e[0] for e in entries] == ["r7", ["r4", "r5", "r6"]]
    assert entries[1][3] is None  # (no times: stacks)


def test_a_stack_request_some_ranks_never_answer_keeps_no_batch_waiting() -> None:
    now = [100.0]
    alike = Alike(range(4), clock=lambda: now[0])
    alike.sent({"type": "stack_request", "request_id": "q", "dst": ["r0", "r1"]})
    answer = {"type": "stacks", "src": "r0", "seq": 1, "request_id": "q", "threads": []}
    alike.kept(0, 0, answer)
    now[0] += 0.1
    assert alike.waits([["r0", 1, answer]]) == pytest.approx(STACKS_WAIT_S - 0.1)  # (rank 1)
    now[0] += STACKS_WAIT_S - 0.1  # rank 1 never answers (its GIL is held)
    assert alike.waits([["r0", 1, answer]]) is None
    alike.clear()
    alike.kept(0, 0, {**answer, "seq": 2})
    assert alike.waits([["r0", 2, answer]]) is None  # (nor any batch after)


def test_two_relays_lines_alike_show_once_and_each_rank_is_recorded(tmp_path: Path) -> None:
    store = Store(tmp_path / "history.sqlite")
    try:
        store.create_run(RunRecord("r", "local", 8, list(range(8))), {r: {} for r in range(8)})
        out = io.StringIO()
        view = CellView("r", out=out, err=out, ranks=range(8))
        nodes = [  # (each node's relay sent its ranks' line once; their clocks differ a little)
            SharedLines("r", Stream.STDOUT, (0, 1, 2, 3), (LINE,), [[5.0], [5.01], [5.0], [5.02]]),
            SharedLines("r", Stream.STDOUT, (4, 5, 6, 7), (LINE,), [[5.03]] * 4),
        ]
        for shared in nodes:
            store.append(events=[shared])
            view.on_events([shared])
        view.finish()
        assert out.getvalue().splitlines() == [f"[ranks 0-7] {LINE}"]
        stored = store.events_after(0, "r")
        lines = [(e["rank"], e["t"], e["text"]) for _, e in stored if e["kind"] == "output"]
        assert sorted(lines) == sorted(
            [(r, t[0], LINE) for n in nodes for r, t in zip(n.ranks, n.times, strict=True)]
        )
    finally:
        store.close()


@pytest.mark.parametrize(
    "times",
    [
        [[1.0] * 3, [1.5] * 3, [1.25] * 3],  # (each rank's lines of one read: one time)
        [[1.0, 1.1, 1.2], [1.5] * 3, [1.25, 1.25, 1.3]],  # (some read apart)
    ],
)
def test_shared_lines_read_back_as_each_ranks_own_lines(
    tmp_path: Path, times: list[list[float]]
) -> None:
    texts = ("a", "b b", "c")
    shared = SharedLines("r", Stream.STDOUT, (2, 0, 1), texts, times)
    read: list[list[tuple[Any, ...]]] = []
    for name, events in (("shared", [shared]), ("each", shared.per_rank())):
        store = Store(tmp_path / f"{name}.sqlite")
        try:
            store.create_run(RunRecord("r", "local", 3, [0, 1, 2]), {r: {} for r in range(3)})
            mine = OutputLines("r", 1, Stream.STDOUT, [(0.5, "before")])
            assert store.append([mine, *events, mine]) == 2 + 9
            got = store.events_after(0, "r")
            read.append(
                [(q, e["rank"], e["t"], e["text"]) for q, e in got if e["kind"] == "output"]
            )
            assert [e[3] for e in read[-1] if e[1] == 1] == ["before", *texts, "before"]
        finally:
            store.close()
    assert read[0] == read[1]  # (the same seqs, ranks, times and texts)


# -- through a Session: real ranks, a real relay ------------------------------------------


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _same_line(session: Session, folder: Path) -> tuple[list[str], list[tuple[Any, ...]], float]:
    """8 ranks behind one relay print the same line at about the same time, then their own
    lines: what the cell showed, the history, and how far apart (by the ranks' own clocks)
    the ranks wrote the line."""
    code = f"""
import pathlib, time
here = pathlib.Path({str(folder)!r})
here.mkdir(exist_ok=True)
(here / str(rank)).touch()
while len(list(here.iterdir())) < 8:  # (the ranks write the line at about the same time)
    time.sleep(0.002)
print({LINE!r}, flush=True)
time.sleep(0.3)
for i in range(40):
    print(rank, i)
"""
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=8), relays="always")
    session.run_cell(spec, code, {}, view=CellView(out=out, err=out))
    run_id = session.store.runs(limit=1)[0].id
    times = [e["t"] for _, e in session.store.events_after(0, run_id) if e.get("text") == LINE]
    spread = max(times) - min(times) if times else 0.0
    return out.getvalue().splitlines(), history_of(session.store, run_id), spread


def test_eight_ranks_printing_the_same_line_show_it_once_and_the_history_keeps_eight(
    session: Session, tmp_path: Path
) -> None:
    spreads = []
    for attempt in range(3):  # (a loaded machine may wake a rank late: the line is then its own)
        shown, history, spread = _same_line(session, tmp_path / f"at{attempt}")
        spreads.append(spread)
        if spread <= WINDOW / 2:
            break
    else:
        pytest.skip(f"the ranks never wrote the line within {WINDOW / 2}s: {spreads}")
    assert shown.count(f"[ranks 0-7] {LINE}") == 1
    assert not [line for line in shown if LINE in line and not line.startswith("[ranks 0-7]")]
    for r in range(8):  # distinct lines: each rank's own, in its order
        assert [s for s in shown if s.startswith(f"[rank {r}] ")] == [
            f"[rank {r}] {r} {i}" for i in range(40)
        ]
    assert [e[1] for e in history if e[3] == LINE] == list(range(8))  # every rank's line
    for r in range(8):
        mine = [e[3] for e in history if e[1] == r and e[0] == "output"]
        assert mine == [LINE, *(f"{r} {i}" for i in range(40))]
    assert router_of(session).intake.shared >= 2  # (some, at least, came up once for several)


def test_a_stacks_request_through_a_relay_groups_the_same_stacks(
    session: Session, tmp_path: Path
) -> None:
    spec = Spec(layout=Layout(nodes=2, procs_per_node=4), relays="always", timeout=60)
    session.run_cell(spec, "pass", {}, view=CellView(out=io.StringIO(), err=io.StringIO()))
    router = router_of(session)
    diagnosis: list[str] = []
    marker = tmp_path / "started"

    def ask() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not marker.exists():
            time.sleep(0.05)
        time.sleep(0.5)  # (the ranks stand in the cell)
        diagnosis.extend(session.stacks())
        (live,) = session.live.values()
        live.cluster.stop()

    before = router.intake.shared
    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    code = f"import pathlib, time\nif rank > 0:\n    pathlib.Path({str(marker)!r}).touch()\n"
    with pytest.raises(RunFailed):
        session.run_cell(
            spec,
            code + "    time.sleep(30)",
            {},
            view=CellView(out=io.StringIO(), err=io.StringIO()),
        )
    thread.join()
    assert "ranks 1, 2, 3, 4, 5, 6, 7 are at cell line 4: time.sleep(30)" in diagnosis[0]
    assert "--- ranks 1, 2, 3, 4, 5, 6, 7:" in diagnosis[0]  # one stack for the seven
    # node 0's ranks 1-3 and node 1's 4-7 answer alike: those that answer within the relay's
    # wait go up once for them all (all 7 unless a rank is slow to answer on a loaded machine)
    assert router.intake.shared - before >= 2
