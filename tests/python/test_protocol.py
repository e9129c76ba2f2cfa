"""The kernel↔rank protocol without sockets: every message's wire round trip, the signed
frames, the kernel's pure ``decode``, the tagged lines and the frame codec."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from typing import Any

import pytest

from jupyter_distributed.cluster.decode import Decoded, Ranks, decode
from jupyter_distributed.cluster.inbox import (
    Cleared,
    Exited,
    Finished,
    LiveLine,
    Ready,
    SetupFailed,
    StacksReply,
    StageReached,
)
from jupyter_distributed.events import (
    DisplayEvent,
    ErrorEvent,
    MetricEvent,
    OutputEvent,
    OutputLines,
    RankEvent,
    RankState,
    Stream,
)
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import RankCoords
from jupyter_distributed.protocol import tagged
from jupyter_distributed.protocol.commands import (
    Execute,
    Interrupt,
    Ping,
    Reply,
    Shutdown,
    StackRequest,
)
from jupyter_distributed.protocol.figures import FigureConfig
from jupyter_distributed.protocol.frames import pack_frames, unpack_frames, write_frames
from jupyter_distributed.protocol.header import BadHeader, Message
from jupyter_distributed.protocol.messages import KINDS, parse
from jupyter_distributed.protocol.metrics import pack_samples
from jupyter_distributed.protocol.reports import (
    ClearOutput,
    Display,
    Done,
    Fatal,
    Heartbeat,
    Hello,
    Live,
    Metrics,
    Output,
    Prompt,
    Resumed,
    Stacks,
    Stage,
    State,
)
from jupyter_distributed.protocol.signing import BadMessage, Signer

FAILURE = {
    "rank": 1,
    "t": 5.0,
    "host": "h",
    "pid": 7,
    "ename": "ValueError",
    "evalue": "bad",
    "traceback": ["Traceback (most recent call last):\n", "ValueError: bad\n"],
    "kind": "exception",
}

THREAD = {
    "name": "MainThread",
    "main": True,
    "frames": [["<cell r1>", 3, "<module>", "", "dist.barrier()"]],
}

EXAMPLES: list[Message] = [
    Execute("r1", "print(rank)"),
    Execute("r1", "x", ("a", "b"), {"path": "shm-file", "sizes": [3, 4]}),
    Execute("r1", "x", display_max=1024),
    Execute("r1", "x", figures=FigureConfig(("retina", "svg"), {"figure.dpi": 72}, {})),
    Live("r1", "stderr", " 40%|####      | 4/10"),
    Live("r1", "stdout", "100%", final=True),
    Display("r1", {"text/html": "<b>x</b>", "text/plain": "x"}),
    Display("r1", {"image/png": "iVBORw0KGgo="}, {"image/png": {"width": 4}}, "d1", True, False),
    Display("r1", {"text/plain": "42"}, result=True),
    ClearOutput("r1", wait=True),
    Interrupt(),
    Interrupt("r1"),
    Shutdown(),
    Ping(),
    Hello(2, "host-a", 1234, "3.11.7", {"rank": 2, "local_rank": 0}),
    Fatal("MPI could not start"),
    State("r1"),
    Output("r1", "stdout", [[1.5, "hello"], [1.6, "world"]]),  # type: ignore[list-item]
    Output("", "stderr", [[1.5, "before the run"]]),  # type: ignore[list-item]
    Metrics("r1", 3),
    Metrics("r1", samples=[[1.0, {"loss": 0.5}]]),  # type: ignore[list-item]
    Heartbeat("r1", 10.0, 99.5, 120.25),
    Heartbeat("", 10.0, 1.0, 2.0, gpu_util=50.0, gpu_mem_mb=1024.0),
    Done("r1", "ok", value="42"),
    Done("r1", "error", FAILURE, None, {"y": "name 'y' is not defined on rank 1"}),
    StackRequest("req-1"),
    Stage("init_process_group", 4321, "rendezvous at 127.0.0.1:29500"),
    Stacks("req-1", [THREAD], "ready"),
    Execute("r1", "breakpoint()", stdin=True, break_rank=1),
    Execute("r1", "", debug=True, stdin=True),
    Prompt("r1", "(Pdb rank 1) ", debugger=True),
    Prompt("r1", "Password: ", password=True),
    Reply("r1", "p x"),
    Reply("r1", stop=True),
    Reply("r1", eof=True),
    Resumed("r1"),
]


def _wire(message: Message) -> dict[str, Any]:
    """The header as the other side reads it: through JSON."""
    header: dict[str, Any] = json.loads(json.dumps(message.to_header()))
    return header


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_survives_its_wire_form(message: Message) -> None:
    header = _wire(message)
    assert header["type"] == message.kind
    assert type(message).from_header(header) == message
    assert parse(header) == message


def test_every_kind_has_a_round_trip_example() -> None:
    assert {m.kind for m in EXAMPLES} == set(KINDS)


def test_signed_frames_carry_a_message_and_refuse_tampering_and_replays() -> None:
    sender, receiver = Signer(b"k" * 32, "r1"), Signer(b"k" * 32, "k")
    frames = sender.pack(Done("r1", "ok", value="1").to_header(), [b"pulled"])
    header, buffers = receiver.unpack(frames)
    assert parse(header) == Done("r1", "ok", value="1")
    assert [bytes(b) for b in buffers] == [b"pulled"]
    with pytest.raises(BadMessage, match="replayed"):
        receiver.unpack(frames)
    forged = sender.pack(Shutdown().to_header())
    forged[1] = bytes(forged[1]).replace(b"shutdown", b"interrupt")
    with pytest.raises(BadMessage, match="bad signature"):
        receiver.unpack(forged)
    with pytest.raises(BadMessage, match="bad signature"):
        Signer(b"x" * 32, "k").unpack(sender.pack(Ping().to_header()))


@pytest.mark.parametrize("key_bytes", [16, 32, 64, 65, 200])
def test_a_signer_hashes_its_key_once_and_signs_as_hmac_sha256(
    key_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26: a message's signature costs no setup of the key (its padded states are
    hashed once per signer), and is still HMAC-SHA256 of the header and the buffers' digests,
    as Jupyter's protocol and the ranks of an earlier release sign (a key longer than
    SHA-256's block too)."""
    key = bytes(range(key_bytes))
    sender, receiver = Signer(key, "r1"), Signer(key, "k")
    hashed: list[str] = []
    real_sha256, real_hmac = hashlib.sha256, hmac.digest

    def sha256(*args: Any) -> Any:
        hashed.append("sha256")
        return real_sha256(*args)

    def hmac_digest(*args: Any) -> bytes:
        hashed.append("hmac")
        return real_hmac(*args)

    monkeypatch.setattr(hashlib, "sha256", sha256)
    monkeypatch.setattr(hmac, "digest", hmac_digest)
    sent = [sender.pack(Done("r1", "ok", value=str(i)).to_header()) for i in range(20)]
    for frames in sent:
        receiver.unpack(frames)
    assert hashed == []  # (no key hashed per message, sent or checked)
    monkeypatch.undo()
    pulled = [b"pulled", b"x" * 3000]
    frames = sender.pack(Done("r1", "ok").to_header(), pulled)
    signed = bytes(frames[1]) + b"".join(hashlib.sha256(b).digest() for b in pulled)
    assert frames[0] == hmac.new(key, signed, "sha256").hexdigest().encode()
    assert receiver.unpack(frames)[1] == pulled


