"""The Jupyter server extension: REST endpoints under ``{base_url}/jupyter-distributed/``.

Enabled for every server by ``jupyter-config/jupyter_server_config.d/jupyter_distributed.json``,
which the wheel installs; ``jupyter_distributed._jupyter_server_extension_points`` points here.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import url_path_join

from .handlers import VersionHandler

#: Every route of the extension lives under ``{base_url}/{URL_PREFIX}/``.
URL_PREFIX = "jupyter-distributed"


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the extension's handlers with the server's web application."""
    web_app = serverapp.web_app
    base_url = web_app.settings["base_url"]
    api = url_path_join(base_url, URL_PREFIX, "api")
    web_app.add_handlers(".*$", [(url_path_join(api, "version"), VersionHandler)])
    serverapp.log.info("jupyter_distributed: server extension loaded at %s", api)
