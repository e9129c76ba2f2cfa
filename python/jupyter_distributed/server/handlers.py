"""HTTP handlers: thin, authenticated, JSON in and out."""

from __future__ import annotations

import json

from jupyter_server.base.handlers import APIHandler
from tornado import web

from .. import __version__


class VersionHandler(APIHandler):
    """``GET .../jupyter-distributed/api/version``: the installed package version.

    Lets a client check which version of the package the server runs.
    """

    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps({"version": __version__}))