def test_bad_headers_are_refused_and_unknown_kinds_ignored() -> None:
    with pytest.raises(BadHeader, match="'done'"):
        parse({"type": "done", "status": "ok"})  # no run_id
    with pytest.raises(BadHeader):
        parse({"type": "output", "run_id": "r", "stream": "stdin", "lines": []})
    with pytest.raises(BadHeader):
        parse({"type": "heartbeat", "t": "soon", "cpu": 1, "rss_mb": 1})
    assert parse({"type": "stack_dump", "run_id": "r"}) is None  # a newer rank's kind


def _ranks() -> Ranks:
    coords = RankCoords(0, 0, 0, 0, 0, 0)
    return Ranks({r: RankInfo(r, "h", None, "starting", coords) for r in (0, 1)})


def test_decode_hello_and_fatal_become_inbox_items() -> None:
    ranks = _ranks()
    decoded = decode(ranks, 1, Hello(1, "node-b", 99), [])
    assert decoded.events == [] and decoded.item == Ready(1)
    assert (ranks.info[1].host, ranks.info[1].pid, ranks.info[1].state) == ("node-b", 99, "idle")
    assert decode(ranks, 0, Fatal("no MPI"), []).item == SetupFailed(0, "no MPI")
    assert decode(ranks, 7, Hello(7, "x", 1), []).item is None  # not one of our ranks


