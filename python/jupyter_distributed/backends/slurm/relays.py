"""A Slurm cluster's node relays: a second step of the ranks' job, ``srun --overlap``, one task
per node, beside the ranks' step and never one of its tasks (``SLURM_PROCID``, the step's
death and its tasks stay the ranks').

It starts once the ranks' step is launched: then the job exists (the kernel outside any
allocation has it made by the ranks' srun, maybe after a wait in the queue) and its nodes are
known, so the relays run on exactly the ranks' nodes, each taking its node's number from
``SLURM_NODEID`` (the steps' nodes are in the job's order). The ranks dial their relay's Unix
socket before it exists; ZeroMQ connects once it does. A relay task that ends is a dead node.

Aggregators (``Distributed.relays = "tree"``, or above 200 nodes) are a third step started with
the relays', one task on the first node of each group of relays, listening on TCP on that
node's ``NodeAddr`` (CurveZMQ); a task that ends is its group of nodes dead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable

from ...cluster.aggregators import AGGREGATOR_COMMAND
from ...cluster.launcher import Launcher
from ...cluster.relays import RELAY_COMMAND, remove_local_directories
from .log import SrunLog

RELAY_STEP = (*RELAY_COMMAND, "SLURM_NODEID")
# (one task per node of its group's first: its number is its task's, the nodes in the job's order)
AGGREGATOR_STEP = (*AGGREGATOR_COMMAND, "SLURM_PROCID")


def relay_argv(
    srun: str,
    job: str,
    hosts: list[str],
    command: tuple[str, ...] = RELAY_STEP,
    what: str = "relays",
) -> tuple[str, ...]:
    """The relays' (or aggregators') srun line: in ``job``, on ``hosts`` (node 0 first), one
    task each."""
    return (
        srun,
        "-v",
        f"--jobid={job}",
        "--overlap",  # (shares the ranks' CPUs, memory and GPUs: it takes none of its own)
        f"--nodes={len(hosts)}",
        f"--ntasks={len(hosts)}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(hosts)}",
        "--kill-on-bad-exit=0",  # (one relay's death is its node's, not every node's)
        "--export=ALL",
        "--label",
        f"--job-name=jupyter-distributed-{what}",
        *command,
    )


class RelayStep:
    """The relays' step of one cluster (or its aggregators', ``command``: a task per group);
    :meth:`start` it once the ranks' step is launched."""

    def __init__(
        self, srun: str, nodes: int, env: dict[str, str], command: tuple[str, ...] = RELAY_STEP
    ) -> None:
        self.srun, self.nodes, self.env, self.command = srun, nodes, env, command
        self.log = SrunLog()
        self.launcher: Launcher | None = None
        self._reported: set[int] = set()

    def start(self, job: str, hosts: list[str], env: dict[str, str]) -> None:
        """On ``hosts``, with ``env`` (the bootstrap with the aggregators' addresses)."""
        what = "relays" if self.command == RELAY_STEP else "aggregators"
        argv = relay_argv(self.srun, job, hosts, self.command, what)
        self.launcher = Launcher(argv, env, self.log.feed)

    def exited(self) -> list[tuple[int, int]]:
        """(node, return code) of the relays that ended since the last call: the tasks srun
        named (task N is node N's relay), every other node once srun itself ended badly."""
        if self.launcher is None:
            return []
        code = self.launcher.proc.poll()
        if code is not None:
            self.launcher.read_to_end(1.0)  # srun's last words name the relays that ended
        ended = [(node, c) for node, c, _host in self.log.failures()]
        if code:  # (0: every relay left on its own, after its ranks)
            ended += [(node, code) for node in range(self.nodes)]
        out: list[tuple[int, int]] = []
        for node, c in ended:
            if node not in self._reported:
                self._reported.add(node)
                out.append((node, c))
        return out

    def terminate(self, grace: float, cancel: Callable[[str], object]) -> None:
        """Once the ranks are gone: the step ends on its own within ``grace`` (each relay leaves
        after its ranks, an aggregator after its relays), else ``cancel`` (scancel) it, then end
        its srun (SIGTERM, SIGKILL after ``grace``): slurmd ends the relays (each removes its
        directory on SIGTERM; the kernel removes those left on its own host)."""
        try:
            self._end(grace, cancel)
        finally:
            remove_local_directories(self.env)  # (what a relay killed by SIGKILL left on this host)

    def _end(self, grace: float, cancel: Callable[[str], object]) -> None:
        if self.launcher is None:
            return
        proc = self.launcher.proc
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)  # (no scancel for a step whose tasks all left)
        if proc.poll() is None and self.log.step:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                cancel(self.log.step)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                proc.wait(grace)
                break
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
        proc.wait()
        self.launcher.remove()
