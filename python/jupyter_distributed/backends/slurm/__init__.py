"""``--backend slurm``: the ranks are the tasks of one ``srun`` step (see :mod:`.backend`).

This module is the backend's declaration (``PLUGIN``): it imports nothing heavy and runs no
Slurm command."""

from __future__ import annotations

from traitlets import Unicode

from ...settings import Settings
from ..plugin import Plugin
from .options import SlurmOptions


class DistributedSlurm(Settings):
    """Defaults of ``--backend slurm`` (``c.DistributedSlurm.*``)."""

    env_prefix = "JUPYTER_DISTRIBUTED_SLURM_"
    partition = Unicode(None, allow_none=True, help="default --partition").tag(config=True)
    account = Unicode(None, allow_none=True, help="default --account").tag(config=True)
    time = Unicode(None, allow_none=True, help="default --time").tag(config=True)


PLUGIN = Plugin(
    name="slurm",
    title="Slurm (--backend slurm; inside an allocation the step uses it; defaults: "
    "c.DistributedSlurm.* or JUPYTER_DISTRIBUTED_SLURM_*)",
    backend="jupyter_distributed.backends.slurm.backend:SlurmBackend",
    options=SlurmOptions,
    settings=DistributedSlurm,
    doctor="jupyter_distributed.backends.slurm.doctor:check",
)
