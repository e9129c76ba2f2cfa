"""An MPI cluster's node relays (a second ``mpirun``, one process per host) and their
aggregators (a third, one process on the first host of each group; ``Distributed.relays =
"tree"``, or above 200 nodes): never ranks, so the ranks' ``COMM_WORLD`` stays theirs. A relay
that ends is its node dead, an aggregator its group of nodes (mpirun names the process)."""

from __future__ import annotations

import os

from ...cluster.aggregators import AGGREGATOR_COMMAND
from ...cluster.launcher import Launcher
from ...cluster.relays import RELAY_COMMAND
from ...protocol.signing import BOOTSTRAP_ENV
from .log import MpirunLog
from .options import MpiOptions, default_options, merge_options, user_options

RELAY = (*RELAY_COMMAND, "OMPI_COMM_WORLD_RANK")
AGGREGATOR = (*AGGREGATOR_COMMAND, "OMPI_COMM_WORLD_RANK")


def as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


class RelayMpirun:
    """A second ``mpirun`` beside the ranks' one, one relay per node (never one of the ranks:
    their ``COMM_WORLD`` stays theirs) on the ranks' hosts in their order, with the user's
    options (a launch agent, interfaces) under ours; its process rank is the relay's node. Or
    a third, ``command`` :data:`AGGREGATOR`: one aggregator on the first host of each group,
    its process rank the aggregator's number."""

    def __init__(
        self,
        mpirun: str,
        options: MpiOptions,
        env: dict[str, str],
        command: tuple[str, ...],
        hosts: list[str],
        count: int,
    ) -> None:
        """``count`` processes, one on each of ``hosts`` (none: on this machine)."""
        self.log, self.env = MpirunLog(), env
        users = [*user_options(options.default_mpi_options), *user_options(options.mpi_options)]
        where = ["--host", ",".join(f"{h}:1" for h in hosts)] if hosts else []
        forwarded = [("-x", name) for name in (BOOTSTRAP_ENV, "PYTHONPATH") if name in env]
        ours = merge_options(users, default_options(as_root(), 1))  # (ours win: one per node)
        argv = [mpirun, *ours, *(t for o in forwarded for t in o), "-np", str(count), *where]
        self.launcher = Launcher((*argv, *command), env, self.log.feed)
        self.proc = self.launcher.proc
        self._reported: set[int] = set()

    def exited(self) -> list[tuple[int, int]]:
        code = self.proc.poll()
        if code is not None:
            self.launcher.read_to_end(1.0)  # mpirun's last words name the relay that ended
        failures = self.log.failures()
        if code is not None and not failures:  # mpirun ended without naming one: all are gone
            failures = [(0, code)]
        out = [(node, c) for node, c in failures if node not in self._reported]
        self._reported.update(node for node, _ in out)
        return out
