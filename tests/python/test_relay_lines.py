"""A relay's batch of its ranks' own lines, taken by the kernel as one event (issue 26): each
rank's counter checked, every line recorded as the rank's own (in order, with its time), and
shown as each message alone would be, without a message decoded per rank."""

from __future__ import annotations

import io
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster import intake
from jupyter_distributed.cluster.decode import decode
from jupyter_distributed.cluster.relaybatch import Batcher
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.display import CellView
from jupyter_distributed.events import OutputBatch, OutputLines, Stream
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import Buffer, Signer, rank_name

RUN = "r"
KEY = secrets.token_bytes(32)
# each rank's messages (stream, [(time, text), ...]), in the order they came up to node 0
MESSAGES: list[tuple[int, str, list[tuple[float, str]]]] = [
    (0, "stdout", [(1.0, "zero a"), (1.0, "zero b")]),
    (1, "stderr", [(1.25, "one: été")]),
    (2, "stdout", [(1.5, "two a"), (1.5, "two b\nstill two b"), (1.5, "two c")]),
    (3, "stdout", [(2.0, "three a"), (2.5, "three b")]),  # (read apart: two times)
    (0, "stdout", [(3.0, "zero c")]),  # (rank 0 again in the same batch)
    (1, "stdout", []),
]


def _router(tmp_path: Path, name: str) -> Iterator[tuple[Router, Store]]:
    layout = Layout(nodes=2, procs_per_node=4)
    info = {r: RankInfo(r, "here", 100 + r, "running", layout.coords(r)) for r in range(8)}
    store = Store(tmp_path / f"{name}.sqlite")
    router = Router(f"jd-{name}", store, info, KEY, lambda: None, print, Transport.ipc())
    try:
        store.create_run(RunRecord(RUN, "local", 8, list(range(8))), {r: {} for r in range(8)})
        router.ranks.begin(RUN)
        yield router, store
    finally:
        router.listener.close()
        router._loop.sock.close(linger=0)
        router._endpoint.ctx.term()
        store.close()


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[tuple[Router, Store], tuple[Router, Store]]]:
    """A kernel that takes node 0's batch, and one that takes each rank's message alone."""
    batched, alone = _router(tmp_path, "batched"), _router(tmp_path, "alone")
    yield next(batched), next(alone)
    for done in (batched, alone):
        next(done, None)


def _signed(signers: dict[int, Signer]) -> list[tuple[int, list[Buffer]]]:
    """Each message as its rank signs it."""
    out: list[tuple[int, list[Buffer]]] = []
    for rank, stream, lines in MESSAGES:
        fields = {"type": "output", "run_id": RUN, "stream": stream, "lines": lines}
        out.append((rank, [bytes(f) for f in signers[rank].pack(fields)]))
    return out


def _batch(signed: list[tuple[int, list[Buffer]]]) -> list[Buffer]:
    """Node 0's relay: each rank's verified message kept, the batch signed as the relay."""
    batcher, relay = Batcher(range(4)), Signer(KEY, "n0")
    checker = Signer(KEY, "relay-n0")
    for _rank, frames in signed:
        header = checker.check(frames)
        assert batcher.keep(header, 0, len(frames[1]))
    fields = batcher.take()
    assert fields is not None
    return [bytes(f) for f in relay.pack(fields)]


def _output(store: Store) -> list[tuple[Any, ...]]:
    got = store.events_after(0, RUN)
    return [(q, e["rank"], e["stream"], e["t"], e["text"]) for q, e in got if e["kind"] == "output"]


def _shown(router: Router) -> list[Any]:
    events: list[Any] = []
    while not router.inbox.empty():
        events += getattr(router.inbox.get_nowait(), "events", ())
    return events


