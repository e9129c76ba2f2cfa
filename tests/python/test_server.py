"""The server extension's REST endpoints, through a real Jupyter server."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError, HTTPResponse

import jupyter_distributed
from jupyter_distributed.server.wire import API_VERSION

Fetch = Callable[..., Awaitable[HTTPResponse]]


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}}}


async def test_version_with_token(jp_fetch: Fetch) -> None:
    response = await jp_fetch("jupyter-distributed", "api", "version")

    assert response.code == 200
    assert json.loads(response.body) == {
        "version": jupyter_distributed.__version__,
        "api_version": API_VERSION,
    }


async def test_version_refused_without_auth(jp_fetch: Fetch) -> None:
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("jupyter-distributed", "api", "version", headers={"Authorization": ""})

    assert refused.value.code == 403
