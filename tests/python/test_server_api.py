"""The server extension's endpoints through a real Jupyter server reading a real store file,
written by this process or by another one (no kernel involved)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError, HTTPResponse
from tornado.simple_httpclient import HTTPStreamClosedError
from tornado.websocket import WebSocketClientConnection

from jupyter_distributed.events import (
    DisplayEvent,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    StacksEvent,
    Stream,
)
from jupyter_distributed.history.store import STORE_ENV, RunRecord, Store
from jupyter_distributed.probe import assemble
from jupyter_distributed.server.handlers import AUTH_RESOURCE
from jupyter_distributed.server.wire import API_VERSION, ProbeJSON

Fetch = Callable[..., Awaitable[HTTPResponse]]
API = ("jupyter-distributed", "api")


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv(STORE_ENV, str(path))
    return path


@pytest.fixture
def jp_server_config(store_path: Path) -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}}


@pytest.fixture
def store(store_path: Path) -> Store:
    return Store.open(store_path)  # (the server extension opens the same one)


def add_run(
    store: Store,
    run_id: str,
    started: float,
    *,
    lines: int = 0,
    world: int = 2,
    state: RunState | None = None,
) -> None:
    store.create_run(
        RunRecord(
            id=run_id,
            backend="local",
            world_size=world,
            ranks=list(range(world)),
            cluster_id=f"c-{run_id}",
            notebook="train.ipynb",
            cell_id="cell-1",
            started=started,
        ),
        coords={r: {"data_parallel": r, "host": "h"} for r in range(world)},
    )
    store.append(
        RankEvent(run_id, r, started, RankState.RUNNING, "h", 100 + r) for r in range(world)
    )
    store.append(
        OutputEvent(
            run_id,
            i % world,
            started + i,
            Stream.STDERR if i % 5 == 4 else Stream.STDOUT,
            f"line {i} <b>bold</b>",
        )
        for i in range(lines)
    )
    if state is not None:
        store.append([RunEvent(run_id, started + 100, state, "")])


async def get(fetch: Fetch, *path: str, **params: Any) -> Any:
    response = await fetch(*API, *path, params=params)
    assert response.code == 200
    return json.loads(response.body)


async def test_runs_newest_first_paged_by_started(jp_fetch: Fetch, store: Store) -> None:
    for i in range(5):
        add_run(store, f"run-{i}", 1000.0 + i, state=RunState.COMPLETED if i < 4 else None)
    page = await get(jp_fetch, "runs", limit="3")
    assert page["version"] == API_VERSION
    assert page["last_seq"] == store.last_seq()
    assert [r["id"] for r in page["runs"]] == ["run-4", "run-3", "run-2"]
    first = page["runs"][0]
    assert (first["backend"], first["world_size"], first["state"]) == ("local", 2, "running")
    assert (first["notebook"], first["cell_id"], first["ended"]) == ("train.ipynb", "cell-1", None)
    assert page["runs"][1]["state"] == "completed"
    rest = await get(jp_fetch, "runs", limit="3", before=str(page["runs"][-1]["started"]))
    assert [r["id"] for r in rest["runs"]] == ["run-1", "run-0"]


async def test_one_run_with_its_ranks(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0, world=3)
    detail = await get(jp_fetch, "runs", "run-a")
    assert detail["run"]["id"] == "run-a"
    assert [
        (r["rank"], r["state"], r["pid"], r["coords"]["data_parallel"]) for r in detail["ranks"]
    ] == [(0, "running", 100, 0), (1, "running", 101, 1), (2, "running", 102, 2)]


def synthetic_probe(run_id: str, n: int) -> dict[str, Any]:
    """What ``%distributed probe`` stores for ``n`` ranks on hosts of 8, with measured-looking
    numbers (full-precision floats, as the ranks send them)."""
    rng = random.Random(n)  # noqa: S311 - reproducible numbers, not a secret
    curve = [{"bytes": 1024 * 4**i, "busbw_gbs": rng.uniform(1, 9)} for i in range(10)]
    per_rank = [
        {
            "library": "torch.distributed nccl",
            "allreduce": curve,
            "seconds": 4.5,
            "pairs": {
                f"{a}-{b}": {
                    "latency_us": rng.uniform(2, 20),
                    "bandwidth_gbs": rng.uniform(5, 50),
                    "median_latency_us": rng.uniform(2, 20),
                    "median_bandwidth_gbs": rng.uniform(5, 50),
                }
                for b in range(a + 1, n)
            },
        }
        for a in range(n)
    ]
    return assemble(per_rank, {r: f"node{r // 8}" for r in range(n)}) | {
        "seconds": 9.25,
        "run_id": run_id,
    }


async def test_the_list_counts_a_probes_pairs_and_the_run_has_them(
    jp_fetch: Fetch, store: Store
) -> None:
    add_run(store, "probe-a", 1000.0, world=256, state=RunState.COMPLETED)
    add_run(store, "plain", 1001.0)
    probe = synthetic_probe("probe-a", 256)
    store.update_summary("probe-a", probe=probe, global_batch=256)
    listed = (await jp_fetch(*API, "runs")).body
    plain, probed = json.loads(listed)["runs"]
    assert plain["summary"] == {}
    summary = probed["summary"]
    assert summary["global_batch"] == 256
    assert "pairs" not in summary["probe"]
    assert summary["probe"]["pair_count"] == 256 * 255 // 2 == len(probe["pairs"])
    rest = {k: v for k, v in probe.items() if k != "pairs"}
    assert summary["probe"] == rest | {"pair_count": 32_640}
    assert set(summary["probe"]) == set(ProbeJSON.__annotations__) - {"pairs"}
    assert len(listed) < 20_000  # the 32,640 pairs alone are megabytes

    detail = (await jp_fetch(*API, "runs", "probe-a")).body
    assert json.loads(detail)["run"]["summary"] == {"probe": probe, "global_batch": 256}
    assert len(detail) > 100 * len(listed)


async def test_unknown_run_is_404_json(jp_fetch: Fetch, store: Store) -> None:
    for path in (("runs", "nope"), ("runs", "nope", "logs"), ("runs", "nope", "metrics")):
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch(*API, *path)
        assert err.value.code == 404
        assert err.value.response is not None
        assert json.loads(err.value.response.body) == {"message": "no run 'nope' in the history"}


async def test_bad_query_is_400_with_a_message(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0, lines=3)
    for params, message in [
        ({"limit": "lots"}, "query argument limit='lots' must be an integer"),
        (
            {"stream": "stdin"},
            "query argument stream='stdin' must be one of stdout, stderr, result, display",
        ),
        ({"rank": "x"}, "query argument rank='x' must be an integer"),
    ]:
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch(*API, "runs", "run-a", "logs", params=params)
        assert err.value.code == 400
        assert err.value.response is not None
        assert json.loads(err.value.response.body)["message"] == message


async def test_a_display_is_a_log_line_with_its_mark_and_its_bundle_on_request(
    jp_fetch: Fetch, store: Store
) -> None:
    add_run(store, "run-a", 1000.0, lines=1)
    png = "iVBORw0KGgoAAAANSUhEUgAAAoAAAAHgCAYAAAA10dzkAAA"  # a 640×480 PNG's first bytes
    store.append([DisplayEvent("run-a", 0, 1001.0, {"image/png": png, "text/plain": "fig"})])
    page = await get(jp_fetch, "runs", "run-a", "logs", stream="display")
    (line,) = page["lines"]
    assert (line["rank"], line["text"]) == (0, "image/png 640×480")
    shown = await get(jp_fetch, "runs", "run-a", "displays", str(line["seq"]))
    assert shown["data"] == {"image/png": png, "text/plain": "fig"}
    assert shown["mark"] == "image/png 640×480"
    streamed = [e for _, e in store.events_after(0, "run-a") if e.get("stream") == "display"]
    assert streamed[0]["text"] == "image/png 640×480" and "data" not in streamed[0]
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch(*API, "runs", "run-a", "displays", str(line["seq"] - 1))
    assert err.value.code == 404


async def test_a_display_is_served_only_from_its_own_run(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0, lines=2)
    add_run(store, "run-b", 2000.0)
    store.append([DisplayEvent("run-a", 1, 1001.0, {"image/svg+xml": "<svg/>"}, {"k": 1})])
    seq = store.last_seq()
    shown = await get(jp_fetch, "runs", "run-a", "displays", str(seq))
    assert (shown["run_id"], shown["rank"]) == ("run-a", 1)
    assert shown["data"] == {"image/svg+xml": "<svg/>"}
    line = store.logs("run-a", stream="stdout")[0]
    for run_id, other in [("run-b", seq), ("run-a", line.seq), ("run-", seq), ("run-a", 0)]:
        with pytest.raises(HTTPClientError) as err:  # another run's, a text line, ambiguous
            await jp_fetch(*API, "runs", run_id, "displays", str(other))
        assert err.value.code == 404


class WriteOnly(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "write" and resource == AUTH_RESOURCE


class ReadOnly(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read" and resource == AUTH_RESOURCE


def _authorized_by(authorizer: type[Authorizer]) -> dict[str, Any]:
    extensions = {"jpserver_extensions": {"jupyter_distributed": True}}
    return {"ServerApp": {**extensions, "authorizer_class": authorizer}}


@pytest.mark.parametrize("jp_server_config", [_authorized_by(WriteOnly)])
async def test_displays_and_stacks_need_read(store: Store, jp_fetch: Fetch) -> None:
    add_run(store, "run-a", 1000.0)
    store.append([DisplayEvent("run-a", 0, 1001.0, {"image/png": "iVBORw0KGgo="})])
    for path in (("displays", str(store.last_seq())), ("stacks",)):
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch(*API, "runs", "run-a", *path)
        assert err.value.code == 403, path


@pytest.mark.parametrize("jp_server_config", [_authorized_by(ReadOnly)])
async def test_read_only_opens_a_display_but_cannot_ask_for_stacks(
    store: Store, jp_fetch: Fetch
) -> None:  # (the store first: the server reads its path when it starts)
    add_run(store, "run-a", 1000.0)
    store.append([DisplayEvent("run-a", 0, 1001.0, {"image/png": "iVBORw0KGgo="})])
    shown = await get(jp_fetch, "runs", "run-a", "displays", str(store.last_seq()))
    assert shown["data"] == {"image/png": "iVBORw0KGgo="}
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch(*API, "runs", "run-a", "stacks", method="POST", body=b"")
    assert err.value.code == 403
    assert store.take_controls("c-run-a") == []


async def test_logs_paged_by_cursor_and_filtered(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0, lines=25, world=3)
    add_run(store, "run-b", 2000.0, lines=5)
    seen: list[str] = []
    after = 0
    while True:
        page = await get(jp_fetch, "runs", "run-a", "logs", after=str(after), limit="10")
        seen += [line["text"] for line in page["lines"]]
        if not page["lines"]:
            assert page["next"] == after
            break
        after = page["next"]
        assert after == page["lines"][-1]["seq"]
    assert seen == [f"line {i} <b>bold</b>" for i in range(25)]

    ranks = await get(jp_fetch, "runs", "run-a", "logs", rank="0,2")
    assert {line["rank"] for line in ranks["lines"]} == {0, 2}
    assert len(ranks["lines"]) == 17
    errs = await get(jp_fetch, "runs", "run-a", "logs", stream="stderr")
    assert [line["text"].split()[1] for line in errs["lines"]] == ["4", "9", "14", "19", "24"]
    found = await get(jp_fetch, "runs", "run-a", "logs", search="LINE 1")
    assert [line["text"].split()[1] for line in found["lines"]] == [
        "1",
        *[str(i) for i in range(10, 20)],
    ]
    last = await get(jp_fetch, "runs", "run-a", "logs", before=str(2**40), limit="3")
    assert [line["text"].split()[1] for line in last["lines"]] == ["22", "23", "24"]


async def test_metrics_paged(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0)
    store.append(
        MetricEvent("run-a", i % 2, 1000.0 + i, {"samples": 64.0, "loss": 1 / (i + 1)})
        for i in range(7)
    )
    page = await get(jp_fetch, "runs", "run-a", "metrics", limit="4")
    assert [(s["rank"], s["values"]["samples"]) for s in page["samples"]] == [
        (0, 64.0),
        (1, 64.0),
        (0, 64.0),
        (1, 64.0),
    ]
    rest = await get(jp_fetch, "runs", "run-a", "metrics", after=str(page["next"]))
    assert len(rest["samples"]) == 3
    assert rest["samples"][0]["seq"] > page["next"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ("version",)),
        ("GET", ("events",)),
        ("GET", ("runs",)),
        ("GET", ("runs", "run-a")),
        ("GET", ("runs", "run-a", "logs")),
        ("GET", ("runs", "run-a", "metrics")),
        ("POST", ("runs", "run-a", "cancel")),
        ("POST", ("clusters", "c-run-a", "stop")),
    ],
)
async def test_refused_without_the_token(
    jp_fetch: Fetch, store: Store, method: str, path: tuple[str, ...]
) -> None:
    add_run(store, "run-a", 1000.0)
    body = b"" if method == "POST" else None
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch(*API, *path, method=method, body=body, headers={"Authorization": ""})
    assert err.value.code == 403
    assert store.take_controls("c-run-a") == []


async def test_cancel_and_stop_queue_a_control(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-a", 1000.0)
    add_run(store, "run-done", 900.0, state=RunState.COMPLETED)
    response = await jp_fetch(*API, "runs", "run-a", "cancel", method="POST", body=b"")
    assert response.code == 202
    control = json.loads(response.body)["control"]
    assert (control["action"], control["target"], control["cluster_id"]) == (
        "cancel",
        "run-a",
        "c-run-a",
    )
    response = await jp_fetch(*API, "clusters", "c-run-a", "stop", method="POST", body=b"")
    assert response.code == 202
    taken = store.take_controls("c-run-a")
    assert [(c.action, c.target) for c in taken] == [("cancel", "run-a"), ("stop", "c-run-a")]
    assert store.take_controls("c-run-a") == []

    for path, code in [
        (("runs", "run-done", "cancel"), 409),
        (("runs", "nope", "cancel"), 404),
        (("clusters", "c-nope", "stop"), 404),
    ]:
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch(*API, *path, method="POST", body=b"")
        assert err.value.code == code


WRITER = textwrap.dedent("""
    import sys, time
    from jupyter_distributed.events import OutputEvent, RunEvent, RunState, Stream
    from jupyter_distributed.history.store import RunRecord, Store
    store = Store(sys.argv[1])
    run_id, batches, per_batch = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store.create_run(RunRecord(id=run_id, backend="local", world_size=4, ranks=[0, 1, 2, 3],
                               started=time.time()))
    for b in range(batches):
        store.append(OutputEvent(run_id, i % 4, time.time(), Stream.STDOUT, f"{b}:{i}")
                     for i in range(per_batch))
        time.sleep(0.01)
    store.append([RunEvent(run_id, time.time(), RunState.COMPLETED)])