def test_a_second_hello_from_a_rank_that_was_up_loses_the_cluster() -> None:
    """A launcher that retried a rank (a requeued Slurm task, a restarted Ray actor) started a
    new process: the old one's variables are gone, so the run fails naming the old process."""
    ranks = _ranks()
    decode(ranks, 1, Hello(1, "node-b", 99), [])
    ranks.begin("run-1")
    again = decode(ranks, 1, Hello(1, "node-c", 123), [])
    assert isinstance(again.item, Exited)
    failure = again.item.failure
    assert (failure.rank, failure.host, failure.pid, failure.ename) == (
        1, "node-b", 99, "RankRestarted"
    )  # fmt: skip
    assert "node-c (pid 123)" in failure.summary and "run the cell again" in failure.summary
    assert again.events == [ErrorEvent("run-1", failure)]
    assert ranks.info[1].state == "failed"


def test_decode_stage_and_stacks_become_inbox_items() -> None:
    ranks = _ranks()
    decoded = decode(ranks, 1, Stage("init_process_group", 55, "at h:1"), [])
    assert decoded.item == StageReached(1, "init_process_group", 55, "at h:1")
    assert ranks.info[1].pid == 55  # a rank that never said hello can still be signalled
    item = decode(ranks, 1, Stacks("q", [THREAD], "ready"), []).item
    assert isinstance(item, StacksReply) and item.request_id == "q"
    where = item.stacks.where
    assert where is not None and where.cell_line == 3 and where.cell_text == "dist.barrier()"
    bad = decode(ranks, 0, Stacks("q", [{"frames": [["f", "x", "g"]]}]), []).item
    assert isinstance(bad, StacksReply) and bad.stacks.source == "none" and bad.stacks.error


def test_decode_keeps_early_output_for_the_run_that_begins() -> None:
    ranks = _ranks()
    assert decode(ranks, 0, Output("", "stdout", [(1.0, "early")]), []).events == []
    assert ranks.begin("r1") == [OutputEvent("r1", 0, 1.0, Stream.STDOUT, "early")]
    decoded = decode(ranks, 1, Output("", "stderr", [(2.0, "a"), (2.1, "b")]), [])
    (lines,) = decoded.events  # a message's lines, one event for all
    assert lines == OutputLines("r1", 1, Stream.STDERR, [(2.0, "a"), (2.1, "b")])
    assert isinstance(lines, OutputLines) and lines.events() == [
        OutputEvent("r1", 1, 2.0, Stream.STDERR, "a"),
        OutputEvent("r1", 1, 2.1, Stream.STDERR, "b"),
    ]


def test_decode_metrics_checks_values_and_warns_once_per_rank() -> None:
    ranks = _ranks()
    ranks.begin("r1")
    batch = pack_samples([(1.0, {"loss": 0.5, "tag": "x"}), (2.0, {"loss": 0.25, "tag": "y"})])
    events = decode(ranks, 0, Metrics("r1", 2), [batch]).events
    assert events[1:] == [
        MetricEvent("r1", 0, 1.0, {"loss": 0.5}),
        MetricEvent("r1", 0, 2.0, {"loss": 0.25}),
    ]
    assert isinstance(events[0], OutputEvent) and "'x' is not a number" in events[0].text
    assert decode(ranks, 0, Metrics("r1", 1), [b"not a pickle"]).events == []
    beat = decode(ranks, 1, Heartbeat("r1", 3.0, 50.0, 10.0, gpu_mem_mb=5.0), []).events
    assert beat == [
        MetricEvent(
            "r1", 1, 3.0, {"sys.cpu_percent": 50.0, "sys.rss_mb": 10.0, "sys.gpu_mem_mb": 5.0}
        )
    ]


def test_decode_done_records_result_failure_and_state() -> None:
    ranks = _ranks()
    ranks.begin("r1")
    assert isinstance(decode(ranks, 1, State("r1"), []).events[0], RankEvent)
    assert ranks.info[1].state == "running"
    done = Done("r1", "error", FAILURE, "3")
    decoded = decode(ranks, 1, done, [b"p"])
    result, error, state = decoded.events
    assert isinstance(result, OutputEvent) and result.stream is Stream.RESULT and result.text == "3"
    assert isinstance(error, ErrorEvent) and error.failure.ename == "ValueError"
    assert isinstance(state, RankEvent) and state.state is RankState.FAILED
    assert decoded.item == Finished(1, done, (b"p",))
    assert ranks.info[1].state == "idle"
    # rank 0's cell ended before its state was sent: its end says it ran; no details: a failure
    running, error, failed = decode(ranks, 0, Done("r1", "error"), []).events
    assert isinstance(running, RankEvent) and running.state is RankState.RUNNING
    assert isinstance(error, ErrorEvent) and error.failure.ename == "RankError"
    assert isinstance(failed, RankEvent) and failed.state is RankState.FAILED


