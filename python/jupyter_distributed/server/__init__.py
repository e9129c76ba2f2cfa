"""The Jupyter server extension: REST endpoints and a live stream under
``{base_url}/jupyter-distributed/api/`` (see :mod:`.wire` for the endpoints and their JSON).

Enabled for every server by ``jupyter-config/jupyter_server_config.d/jupyter_distributed.json``,
which the wheel installs; ``jupyter_distributed._jupyter_server_extension_points`` points here.
It reads the run history from the store (``c.Distributed.store_path``,
``$JUPYTER_DISTRIBUTED_STORE`` or the Jupyter data dir), so it works with no kernel running;
control actions are queued in the store for the kernel.
SageMaker runs whose kernel is gone are followed by the server itself (:mod:`.follower`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.utils import url_path_join

from ..backends import plugins
from ..errors import StoreError
from ..history.store import Store
from ..settings import Distributed
from .api import History
from .follower import Follower
from .handlers import (
    SETTINGS_KEY,
    CancelHandler,
    DisplayHandler,
    EventsHandler,
    LogsHandler,
    MetricsHandler,
    RunHandler,
    RunsHandler,
    StacksHandler,
    StopHandler,
    StreamHandler,
    VersionHandler,
)
from .stream import Tail

#: Every route of the extension lives under ``{base_url}/{URL_PREFIX}/``.
URL_PREFIX = "jupyter-distributed"

_ID = r"([^/]+)"


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the extension's handlers with the server's web application."""
    web_app = serverapp.web_app
    settings = Distributed(parent=serverapp)  # c.Distributed.* in jupyter_server_config.py
    store: Store | None = None
    try:
        store = Store.open(settings.store_path or None)  # (the follower shares it)
    except StoreError as exc:  # still load: every route answers 503 with what to do
        serverapp.log.error("jupyter_distributed: %s", exc)
        web_app.settings[SETTINGS_KEY] = {
            "history": History(None, str(exc), settings.straggler_threshold),
            "tail": None,
        }
    else:
        web_app.settings[SETTINGS_KEY] = {
            "history": History(store, straggler_threshold=settings.straggler_threshold),
            "tail": Tail(store),
        }
    api = url_path_join(web_app.settings["base_url"], URL_PREFIX, "api")
    routes: list[tuple[str, type]] = [
        ("version", VersionHandler),
        ("runs", RunsHandler),
        (f"runs/{_ID}", RunHandler),
        (f"runs/{_ID}/logs", LogsHandler),
        (f"runs/{_ID}/metrics", MetricsHandler),
        (f"runs/{_ID}/displays/([0-9]+)", DisplayHandler),
        (f"runs/{_ID}/cancel", CancelHandler),
        (f"runs/{_ID}/stacks", StacksHandler),
        (f"clusters/{_ID}/stop", StopHandler),
        ("stream", StreamHandler),
        ("events", EventsHandler),
    ]
    web_app.add_handlers(".*$", [(url_path_join(api, path), handler) for path, handler in routes])
    if store is None:
        return
    serverapp.log.info(
        "jupyter_distributed: server extension loaded at %s (history: %s)", api, store.path
    )
    # Each backend's configured defaults (c.DistributedSageMaker.region, .endpoint_url, ...).
    defaults = {p.name: p.defaults(p.settings(parent=serverapp)) for p in plugins() if p.settings}
    _start_follower(serverapp, Follower(store.path, defaults=defaults))


def _start_follower(serverapp: Any, follower: Follower) -> None:
    """Follow orphaned SageMaker runs until the server shuts down (its extension clean-up)."""
    follower.start()
    serverapp.web_app.settings[SETTINGS_KEY]["follower"] = follower
    cleanup = serverapp.cleanup_extensions

    async def cleanup_extensions() -> None:
        await asyncio.to_thread(follower.stop)
        await cleanup()

    serverapp.cleanup_extensions = cleanup_extensions
