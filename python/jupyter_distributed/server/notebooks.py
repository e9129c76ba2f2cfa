"""The notebook each live kernel has open now, from the Jupyter server's sessions.

A run records the notebook its kernel started with (``JPY_SESSION_NAME``, an absolute path) and
the kernel's id. A notebook renamed since ("Untitled.ipynb" to "train.ipynb") keeps its kernel,
whose session has the new path: the handlers list the sessions once per request, on the event
loop, and :class:`~.api.History` answers each run of a live kernel with its notebook's path now.
The store never knows about Jupyter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Protocol

from jupyter_server.utils import ApiPath, to_os_path


class Sessions(Protocol):
    """What is used of jupyter_server's ``SessionManager``."""

    async def list_sessions(self) -> list[dict[str, Any]]: ...


async def kernel_notebooks(sessions: Sessions, root_dir: str) -> dict[str, str]:
    """Kernel id -> the absolute path of the notebook its session has open (as
    ``JPY_SESSION_NAME`` names it); a notebook's session wins over a console's on the same
    kernel. Empty when the sessions cannot be read: the runs keep their recorded paths."""
    try:
        models = await sessions.list_sessions()
    except sqlite3.Error:
        return {}
    found: dict[str, str] = {}
    for model in sorted(models, key=lambda m: m.get("type") == "notebook"):  # notebooks last
        kernel = model.get("kernel")
        path = model.get("path")
        if isinstance(kernel, Mapping) and isinstance(path, str) and path:
            found[str(kernel.get("id", ""))] = to_os_path(ApiPath(path), root_dir)
    found.pop("", None)
    return found