def test_decode_live_lines_and_displays() -> None:
    ranks = _ranks()
    ranks.begin("r1")
    live = decode(ranks, 1, Live("r1", "stderr", " 40%|####      | 4/10"), [])
    assert live.events == [MetricEvent("r1", 1, live.events[0].t, {"progress": 0.4})]
    assert live.item == LiveLine("r1", 1, "stderr", " 40%|####      | 4/10")
    final = decode(ranks, 1, Live("r1", "stderr", "100%|##########| 10/10", True), [])
    assert final.item is None
    assert [type(e) for e in final.events] == [MetricEvent, OutputEvent]
    png = "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA10dzkAAA"  # a 640×480 PNG's first bytes
    shown = decode(ranks, 0, Display("r1", {"image/png": png, "text/plain": "f"}), []).events
    assert isinstance(shown[0], DisplayEvent) and shown[0].mark == "image/png 640×480"
    assert decode(ranks, 0, Live("", "stdout", "between runs"), []).events == []
    assert decode(ranks, 1, ClearOutput("r1", True), []) == Decoded(item=Cleared("r1", 1, True))


def test_figure_settings_keep_what_a_rank_can_use() -> None:
    read = FigureConfig.from_json
    assert read(None) == read({}) == FigureConfig(("png",), {}, {"bbox_inches": "tight"})
    assert read({"formats": "SVG"}).formats == ("svg",)
    assert read({"formats": ["tiff", "retina", "png", "retina"]}).formats == ("retina", "png")
    assert read({"formats": ["tiff"]}).formats == ("png",)
    odd = read({"rc": {"figure.figsize": (6, 4), "axes.prop_cycle": object()}, "print_kwargs": {}})
    assert (odd.rc, odd.print_kwargs) == ({"figure.figsize": [6, 4]}, {})


def test_tagged_lines_round_trip() -> None:
    line = tagged.encode_output(3, "stderr", 12.5, "a | b")
    assert tagged.decode("2026-01-01 " + line) == (3, tagged.Tag.STDERR, "12.500|a | b")
    assert tagged.decode_output("12.500|a | b") == (12.5, "a | b")
    assert tagged.decode(tagged.encode(0, tagged.Tag.DONE, "ok")) == (0, tagged.Tag.DONE, "ok")
    assert tagged.decode("##jd|x|o|not a rank") is None
    assert tagged.decode("an ordinary line") is None


def test_frames_round_trip_and_refuse_truncation() -> None:
    frames = [b"", b"abc", bytes(range(256)) * 10]
    assert unpack_frames(pack_frames(frames)) == frames
    out = io.BytesIO()
    write_frames(out, [memoryview(b"xyz"), b"q"])
    assert unpack_frames(out.getvalue()) == [b"xyz", b"q"]
    with pytest.raises(ValueError, match="truncated"):
        unpack_frames(pack_frames(frames)[:-1])


def test_bundle_marks_and_the_cap() -> None:
    from jupyter_distributed.protocol.bundles import capped, mark

    assert mark({"text/html": "<b>x</b>", "text/plain": "x"}) == "text/html 8 B"
    assert mark({"text/plain": "42\nmore"}) == "text/plain 42"
    small = {"text/plain": "x"}
    assert capped(small, 10, 0) is small
    note = capped({"text/html": "x" * 2000}, 1000, 3)
    assert list(note) == ["text/plain"] and note["text/plain"].startswith("[rank 3] a display")
    assert "--display-max-mb" in note["text/plain"]


def test_carriage_returns_show_what_a_notebook_shows() -> None:
    from jupyter_distributed.worker.capture import visible

    assert visible("\r 10%|#\r 20%|##") == " 20%|##"
    assert visible("done\r") == "done"
    assert visible("plain") == "plain"


@pytest.mark.parametrize(
    "lines", [[[1.0, None]], [["noon", "a"]], [[1.0]], [[1.0, "a", "b"]], ["a"]]
)
def test_output_lines_that_are_not_time_and_text_are_refused(lines: list[Any]) -> None:
    """A line the history could not write (its texts are joined) is refused at the door, as a
    bad header naming the message, not a failure of the store's write later."""
    header = {"type": "output", "run_id": "r1", "stream": "stdout", "lines": lines}
    with pytest.raises(BadHeader, match="'output'"):
        Output.from_header(header)