""")


def start_writer(
    store_path: Path, run_id: str, batches: int, per_batch: int
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store_path), run_id, str(batches), str(per_batch)]
    )


async def test_runs_written_by_another_process_are_visible(
    jp_fetch: Fetch, store_path: Path
) -> None:
    writer = start_writer(store_path, "other", 5, 20)
    assert writer.wait(60) == 0
    runs = (await get(jp_fetch, "runs"))["runs"]
    assert [(r["id"], r["state"]) for r in runs] == [("other", "completed")]
    page = await get(jp_fetch, "runs", "other", "logs", limit="1000")
    assert len(page["lines"]) == 100


Connect = Callable[..., Awaitable[WebSocketClientConnection]]


async def receive(
    ws: WebSocketClientConnection,
    until: Callable[[list[dict[str, Any]]], bool],
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """Stream items until ``until(items)`` holds (the timeout only guards against a hang)."""
    items: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not until(items):
        message = await asyncio.wait_for(ws.read_message(), deadline - time.monotonic())
        assert isinstance(message, str), "the server closed the stream"
        items += json.loads(message)["events"]
    return items


def finished(run_id: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda items: any(
        i["event"]["kind"] == "run"
        and i["event"]["run_id"] == run_id
        and i["event"]["state"] == "completed"
        for i in items
    )


async def test_stream_reconnect_misses_and_repeats_nothing(
    jp_ws_fetch: Connect, store: Store, store_path: Path
) -> None:
    add_run(store, "earlier", 1000.0, lines=30)
    writer = start_writer(store_path, "live", 40, 50)
    try:
        ws = await jp_ws_fetch(*API, "stream", params={"after": "0"})
        first = await receive(ws, lambda items: len(items) >= 500)
        ws.close()
        ws = await jp_ws_fetch(*API, "stream", params={"after": str(first[-1]["seq"])})
        second = await receive(ws, lambda items: finished("live")(first + items))
        ws.close()
    finally:
        assert writer.wait(60) == 0
    seqs = [i["seq"] for i in first + second]
    assert seqs == [seq for seq, _ in store.events_after(0, limit=10**6)]
    live = [
        i["event"]["text"]
        for i in first + second
        if i["event"]["run_id"] == "live" and i["event"]["kind"] == "output"
    ]
    assert live == [f"{b}:{i}" for b in range(40) for i in range(50)]


async def test_stream_of_one_run_from_the_end(
    jp_ws_fetch: Connect, store: Store, store_path: Path
) -> None:
    add_run(store, "earlier", 1000.0, lines=30)
    ws = await jp_ws_fetch(*API, "stream", params={"run": "live"})
    writer = start_writer(store_path, "live", 5, 10)
    add_run(store, "other", 2000.0, lines=10)
    items = await receive(ws, finished("live"))
    ws.close()
    assert writer.wait(60) == 0
    assert {i["event"]["run_id"] for i in items} == {"live"}
    assert len([i for i in items if i["event"]["kind"] == "output"]) == 50


async def test_stream_refused_without_the_token(jp_ws_fetch: Connect, store: Store) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_ws_fetch(*API, "stream", headers={"Authorization": ""})
    assert err.value.code == 403


class TestUnderABaseURL:
    @pytest.fixture
    def jp_base_url(self) -> str:
        return "/user/some-one/"

    async def test_endpoints_and_stream(
        self, jp_fetch: Fetch, jp_ws_fetch: Connect, store: Store
    ) -> None:
        add_run(store, "run-a", 1000.0, lines=3)
        assert [r["id"] for r in (await get(jp_fetch, "runs"))["runs"]] == ["run-a"]
        assert len((await get(jp_fetch, "runs", "run-a", "logs"))["lines"]) == 3
        ws = await jp_ws_fetch(*API, "stream", params={"after": "0", "run": "run-a"})
        items = await receive(ws, lambda items: len(items) >= 6)
        ws.close()
        assert [i["event"]["kind"] for i in items] == [
            "run",
            "rank",
            "rank",
            "output",
            "output",
            "output",
        ]
        response = await jp_fetch(*API, "runs", "run-a", "cancel", method="POST", body=b"")
        assert response.code == 202


def test_wire_types_match_the_json_the_store_produces(store: Store) -> None:
    from jupyter_distributed.server import wire

    add_run(store, "run-a", 1000.0, lines=1)
    store.append([MetricEvent("run-a", 0, 1001.0, {"samples": 1.0})])
    run = store.run("run-a")
    assert run is not None
    assert set(wire.RunJSON.__annotations__) == set(run.to_json())
    assert set(wire.RankJSON.__annotations__) == set(store.ranks("run-a")[0].to_json())
    assert set(wire.LogLineJSON.__annotations__) == set(store.logs("run-a")[0].to_json())
    control = store.request_control("run-a", "cancel")
    assert set(wire.ControlJSON.__annotations__) == set(control.to_json())


class _Enough(Exception):
    """Raised from the streaming callback to hang up once the test has what it needs."""


async def read_sse(
    fetch: Fetch, until: Callable[[list[dict[str, Any]]], bool], **kwargs: Any
) -> tuple[list[str], list[dict[str, Any]]]:
    """The SSE ids and the stream items received until ``until(items)`` holds."""
    ids, messages = await sse_messages(
        fetch, lambda ms: until([i for m in ms for i in m["events"]]), **kwargs
    )
    return ids, [i for m in messages for i in m["events"]]


async def sse_messages(
    fetch: Fetch, until: Callable[[list[dict[str, Any]]], bool], **kwargs: Any
) -> tuple[list[str], list[dict[str, Any]]]:
    """The SSE ids and the messages received until ``until(messages)`` holds."""
    buffer, ids, messages = "", [], []

    def chunk(data: bytes) -> None:
        nonlocal buffer
        buffer += data.decode()
        while "\n\n" in buffer:
            message, buffer = buffer.split("\n\n", 1)
            lines = [line for line in message.splitlines() if not line.startswith(":")]
            if not lines:
                continue  # a comment (connected, keep-alive): EventSource ignores it
            fields = dict(line.split(": ", 1) for line in lines)
            ids.append(fields["id"])
            messages.append(json.loads(fields["data"]))
        if until(messages):
            raise _Enough

    # tornado reports the hang-up as either
    with contextlib.suppress(_Enough, HTTPStreamClosedError):
        await fetch(*API, "events", streaming_callback=chunk, request_timeout=60, **kwargs)
    assert until(messages)
    return ids, messages


async def test_server_sent_events_resume_from_last_event_id(
    jp_fetch: Fetch, store: Store, store_path: Path
) -> None:
    add_run(store, "earlier", 1000.0, lines=30)
    writer = start_writer(store_path, "live", 20, 50)
    try:
        ids, first = await read_sse(
            jp_fetch, lambda items: len(items) >= 300, params={"after": "0"}
        )
        assert ids[-1] == str(first[-1]["seq"])
        second: list[dict[str, Any]] = []
        if not finished("live")(first):  # (on a loaded machine the writer may be done already)
            _, second = await read_sse(
                jp_fetch,
                finished("live"),
                headers={"Last-Event-ID": ids[-1]},
                params={"run": "live"},
            )
    finally:
        assert writer.wait(60) == 0
    seqs = [i["seq"] for i in first + second if i["event"]["run_id"] == "live"]
    assert seqs == [seq for seq, _ in store.events_after(0, "live", limit=10**6)]


async def test_stacks_are_requested_for_running_runs_only_and_paged(
    jp_fetch: Fetch, store: Store
) -> None:
    add_run(store, "run-a", 1000.0)
    add_run(store, "run-done", 900.0, state=RunState.COMPLETED)
    response = await jp_fetch(*API, "runs", "run-a", "stacks", method="POST", body=b"")
    assert response.code == 202
    assert [(c.action, c.target) for c in store.take_controls("c-run-a")] == [("stacks", "run-a")]
    response = await jp_fetch(
        *API, "runs", "run-a", "stacks", method="POST", body=b"", params={"rank": "1"}
    )
    assert json.loads(response.body)["control"]["rank"] == 1
    assert [c.rank for c in store.take_controls("c-run-a")] == [1]
    for run_id, code, params in [
        ("run-done", 409, {}),
        ("nope", 404, {}),
        ("run-a", 400, {"rank": "2"}),  # a world of 2 ranks
        ("run-a", 400, {"rank": "-1"}),
        ("run-a", 400, {"rank": "one"}),
        ("run-a", 400, {"rank": str(2**70)}),
    ]:
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch(*API, "runs", run_id, "stacks", method="POST", body=b"", params=params)
        assert err.value.code == code, (run_id, params)
    assert store.take_controls("c-run-a") == []  # nothing was queued by a refused request
    store.append([StacksEvent("run-a", 5.0, "timeout", "rank 1 waits in x", {1: {"rank": 1}})])
    page = json.loads((await jp_fetch(*API, "runs", "run-a", "stacks")).body)
    assert [(s["reason"], s["diagnosis"], list(s["ranks"])) for s in page["stacks"]] == [
        ("timeout", "rank 1 waits in x", ["1"])
    ]
    assert (await get(jp_fetch, "runs", "run-a", "stacks", after=page["next"]))["stacks"] == []
