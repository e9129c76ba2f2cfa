"""The Jupyter server follows a SageMaker run whose kernel is gone, end to end: a job started
with ``--no-wait`` on the local platform (moto's server on 127.0.0.1), its kernel exited, a real
Jupyter server with the extension, and the run's end and rank lines read back over REST."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse

from jupyter_distributed.backends.sagemaker.lifecycle import attach
from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
from jupyter_distributed.display import CellView
from jupyter_distributed.events import RunState
from jupyter_distributed.history.store import STORE_ENV, Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .sagemaker_fixtures import context
from .sagemaker_runtime import LocalSageMaker

Fetch = Callable[..., Awaitable[HTTPResponse]]
API = ("jupyter-distributed", "api")


def exited_pid() -> int:
    """The pid of a process that has exited: a kernel that is gone."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def jp_server_config(configured: LocalSageMaker) -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}}


async def get(fetch: Fetch, *path: str, **params: Any) -> Any:
    response = await fetch(*API, *path, params=params)
    assert response.code == 200
    return json.loads(response.body)


def start_without_waiting(store: Store) -> str:
    spec = Spec(
        layout=Layout(nodes=2, procs_per_node=1),
        backend="sagemaker",
        options=SageMakerOptions(wait=False),
    )
    code = "import time\ntime.sleep(1)\nprint('done on', rank)"
    out = io.StringIO()
    outcome = Session(store).run_cell(spec, code, {}, view=CellView(out=out, err=out))
    assert outcome.state is RunState.RUNNING
    return store.runs(limit=1)[0].id


async def test_server_follows_a_run_whose_kernel_is_gone(
    configured: LocalSageMaker, jp_fetch: Fetch
) -> None:
    store = Store(Path(os.environ[STORE_ENV]))
    run_id = await asyncio.to_thread(start_without_waiting, store)
    # The kernel that started it exits: its pid, as recorded, is now a dead process's.
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET kernel_pid=? WHERE id=?", (exited_pid(), run_id))
    deadline = time.monotonic() + 90
    detail = await get(jp_fetch, "runs", run_id)
    while detail["run"]["state"] != "completed" and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        detail = await get(jp_fetch, "runs", run_id)
    assert detail["run"]["state"] == "completed"
    logs = await get(jp_fetch, "runs", run_id, "logs")
    assert sorted((line["rank"], line["text"]) for line in logs["lines"]) == [
        (0, "done on 0"),
        (1, "done on 1"),
    ]
    assert store.follower(run_id) is None  # the server let go of the lease when it ended


def test_follow_lease_is_held_by_one_live_follower(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    host, me = socket.gethostname(), os.getpid()
    kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert store.claim_follow("run-1", host, kernel.pid) is None
        assert store.claim_follow("run-1", host, me) == (host, kernel.pid)  # it is alive
        assert store.claim_follow("run-1", host, kernel.pid) is None  # renewing is claiming
    finally:
        kernel.kill()
        kernel.wait()
    assert store.claim_follow("run-1", host, me) is None  # its holder died: taken over
    assert store.claim_follow("run-1", "other-host", 1) == (host, me)
    assert store.claim_follow("run-1", "other-host", 1, stale_after=-1.0) is None  # stale
    store.release_follow("run-1", "other-host", 1)
    assert store.follower("run-1") is None


def test_attach_waits_while_another_process_follows(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    store = Store(tmp_path / "h.sqlite3")
    run_id = start_without_waiting(store)
    record = store.run(run_id)
    assert record is not None
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert store.claim_follow(run_id, socket.gethostname(), holder.pid) is None
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:  # the other follower (say, the server) goes away
            holder.kill()
            holder.wait()
        time.sleep(min(seconds, 0.2))

    out = io.StringIO()
    view = CellView(out=out, err=out)
    result = attach(context(store, view), record.external_id, poll=0.2, sleep=sleep)
    assert result.state is RunState.COMPLETED
    assert f"is being followed by process {holder.pid}" in out.getvalue()
    assert "[rank 1] done on 1" in out.getvalue()
    assert store.follower(run_id) is None
