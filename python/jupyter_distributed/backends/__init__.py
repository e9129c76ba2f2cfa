"""The backend registry: one line per backend, naming the module that holds its ``PLUGIN``.

Adding a backend is one folder plus one line here. The folder's ``__init__.py`` (or the module)
declares ``PLUGIN = Plugin(...)`` (see :mod:`.plugin`): its options (flags), settings (traitlets
defaults), line commands and an optional follower of detached runs. Nothing outside that folder
names the backend: ``%%distributed``'s flags, ``%distributed``'s commands, ``%distributed
config`` and the server's follower are all built from this registry. Plugin modules import no
heavy library; the Backend class itself is imported only when a cell uses it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import SpecError
from .plugin import Plugin

if TYPE_CHECKING:  # the interface brings the history; flags and the server need neither
    from ..interface import Backend
    from .hooks import FollowHook

_REGISTRY: dict[str, str] = {
    "local": "jupyter_distributed.backends.local",
    "mpi": "jupyter_distributed.backends.mpi",
    "ray": "jupyter_distributed.backends.ray",
    "sagemaker": "jupyter_distributed.backends.sagemaker",
    "slurm": "jupyter_distributed.backends.slurm",
}


def names() -> list[str]:
    return sorted(_REGISTRY)


def plugin(name: str) -> Plugin:
    try:
        module = _REGISTRY[name]
    except KeyError:
        raise SpecError(f"unknown --backend {name!r}; choose one of {', '.join(names())}") from None
    found: Plugin = importlib.import_module(module).PLUGIN
    return found


def plugins() -> list[Plugin]:
    """Every registered backend's plugin, in registry order."""
    return [plugin(name) for name in _REGISTRY]


def get_backend(name: str) -> Backend:
    return plugin(name).backend_class()()


def follower(name: str) -> FollowHook | None:
    """The function that follows a detached run of backend ``name``, if it has one."""
    if name not in _REGISTRY:
        return None
    return plugin(name).follow_hook()


def followable() -> frozenset[str]:
    """Backends whose detached runs the server can follow."""
    return frozenset(p.name for p in plugins() if p.follow)
