"""How a relay or an aggregator process starts (``python -m jupyter_distributed.cluster.relay
NODE``, ``... .aggregator INDEX``): its number from its argument, the bootstrap from its
environment, SIGTERM held until it holds its directory, then it serves until it leaves."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import zmq

from ..pids import die_with_parent
from ..protocol.signing import BOOTSTRAP_ENV
from .nodedirs import remove_directory

TERMINATED = 128 + signal.SIGTERM  # its exit code when ended by SIGTERM (as a shell says it)


class Served(Protocol):
    """A relay or an aggregator (:class:`~.relay.Hop`), as :func:`run` drives it."""

    directory: Path | None

    def serve(self) -> None: ...


def run(
    argv: list[str], make: Callable[[dict[str, Any], int], Served], usage: str, name: str
) -> int:
    """Start a relay or an aggregator (``make``, with its number from ``argv``) from the
    bootstrap's environment and serve (``usage``: its module and argument; ``name``: what its
    errors call it)."""
    number = os.environ.get(argv[0], argv[0]) if len(argv) == 1 else ""
    if not number.isdigit() or BOOTSTRAP_ENV not in os.environ:
        sys.stderr.write(f"usage: python -m jupyter_distributed.cluster.{usage} (a backend's)\n")
        return 2
    die_with_parent()
    boot = json.loads(os.environ.pop(BOOTSTRAP_ENV))
    # (its directory is removed first; not 0, which says it left after everyone below had)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(TERMINATED))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # (until it holds the directory)
    try:
        hop = make(boot, int(number))
    except (OSError, zmq.ZMQError) as e:
        sys.stderr.write(f"jupyter-distributed {name} {number}: {e}\n")
        return 1
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        hop.serve()
    finally:
        remove_directory(hop.directory)
    return 0
