"""Cancel and stop from the server extension reach a real kernel running a long cell.

A Jupyter server and an IPython kernel share one store file; the test POSTs to the server
while the kernel is busy in a ``%%distributed`` cell, as the panel's buttons do."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import AsyncKernelManager
from tornado.httpclient import HTTPResponse

from jupyter_distributed.history.store import STORE_ENV

Fetch = Callable[..., Awaitable[HTTPResponse]]
API = ("jupyter-distributed", "api")
LONG_CELL = "%%distributed -n 2\nimport time\nfor _ in range(600):\n    time.sleep(0.1)\n"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv(STORE_ENV, str(path))
    return path


@pytest.fixture
def jp_server_config(store_path: Path) -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}}


@asynccontextmanager
async def kernel() -> AsyncIterator[Any]:
    """A real IPython kernel with the extension loaded."""
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel()  # inherits the environment, so the same store
    client = manager.client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    try:
        reply = await client.execute_interactive("%load_ext jupyter_distributed", timeout=60)
        assert reply["content"]["status"] == "ok"
        yield client
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


async def running_run(fetch: Fetch) -> dict[str, Any]:
    """The running run once its ranks are running (polling the server as the panel does)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = json.loads((await fetch(*API, "runs")).body)["runs"]
        if runs and runs[0]["state"] == "running":
            ranks = json.loads((await fetch(*API, "runs", runs[0]["id"])).body)["ranks"]
            if all(r["state"] == "running" for r in ranks):
                return dict(runs[0])
        await asyncio.sleep(0.1)
    raise AssertionError("no run started")


