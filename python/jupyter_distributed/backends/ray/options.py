"""Settings of ``--backend ray`` (pure: nothing here imports ray)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import SpecError
from ...spec import BackendOptions
from ..plugin import option as flag

PLACEMENTS = {"spread": "SPREAD", "pack": "PACK"}
_RESOURCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_:./-]*$")


@dataclass(frozen=True)
class RayOptions(BackendOptions):
    """``--ray-address``, ``--ray-placement spread|pack``, ``--resources K=V,..`` (per rank) and
    ``--gpus-per-rank``."""

    address: str | None = flag(
        None,
        "Ray cluster (default: RAY_ADDRESS, else the notebook's ray.init(); "
        "'local' starts a local Ray)",
        metavar="HOST:PORT",
        flag="--ray-address",
    )
    placement_strategy: str = flag(
        "spread", "where the ranks' bundles go: spread (default) or pack", metavar="KIND",
        flag="--ray-placement",
    )  # fmt: skip
    resources: tuple[tuple[str, float], ...] = flag(
        (), "custom Ray resources per rank", metavar="K=V,..", repeat=False
    )
    gpus_per_rank: float = flag(0.0, "GPUs per rank (default 0)", metavar="G")
    cpus_per_rank: float = 1.0  # configuration only (DistributedRay.cpus_per_rank)
    backend: str = field(default="ray", init=False)

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> RayOptions:
        values = {**defaults, **given}
        values["resources"] = parse_resources(str(given.get("resources") or ""))
        values["address"] = values.get("address") or None
        return cls(**values)

    def __post_init__(self) -> None:
        if self.placement_strategy not in PLACEMENTS:
            raise SpecError(
                f"--ray-placement must be spread or pack; got {self.placement_strategy!r}"
            )
        if self.gpus_per_rank < 0:
            raise SpecError(f"--gpus-per-rank must be 0 or more, got {self.gpus_per_rank:g}")
        for name, amount in self.resources:
            if not _RESOURCE.match(name) or name in ("CPU", "GPU"):
                raise SpecError(
                    f"--resources: {name!r} is not a custom Ray resource name "
                    "(CPU and GPU have their own settings)"
                )
            if amount <= 0:
                raise SpecError(f"--resources {name}={amount:g}: the amount must be positive")

    def bundle(self) -> dict[str, float]:
        """What each rank reserves in the placement group."""
        bundle = {"CPU": self.cpus_per_rank, **dict(self.resources)}
        if self.gpus_per_rank:
            bundle["GPU"] = self.gpus_per_rank
        return bundle

    def where(self) -> tuple[str | None, str]:
        """The cluster to use and where that choice came from: never a hidden local cluster."""
        if self.address:
            return self.address, "--ray-address"
        if os.environ.get("RAY_ADDRESS"):
            return os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
        return None, "the kernel's ray.init()"


def parse_resources(text: str) -> tuple[tuple[str, float], ...]:
    """``"accel=1,mem_gb=4"`` → ``(("accel", 1.0), ("mem_gb", 4.0))``."""
    out: list[tuple[str, float]] = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = item.partition("=")
        try:
            amount = float(value)
        except ValueError:
            amount = -1.0
        if not eq or amount < 0:
            raise SpecError(f"--resources {item!r} must look like NAME=AMOUNT")
        out.append((name.strip(), amount))
    return tuple(out)
