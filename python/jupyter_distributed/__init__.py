"""jupyter-distributed: run a notebook cell on many ranks and watch them live.

Entry points only: the IPython extension, the JupyterLab extension paths and the
Jupyter server extension. Everything else lives in its own module.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%distributed`` and ``%distributed`` (``%load_ext jupyter_distributed``)."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-distributed"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_distributed.server"}]
