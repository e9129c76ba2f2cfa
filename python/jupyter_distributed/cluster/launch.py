"""What every launcher shares: the worker's command line, torchrun's variables for a rank, a
free port, the check of ranks against this machine's cores, and the address the control
channel binds to."""

from __future__ import annotations

import os
import random
import socket
import sys
from pathlib import Path

from ..errors import LaunchError, SpecError
from ..spec import Spec

WORKER_COMMAND = (sys.executable, "-m", "jupyter_distributed.worker")


def check_cores(ranks: int, ranks_per_core: float, oversubscribe: bool) -> None:
    """Refuse more ranks on this machine than its cores allow, unless the user oversubscribes."""
    cores = os.cpu_count() or 1
    cap = max(1, int(cores * ranks_per_core))
    if ranks > cap and not oversubscribe:
        raise SpecError(
            f"{ranks} ranks on this machine with {cores} CPU core(s) (at most {cap}); "
            "use fewer ranks or add --oversubscribe"
        )


def sweep_slots(spec: Spec, ranks_per_core: float, oversubscribe: bool) -> int:
    """Combinations of a sweep at once on this machine: ``--sweep-parallel``, else as many
    clusters as its cores hold; all of them together must fit as one cluster would."""
    asked = spec.sweep.parallel if spec.sweep is not None else None
    slots = asked or max(1, (os.cpu_count() or 1) // spec.world_size)
    slots = min(slots, spec.sweep.size if spec.sweep is not None else 1)
    try:
        check_cores(slots * spec.world_size, ranks_per_core, oversubscribe)
    except SpecError as exc:
        raise SpecError(f"--sweep-parallel {slots}: {exc}") from None
    return slots


def rank_env(spec: Spec, rank: int, master_port: str) -> tuple[tuple[str, str], ...]:
    """torchrun's variables for ``rank``."""
    layout = spec.layout
    c = layout.coords(rank)
    return (
        ("RANK", str(rank)),
        ("WORLD_SIZE", str(layout.world_size)),
        ("LOCAL_RANK", str(c.local_rank)),
        ("LOCAL_WORLD_SIZE", str(layout.procs_per_node)),
        ("GROUP_RANK", str(c.node_rank)),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", master_port),
    )


def free_port(host: str = "127.0.0.1", count: int = 1) -> int:
    """A free port on ``host``; with ``count`` > 1, the first of ``count`` free ports in a row
    (TensorFlow's tasks listen on ``MASTER_PORT + 1 + rank``). A block is drawn below the
    ephemeral range, where no connection of this machine is given a port by the kernel between
    this check and the ranks' bind."""
    if count <= 1:
        with socket.socket() as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    top = _ephemeral_low() - count
    for _ in range(64):
        base = _RNG.randrange(BLOCK_LOW, max(BLOCK_LOW + 1, top))
        if all(_bindable(host, port) for port in range(base, base + count)):
            return base
    raise LaunchError(
        f"no {count} free ports in a row on {host} between {BLOCK_LOW} and {top + count}; "
        "choose MASTER_PORT with --env MASTER_PORT=..."
    )


BLOCK_LOW = 10000  # blocks of ports are drawn from here up to the ephemeral range
_RNG = random.SystemRandom()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def control_host(hosts: tuple[str, ...]) -> str:
    """The address to bind the control channel to: loopback when every host is this machine,
    else this machine's address on the route to the first other host."""
    for host in hosts:
        try:
            target = socket.gethostbyname(host)
        except OSError:
            raise LaunchError(f"host {host} has no address; check --hosts/--hostfile") from None
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((target, 9))  # UDP: picks the route, sends nothing
            except OSError as exc:
                raise LaunchError(f"no route to host {host} ({target}): {exc.strerror}") from None
            source = str(probe.getsockname()[0])
        if source != target and not target.startswith("127."):
            return source
    return "127.0.0.1"