async def run_and(
    fetch: Fetch, client: Any, action: Callable[[dict[str, Any]], tuple[str, ...]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the long cell, POST the action's path while it runs; the reply and the run after."""
    outputs: list[str] = []
    execution = asyncio.ensure_future(
        client.execute_interactive(
            LONG_CELL,
            timeout=120,
            output_hook=lambda msg: outputs.append(json.dumps(msg["content"])),
        )
    )
    run = await running_run(fetch)
    response = await fetch(*API, *action(run), method="POST", body=b"")
    assert response.code == 202
    reply = await execution
    after = json.loads((await fetch(*API, "runs", run["id"])).body)["run"]
    return {"reply": reply["content"], "outputs": "\n".join(outputs)}, after


async def test_cancel_interrupts_the_cell_and_keeps_the_cluster(
    jp_fetch: Fetch, store_path: Path
) -> None:
    async with kernel() as client:
        await _cancel(jp_fetch, client)


async def test_stop_ends_the_cluster(jp_fetch: Fetch, store_path: Path) -> None:
    async with kernel() as client:
        await _stop(jp_fetch, client)


async def _cancel(jp_fetch: Fetch, kernel: Any) -> None:
    result, run = await run_and(jp_fetch, kernel, lambda r: ("runs", r["id"], "cancel"))
    assert result["reply"]["status"] == "error"
    assert result["reply"]["ename"] == "KeyboardInterrupt"
    assert "cancelled from the Distributed panel" in result["outputs"]
    assert (run["state"], run["message"]) == ("interrupted", "cancelled from the Distributed panel")
    # the ranks yielded: the same cluster runs the next cell
    reply = await kernel.execute_interactive("%%distributed -n 2\nprint('again', rank)", timeout=60)
    assert reply["content"]["status"] == "ok"
    runs = json.loads((await jp_fetch(*API, "runs")).body)["runs"]
    assert runs[0]["state"] == "completed"
    assert runs[0]["cluster_id"] == run["cluster_id"]


async def _stop(jp_fetch: Fetch, kernel: Any) -> None:
    result, run = await run_and(jp_fetch, kernel, lambda r: ("clusters", r["cluster_id"], "stop"))
    assert result["reply"]["status"] == "error"
    assert run["state"] == "stopped"
    assert run["message"] == "a stop request from the Distributed panel"
    # the ranks were killed mid-cell: their last stacks are in the history
    stacks = json.loads((await jp_fetch(*API, "runs", run["id"], "stacks")).body)["stacks"]
    assert [s["reason"] for s in stacks] == ["killed"]
    assert stacks[0]["diagnosis"].startswith("ranks 0, 1 are at cell line 3: time.sleep(0.1)")
    reply = await kernel.execute_interactive("%%distributed -n 2\nprint(rank)", timeout=60)
    assert reply["content"]["status"] == "ok"
    runs = json.loads((await jp_fetch(*API, "runs")).body)["runs"]
    assert runs[0]["cluster_id"] != run["cluster_id"]  # a new cluster

    # stopping an idle cluster: the kernel's I/O thread stops it within a moment
    pids = [
        r["pid"] for r in json.loads((await jp_fetch(*API, "runs", runs[0]["id"])).body)["ranks"]
    ]
    response = await jp_fetch(
        *API, "clusters", runs[0]["cluster_id"], "stop", method="POST", body=b""
    )
    assert response.code == 202
    while any(alive(pid) for pid in pids):
        await asyncio.sleep(0.1)  # the test's timeout guards against a hang
    outputs: list[str] = []
    await kernel.execute_interactive(
        "%distributed status",
        timeout=30,
        output_hook=lambda msg: outputs.append(str(msg["content"].get("text", ""))),
    )
    assert "lost: a stop request from the Distributed panel" in "".join(outputs)


async def get_json(fetch: Fetch, *path: str, **params: Any) -> Any:
    response = await fetch(*API, *path, params={k: str(v) for k, v in params.items()})
    return json.loads(response.body)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stacks_of_a_running_cell_land_in_the_history(
    jp_fetch: Fetch, store_path: Path
) -> None:
    """The panel's Stacks action: POST while the kernel is busy in the cell; the stacks of
    every rank, at the cell's line, are in the history and the stream within seconds."""
    async with kernel() as client:
        execution = asyncio.ensure_future(client.execute_interactive(LONG_CELL, timeout=120))
        run = await running_run(jp_fetch)
        response = await jp_fetch(*API, "runs", run["id"], "stacks", method="POST", body=b"")
        assert response.code == 202
        assert json.loads(response.body)["control"]["action"] == "stacks"
        deadline = time.monotonic() + 10
        page: dict[str, Any] = {"stacks": []}
        while not page["stacks"] and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            page = json.loads((await jp_fetch(*API, "runs", run["id"], "stacks")).body)
        assert page["stacks"], "no stacks within 10 s"
        snap = page["stacks"][0]
        assert snap["reason"] == "request" and snap["kind"] == "stacks"
        assert snap["diagnosis"].startswith("ranks 0, 1 are at cell line 3: time.sleep(0.1)")
        assert set(snap["ranks"]) == {"0", "1"}
        # a rank tile's Stacks: that rank only, and nothing said about the others
        response = await jp_fetch(
            *API, "runs", run["id"], "stacks", method="POST", body=b"", params={"rank": "1"}
        )
        assert json.loads(response.body)["control"]["rank"] == 1
        after = page["next"]
        while time.monotonic() < deadline + 10:
            await asyncio.sleep(0.1)
            page = await get_json(jp_fetch, "runs", run["id"], "stacks", after=after)
            if page["stacks"]:
                break
        (one,) = page["stacks"]
        assert set(one["ranks"]) == {"1"}
        assert one["diagnosis"].startswith("rank 1 is at cell line 3: time.sleep(0.1)")
        assert "rank 0" not in one["diagnosis"]
        assert execution.done() is False  # the cell still runs: nothing was interrupted
        async with kernel() as other:  # %distributed stacks RUN from another notebook
            shown: list[str] = []
            reply = await other.execute_interactive(
                f"%distributed stacks {run['id']} --rank 1",
                timeout=30,
                output_hook=lambda m: shown.append(m["content"].get("text", "")),
            )
            assert reply["content"]["status"] == "ok"
            assert f"run {run['id']}: rank 1:" in "".join(shown)
            assert "time.sleep(0.1)" in "".join(shown)
        await jp_fetch(*API, "runs", run["id"], "cancel", method="POST", body=b"")
        await execution