def test_a_batch_of_ranks_own_lines_is_one_event_recorded_as_each_message_alone(
    two: tuple[tuple[Router, Store], tuple[Router, Store]], monkeypatch: pytest.MonkeyPatch
) -> None:
    (batched, store), (alone, alone_store) = two
    signed = _signed({r: Signer(KEY, rank_name(r)) for r in range(4)})
    for rank, frames in signed:  # (the reference: each message straight from its rank)
        alone._take_batch([(f"rank{rank}".encode(), frames)])
    decoded: list[int] = []
    real = decode

    def counted(*args: Any) -> Any:
        decoded.append(args[1])
        return real(*args)

    monkeypatch.setattr(intake, "decode", counted)

    batched._take_batch([(b"relay0", _batch(signed))])

    assert decoded == []  # no message decoded on its own
    (event,) = _shown(batched)  # one event for the batch's messages
    assert isinstance(event, OutputBatch)
    assert list(event.ranks) == [0, 1, 2, 3, 0]  # (rank 1's empty message: nothing)
    assert batched.batched == 6
    expected = [(rank, stream, t, text) for rank, stream, lines in MESSAGES for t, text in lines]
    got = _output(store)
    assert [e[1:] for e in got] == expected  # each rank's lines, in order, with their times
    assert got == _output(alone_store)  # the same seqs as each message taken alone
    assert [list(batched.ranks.info[r].lines) for r in range(4)] == [
        list(alone.ranks.info[r].lines) for r in range(4)
    ]


def test_a_replayed_message_in_a_batch_is_refused_and_the_others_recorded(
    two: tuple[tuple[Router, Store], tuple[Router, Store]],
) -> None:
    (router, store), _ = two
    signers = {r: Signer(KEY, rank_name(r)) for r in range(4)}
    signed = _signed(signers)
    router._take_batch([(b"relay0", _batch(signed[:1]))])  # rank 0's first message
    router._take_batch([(b"relay0", _batch(signed))])  # ... again, with the others'
    texts = [e[4] for e in _output(store)]
    assert texts.count("zero a") == 1  # (its replay refused)
    assert texts.count("zero c") == 1 and texts.count("two c") == 1


@pytest.mark.parametrize("collapse", [True, False])
def test_a_batch_shows_as_each_message_alone_would(collapse: bool) -> None:
    both = [(0, "same line"), (1, "one's own"), (4, "same line"), (5, "five's own")]
    batch = OutputBatch(
        RUN,
        [rank for rank, _ in both],
        [Stream.STDOUT] * len(both),
        [[text] for _, text in both],
        [[1.0 + rank / 100] for rank, _ in both],
    )
    shown = []
    for events in ([batch], batch.per_rank()):
        out = io.StringIO()
        view = CellView(RUN, out=out, err=out, ranks=range(8), collapse=collapse)
        view.on_events(events)
        view.finish()
        shown.append(out.getvalue())
    assert shown[0] == shown[1]
    if collapse:
        assert "[ranks 0,4] same line" in shown[0].splitlines()
    assert all(isinstance(e, OutputLines) for e in batch.per_rank())


@pytest.mark.parametrize(
    "bad",
    [
        {"texts": "a", "times": [1.0]},  # (texts no list)
        {"texts": ["a", "b"], "times": [1.0, 2.0, 3.0]},  # (times that do not match)
        {"lines": [[1.0]]},  # (a line without its text)
        {"texts": ["a"], "times": [1.0], "stream": "stdin"},
        {"texts": [7], "times": [1.0]},  # (a text no string)
        {"texts": ["a"], "times": ["noon"]},  # (a time no number)
        {"lines": [[1.0, None]]},
    ],
)
def test_a_batch_with_a_malformed_message_is_refused_whole(
    two: tuple[tuple[Router, Store], tuple[Router, Store]], bad: dict[str, Any]
) -> None:
    (router, store), _ = two
    refused: list[str] = []
    router._refusals.reject = lambda where, cause: refused.append(str(cause))  # type: ignore[method-assign]
    good = {"type": "output", "run_id": RUN, "stream": "stdout", "texts": ["ok"], "times": [1.0]}
    each = [["r0", 1, good], ["r1", 1, {**good, "texts": None, "times": None, **bad}]]
    frames = Signer(KEY, "n0").pack({"type": "batch", "each": each})
    router._take_batch([(b"relay0", [bytes(f) for f in frames])])
    assert _output(store) == []
    assert len(refused) == 1 and "output" in refused[0] and "\n" not in refused[0]
