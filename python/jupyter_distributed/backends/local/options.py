"""Settings of ``--backend local``."""

from __future__ import annotations

from dataclasses import dataclass, field

from traitlets import Enum, Float

from ...errors import SpecError
from ...settings import Settings
from ...spec import BackendOptions
from ..plugin import option

#: Which local ranks are forked from a fork server (see :mod:`...cluster.zygote`).
FORK = ("all", "torch", "never")


@dataclass(frozen=True)
class LocalOptions(BackendOptions):
    backend: str = field(default="local", init=False)
    oversubscribe: bool = option(
        False, "allow more ranks on this machine than ranks_per_core × its CPU cores"
    )
    ranks_per_core: float = 4.0  # configuration only (DistributedLocal.ranks_per_core)
    fork: str = "all"  # configuration only (DistributedLocal.fork)

    def __post_init__(self) -> None:
        if self.fork not in FORK:
            raise SpecError(
                f"DistributedLocal.fork is {self.fork!r}: use 'all', 'torch' or 'never'"
            )


class DistributedLocal(Settings):
    """Defaults of ``--backend local`` (``c.DistributedLocal.*``)."""

    env_prefix = "JUPYTER_DISTRIBUTED_LOCAL_"
    ranks_per_core = Float(
        4.0, min=0.0, help="ranks on this machine per CPU core before --oversubscribe is needed"
    ).tag(config=True)
    fork = Enum(
        list(FORK),
        "all",
        help="which ranks are forked from a fork server that imported their modules once, "
        "instead of spawned with the kernel's Python: 'all' (pyzmq and the rank's own code, "
        "and torch for a torch strategy), 'torch' (a torch strategy's only), 'never'",
    ).tag(config=True)
