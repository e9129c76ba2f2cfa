"""``DELETE runs/<id>`` and a damaged row, through a real Jupyter server over a real store."""

from __future__ import annotations

import json
import sqlite3

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_distributed.events import RunState
from jupyter_distributed.history.store import Store

from . import test_server_api as api
from .test_server_api import API, Fetch, ReadOnly, _authorized_by, add_run, get

# The API tests' fixtures: a real server whose extension reads the store at store_path.
store_path, jp_server_config, store = api.store_path, api.jp_server_config, api.store


async def _delete(fetch: Fetch, run_id: str) -> tuple[int, dict[str, str]]:
    try:
        response = await fetch(*API, "runs", run_id, method="DELETE")
    except HTTPClientError as err:
        return err.code, json.loads(err.response.body if err.response is not None else b"{}")
    return response.code, json.loads(response.body)


async def test_delete_removes_a_finished_run_and_refuses_a_running_one(
    jp_fetch: Fetch, store: Store
) -> None:
    add_run(store, "run-done", 1000.0, lines=20, state=RunState.COMPLETED)
    add_run(store, "run-live", 1001.0, lines=5)
    assert await _delete(jp_fetch, "run-done") == (200, {"deleted": "run-done"})
    assert [r["id"] for r in (await get(jp_fetch, "runs"))["runs"]] == ["run-live"]
    assert store.logs("run-done") == [] and store.ranks("run-done") == []
    code, reply = await _delete(jp_fetch, "run-live")
    assert code == 409 and "run run-live is running; stop it" in reply["message"]
    assert await _delete(jp_fetch, "run-done") == (
        404,
        {"message": "no run 'run-done' in the history"},
    )
    assert len((await get(jp_fetch, "runs", "run-live", "logs"))["lines"]) == 5


@pytest.mark.parametrize("jp_server_config", [_authorized_by(ReadOnly)])
async def test_delete_needs_write(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-done", 1000.0, state=RunState.COMPLETED)
    code, _ = await _delete(jp_fetch, "run-done")
    assert code == 403 and [r.id for r in store.runs()] == ["run-done"]


async def test_a_damaged_row_is_named_in_the_list_not_a_500(jp_fetch: Fetch, store: Store) -> None:
    add_run(store, "run-good", 1000.0, state=RunState.COMPLETED)
    add_run(store, "run-bad", 1001.0, lines=2, state=RunState.COMPLETED)
    db = sqlite3.connect(store.path)
    db.execute("UPDATE runs SET summary='{\"cut', ranks='x' WHERE id='run-bad'")
    db.execute("UPDATE ranks SET coords='{' WHERE run_id='run-bad'")
    db.commit()
    db.close()
    runs = {r["id"]: r for r in (await get(jp_fetch, "runs"))["runs"]}
    assert set(runs) == {"run-good", "run-bad"}
    bad = runs["run-bad"]
    assert bad["message"] == "damaged in the history: ranks, summary of run run-bad (read as empty)"
    assert bad["summary"] == {} and bad["ranks"] == []
    detail = await get(jp_fetch, "runs", "run-bad")
    assert [r["coords"] for r in detail["ranks"]] == [{}, {}]
    assert len((await get(jp_fetch, "runs", "run-bad", "logs"))["lines"]) == 2
