"""Settings of ``--backend local``."""

from __future__ import annotations

from dataclasses import dataclass, field

from traitlets import Float

from ...settings import Settings
from ...spec import BackendOptions
from ..plugin import option


@dataclass(frozen=True)
class LocalOptions(BackendOptions):
    backend: str = field(default="local", init=False)
    oversubscribe: bool = option(
        False, "allow more ranks on this machine than ranks_per_core × its CPU cores"
    )
    ranks_per_core: float = 4.0  # configuration only (DistributedLocal.ranks_per_core)


class DistributedLocal(Settings):
    """Defaults of ``--backend local`` (``c.DistributedLocal.*``)."""

    env_prefix = "JUPYTER_DISTRIBUTED_LOCAL_"
    ranks_per_core = Float(
        4.0, min=0.0, help="ranks on this machine per CPU core before --oversubscribe is needed"
    ).tag(config=True)
