"""``local``: ranks are processes on this machine, started with the kernel's own Python."""

from __future__ import annotations

from ..plugin import Plugin
from .options import DistributedLocal, LocalOptions

PLUGIN = Plugin(
    name="local",
    title="Local (--backend local: ranks are processes on this machine)",
    backend="jupyter_distributed.backends.local.backend:LocalBackend",
    options=LocalOptions,
    settings=DistributedLocal,
)
