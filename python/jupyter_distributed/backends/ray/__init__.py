"""``--backend ray``: the ranks are actors of one placement group on the user's Ray cluster
(see :mod:`.backend`).

This module is the backend's declaration (``PLUGIN``): it imports nothing heavy (not ray)."""

from __future__ import annotations

from traitlets import Float, Unicode

from ...settings import Settings
from ..plugin import Plugin
from .options import RayOptions


class DistributedRay(Settings):
    """Defaults of ``--backend ray`` (``c.DistributedRay.*``)."""

    env_prefix = "JUPYTER_DISTRIBUTED_RAY_"
    placement_strategy = Unicode("spread", help="default --ray-placement: spread or pack").tag(
        config=True
    )
    cpus_per_rank = Float(1.0, min=0.0, help="CPUs each rank reserves in its bundle").tag(
        config=True
    )


PLUGIN = Plugin(
    name="ray",
    title="Ray (--backend ray; defaults: c.DistributedRay.* or JUPYTER_DISTRIBUTED_RAY_*)",
    backend="jupyter_distributed.backends.ray.backend:RayBackend",
    options=RayOptions,
    settings=DistributedRay,
    doctor="jupyter_distributed.backends.ray.doctor:check",
)
