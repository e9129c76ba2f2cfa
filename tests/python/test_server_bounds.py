"""Every integer a route takes is bounded: a seq, rank, offset or limit past what the history
can hold is a 400 with a one-line message, never a 500 (SQLite's integers are 64-bit)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_distributed.events import DisplayEvent
from jupyter_distributed.history.store import Store
from jupyter_distributed.server.api import MAX_INT

from .test_server_api import API, Fetch, add_run, jp_server_config, store, store_path  # noqa: F401

HUGE = [str(2**63 - 1), str(2**63 - 4000), str(2**63), str(2**64), str(-(2**63)), "9" * 5000]


async def _status(fetch: Fetch, *path: str, method: str = "GET", **params: Any) -> tuple[int, str]:
    body = b"" if method == "POST" else None
    try:
        response = await fetch(*API, *path, method=method, body=body, params=params)
    except HTTPClientError as err:
        body = err.response.body if err.response is not None else b"{}"
        message = str(json.loads(body).get("message"))
        return err.code, message
    return response.code, ""


@pytest.mark.parametrize("seq", HUGE[:4])
async def test_a_display_past_the_bound_is_400(jp_fetch: Fetch, store: Store, seq: str) -> None:  # noqa: F811
    add_run(store, "run-a", 1000.0)
    store.append([DisplayEvent("run-a", 0, 1001.0, {"text/plain": "x"})])
    code, message = await _status(jp_fetch, "runs", "run-a", "displays", seq)
    assert (code, message) == (400, f"display={seq} must be an integer of at most {MAX_INT}")


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize(
    ("path", "name"),
    [
        (("runs", "run-a", "logs"), "before"),
        (("runs", "run-a", "logs"), "after"),
        (("runs", "run-a", "logs"), "limit"),
        (("runs", "run-a", "logs"), "rank"),
        (("runs", "run-a", "metrics"), "after"),
        (("runs", "run-a", "metrics"), "limit"),
        (("runs", "run-a", "stacks"), "after"),
        (("runs",), "limit"),
        (("events",), "after"),
    ],
)
async def test_query_integers_past_the_bound_are_400(
    jp_fetch: Fetch,
    store: Store,  # noqa: F811
    path: tuple[str, ...],
    name: str,
    value: str,
) -> None:
    add_run(store, "run-a", 1000.0, lines=3)
    code, message = await _status(jp_fetch, *path, **{name: value})
    assert code == 400, message
    assert "\n" not in message
    assert message.startswith(f"query argument {name}=")


async def test_a_stacks_request_for_a_huge_rank_is_400(jp_fetch: Fetch, store: Store) -> None:  # noqa: F811
    add_run(store, "run-a", 1000.0)
    for rank in HUGE:
        code, message = await _status(jp_fetch, "runs", "run-a", "stacks", method="POST", rank=rank)
        assert code == 400 and message.startswith("query argument rank="), message


async def test_the_largest_cursors_still_answer(jp_fetch: Fetch, store: Store) -> None:  # noqa: F811
    add_run(store, "run-a", 1000.0, lines=3)
    code, _ = await _status(jp_fetch, "runs", "run-a", "logs", before=str(MAX_INT))
    assert code == 200
    page = json.loads(
        (await jp_fetch(*API, "runs", "run-a", "logs", params={"before": MAX_INT})).body
    )
    assert [line["text"] for line in page["lines"]][:1] == ["line 0 <b>bold</b>"]
    code, message = await _status(jp_fetch, "runs", "run-a", "displays", str(MAX_INT))
    assert (code, message) == (404, f"no display {MAX_INT} in run 'run-a'")
