"""``%distributed doctor --backend ray``: what this kernel needs to start ranks on Ray."""

from __future__ import annotations

import importlib.util
import sys

from .options import RayOptions


def check() -> list[tuple[bool, str]]:
    """(ok, what) lines, each saying what to do when it is not ok."""
    if importlib.util.find_spec("ray") is None:
        return [(False, "ray is not installed in the kernel: pip install 'ray[default]'")]
    lines: list[tuple[bool, str]] = [(True, "ray is installed in the kernel")]
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        lines.append((True, "the notebook called ray.init(): its cluster is used"))
        lines.append(
            (
                True,
                "ship the package with ray.init(runtime_env={'py_modules': "
                "[jupyter_distributed]}) or install it on the cluster",
            )
        )
        return lines
    address, source = RayOptions().where()
    lines.append(
        (
            address is not None,
            f"cluster: {address} (from {source})"
            if address
            else "no cluster: give --ray-address, set RAY_ADDRESS or call ray.init() first "
            "(--ray-address local starts one here)",
        )
    )
    return lines
