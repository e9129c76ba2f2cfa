"""A run names its kernel; the server answers it with the notebook path that kernel's session has
now, so a notebook renamed after its kernel started ("Untitled.ipynb" -> "train.ipynb") shows its
new name. Through a real Jupyter server, a real session made through its sessions API, and a real
``%%distributed`` run in that session's kernel."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse

from jupyter_distributed.history.store import STORE_ENV, RunRecord, Store
from jupyter_distributed.kernelinfo import kernel_id
from jupyter_distributed.server.notebooks import kernel_notebooks

Fetch = Callable[..., Awaitable[HTTPResponse]]
API = ("jupyter-distributed", "api")

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.sqlite3"
    monkeypatch.setenv(STORE_ENV, str(path))  # the server's kernels inherit it: one store
    return path


@pytest.fixture
def jp_server_config(store_path: Path) -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}}


async def call(fetch: Fetch, *path: str, method: str = "GET", body: Any = None) -> Any:
    data = None if body is None else json.dumps(body)
    response = await fetch(*path, method=method, body=data)
    return json.loads(response.body) if response.body else None


async def run_in_kernel(manager: Any, *cells: str) -> None:
    # the manager's own client: it asks the manager whether the kernel lives, not the heartbeat
    # channel, whose missed beats on a loaded machine read as a dead kernel
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        for code in cells:
            reply = await client.execute_interactive(code, timeout=120, output_hook=print)
            assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()


async def notebooks(fetch: Fetch, run_id: str) -> tuple[str, str]:
    """The run's notebook path in ``GET runs`` and in ``GET runs/<id>``."""
    listed = {r["id"]: r for r in (await call(fetch, *API, "runs"))["runs"]}
    one = await call(fetch, *API, "runs", run_id)
    return listed[run_id]["notebook"], one["run"]["notebook"]


async def test_a_renamed_notebook_shows_its_new_path(
    jp_fetch: Fetch, jp_serverapp: Any, jp_root_dir: Path, store_path: Path
) -> None:
    session = await call(
        jp_fetch,
        "api",
        "sessions",
        method="POST",
        body={
            "path": "Untitled.ipynb",
            "name": "Untitled.ipynb",
            "type": "notebook",
            "kernel": {"name": "python3"},
        },
    )
    kid = session["kernel"]["id"]
    try:
        await run_in_kernel(
            jp_serverapp.kernel_manager.get_kernel(kid),
            "%load_ext jupyter_distributed",
            "%%distributed -n 1\nprint(rank)",
        )
        store = Store(store_path)
        (run,) = store.runs()
        started_as = str(jp_root_dir / "Untitled.ipynb")
        assert (run.kernel_id, run.notebook) == (kid, started_as)
        # Runs of a kernel without a session, and of no kernel, keep what they recorded.
        store.create_run(RunRecord("gone", "local", 1, [0], notebook="/a.ipynb", kernel_id="k0"))
        store.create_run(RunRecord("bare", "local", 1, [0], notebook="/b.ipynb"))
        store.close()
        assert await notebooks(jp_fetch, run.id) == (started_as, started_as)

        await call(
            jp_fetch,
            "api",
            "sessions",
            session["id"],
            method="PATCH",
            body={"path": "train.ipynb", "name": "train.ipynb"},
        )

        renamed = str(jp_root_dir / "train.ipynb")
        assert await notebooks(jp_fetch, run.id) == (renamed, renamed)
        assert await notebooks(jp_fetch, "gone") == ("/a.ipynb", "/a.ipynb")
        assert await notebooks(jp_fetch, "bare") == ("/b.ipynb", "/b.ipynb")
    finally:
        await call(jp_fetch, "api", "sessions", session["id"], method="DELETE")
    # The kernel has ended: its run shows the path it recorded again.
    assert await notebooks(jp_fetch, run.id) == (started_as, started_as)


class FakeSessions:
    def __init__(self, *models: dict[str, Any]) -> None:
        self.models = list(models)

    async def list_sessions(self) -> list[dict[str, Any]]:
        return self.models


async def test_a_kernels_notebook_session_wins_over_its_console() -> None:
    root = Path("/srv").resolve()
    sessions = FakeSessions(
        {"path": "x/train.ipynb", "type": "notebook", "kernel": {"id": "k1"}},
        {"path": "x/train.ipynb-console", "type": "console", "kernel": {"id": "k1"}},
        {"path": "console-2", "type": "console", "kernel": {"id": "k2"}},
        {"path": "lost.ipynb", "type": "notebook", "kernel": None},
    )
    assert await kernel_notebooks(sessions, str(root)) == {
        "k1": str(root / "x" / "train.ipynb"),
        "k2": str(root / "console-2"),
    }
    assert kernel_id() == ""  # this process is no kernel
    from ipykernel.kernelapp import IPKernelApp

    assert not isinstance(IPKernelApp._instance, IPKernelApp)  # and asking made it none
