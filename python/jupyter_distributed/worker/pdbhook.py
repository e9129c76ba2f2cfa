"""What ``pdb.set_trace`` is on a rank, without importing ``pdb`` before a rank needs it.

``pdb`` (with ``bdb``, ``cmd``, ``code``, ``glob``, ``pprint``) is about 1.7 MB that an idle
rank would build at its start and free at its exit (0.7 ms of CPU there, for each of hundreds of
ranks stopping at once). So :func:`redirect_set_trace` replaces ``pdb.set_trace`` at once where
``pdb`` is already imported, else as soon as it is: a finder first on ``sys.meta_path`` lets the
usual finders find ``pdb`` and replaces the function once the module has run.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any


class _WhenPdbImported:
    def __init__(self) -> None:
        self.set_trace: Callable[..., None] | None = None

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pdb":
            return None
        sys.meta_path.remove(self)  # (once; the usual finders find it)
        from importlib.util import find_spec

        spec = find_spec("pdb")
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None:
            return spec
        execute = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            if self.set_trace is not None:
                setattr(module, "set_trace", self.set_trace)  # noqa: B010 (made just now)

        loader.exec_module = exec_module
        return spec


_HOOK = _WhenPdbImported()


def redirect_set_trace(set_trace: Callable[..., None]) -> None:
    """``pdb.set_trace`` is ``set_trace`` from now on, whenever ``pdb`` is imported."""
    module = sys.modules.get("pdb")
    if module is not None:
        setattr(module, "set_trace", set_trace)  # noqa: B010
        return
    _HOOK.set_trace = set_trace
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
