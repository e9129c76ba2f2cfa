"""``%distributed doctor --backend slurm``: what this kernel needs to start ranks with srun."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from ...errors import LaunchError
from .backend import controller_address

PROBE = ("srun", "--nodes=1", "--ntasks=1", "--immediate=10")


def check() -> list[tuple[bool, str]]:
    """(ok, what) lines, each saying what to do when it is not ok."""
    lines: list[tuple[bool, str]] = []
    for tool in ("srun", "scontrol", "squeue", "scancel"):
        found = shutil.which(tool)
        lines.append(
            (bool(found), f"{tool}: {found}" if found else f"{tool} is not on PATH (slurm-client)")
        )
    try:
        address = controller_address()
        lines.append((True, f"slurmctld answers; it is at {address}"))
    except LaunchError as exc:
        lines.append((False, str(exc)))
    job = os.environ.get("SLURM_JOB_ID")
    lines.append(
        (
            True,
            f"inside allocation {job}: the ranks run as a step of it"
            if job
            else "not inside an allocation: srun asks for a new job (it may queue)",
        )
    )
    try:
        probe = subprocess.run(  # noqa: S603 (the kernel's own Python, on one node)
            [*PROBE, sys.executable, "-c", "import jupyter_distributed, zmq, cloudpickle"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        ok = probe.returncode == 0
        lines.append(
            (
                ok,
                f"a node runs {sys.executable} with jupyter_distributed, pyzmq and cloudpickle"
                if ok
                else f"a node cannot run {sys.executable} -c 'import jupyter_distributed': "
                + (probe.stderr.strip().splitlines() or ["no output"])[-1]
                + " (the nodes need the same Python with this package)",
            )
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        lines.append((False, f"could not run a one-task step to check the nodes: {exc}"))
    return lines
