"""The server follows a detached SageMaker run with the region and endpoint of its own
configuration (``c.DistributedSageMaker.*`` in ``jupyter_server_config.py``), not the
environment's: here the environment points elsewhere by the time the server follows."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse

from jupyter_distributed.history.store import STORE_ENV, Store

from .sagemaker_runtime import REGION, LocalSageMaker
from .test_sagemaker_server_follow import exited_pid, start_without_waiting

Fetch = Callable[..., Awaitable[HTTPResponse]]


@pytest.fixture
def jp_server_config(configured: LocalSageMaker) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}},
        "DistributedSageMaker": {"region": REGION, "endpoint_url": configured.endpoint},
    }


async def test_server_follows_with_its_configured_endpoint(
    configured: LocalSageMaker, jp_fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(Path(os.environ[STORE_ENV]))
    run_id = await asyncio.to_thread(start_without_waiting, store)
    # From here on the environment names no usable endpoint or region: only the server's
    # configuration can find the job.
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_SAGEMAKER_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_SAGEMAKER_REGION", "eu-north-1")
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET kernel_pid=? WHERE id=?", (exited_pid(), run_id))
    deadline = time.monotonic() + 90
    state = ""
    while state != "completed" and time.monotonic() < deadline:
        response = await jp_fetch("jupyter-distributed", "api", "runs", run_id)
        state = json.loads(response.body)["run"]["state"]
        await asyncio.sleep(0.2)
    assert state == "completed"
