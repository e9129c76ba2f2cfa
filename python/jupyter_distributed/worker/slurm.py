"""Inside a Slurm step: where the rendezvous host is (standard library only)."""

from __future__ import annotations

import os
import socket
import subprocess


def _scontrol(*args: str) -> str:
    try:
        out = subprocess.run(  # noqa: S603 (Slurm's own client)
            ["scontrol", *args],  # noqa: S607 (scontrol is found on PATH like srun was)
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout


def _address(name: str) -> str:
    """``name`` when it resolves here, else the node's NodeAddr from Slurm."""
    try:
        socket.gethostbyname(name)
    except OSError:
        for word in _scontrol("show", "node", "-o", name).split():
            if word.startswith("NodeAddr="):
                return word.removeprefix("NodeAddr=")
    return name


def node_addresses(environ: dict[str, str] | os._Environ[str] = os.environ) -> list[str]:
    """The step's nodes in order (``scontrol show hostnames``), each as an address this rank
    can use; empty outside a step."""
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return []
    return [_address(name) for name in _scontrol("show", "hostnames", nodelist).split()]


def first_host_address(environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """MASTER_ADDR for a step: its first node, as an address this rank can use."""
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return None
    names = _scontrol("show", "hostnames", nodelist).split()
    return _address(names[0]) if names else None


def export_master_addr() -> None:
    """Set MASTER_ADDR from the step where the kernel could not know it (before allocation)."""
    if "MASTER_ADDR" not in os.environ and "SLURM_PROCID" in os.environ:
        addr = first_host_address()
        if addr:
            os.environ["MASTER_ADDR"] = addr
