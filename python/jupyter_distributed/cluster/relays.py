"""The kernel's side of node relays (:mod:`.relay`): where they listen (in the kernel's
directory on this machine, in a directory of their own on their node across hosts), their
processes where the backend starts them on this machine, and a dead relay named as a dead node.

``Distributed.relays`` (``Spec.relays``): ``"auto"`` starts them once the ranks span nodes
(``slurm``, ``mpi --hosts``, ``ray`` across Ray nodes); on one machine the kernel is the relay,
its ranks connect to it directly, as before relays. A rank's relay is its node in the plan
(``RankPlan.coords``): the layout's block of ``procs_per_node`` ranks, or where the launcher
really puts it (Slurm's ``-m cyclic``, Ray's placement), then named in the bootstrap's
``relay_of`` for the ranks and the relays. ``"always"`` starts one per node all the same (so
the contract suite runs the relay code on every backend that has them); ``"tree"`` starts a
second level of aggregators above them too (:mod:`.aggregators`); ``"never"`` starts none.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import zmq

from ..collapse import ranks_brief
from ..errors import RankFailure
from ..history.reaper import leftover_prefix
from ..interface import Plan
from ..layout import Layout
from ..pids import newly_ended, pidfds
from ..protocol.signing import BOOTSTRAP_ENV
from .aggregators import (
    AGGREGATOR_COMMAND,
    aggregator_addresses,
    fanout,
    rooted,
    server_keys,
    tcp_addresses,
)
from .launch import free_port
from .nodedirs import NODE_LOCAL_DIR, ours_alone
from .zygote import Forked, ForkRefused, ForkServer

log = logging.getLogger("jupyter_distributed")
Started = subprocess.Popen[bytes] | Forked  # (a relay or an aggregator: spawned, or forked)

RELAY_COMMAND = (sys.executable, "-m", "jupyter_distributed.cluster.relay")
RELAY_MODES = ("auto", "always", "tree", "never")


def relay_addresses(directory: Path, nodes: int) -> dict[str, str]:
    """Where each node's relay listens: a Unix socket in the kernel's directory of mode 0700
    (the bootstrap's ``relays``, by node as a string: JSON's keys)."""
    return {str(n): f"ipc://{directory}/relay-{n}" for n in range(nodes)}


def node_local_addresses(nodes: int, prefix: str) -> dict[str, str]:
    """Where each node's relay listens when the ranks are on other hosts than the kernel (its
    directory is not theirs to reach): a Unix socket in a directory of mode 0700 that the relay
    makes on its own node (:func:`listen_directory`), where its ranks, on the same host, reach
    it. The name is unguessable (a random part, known from the bootstrap) after ``prefix`` (the
    kernel's leftover prefix: a node that is also the kernel's host sweeps it if the kernel
    dies)."""
    base = f"{NODE_LOCAL_DIR}/{prefix}relay-{secrets.token_hex(8)}"
    return {str(n): f"ipc://{base}-{n}/r" for n in range(nodes)}


def remove_local_directories(boot_env: Mapping[str, str]) -> None:
    """After a cluster's relays ended: remove the node-local directories of its relays that are
    on this host and still there (a relay ended by SIGKILL, e.g. by its launcher after a job was
    cancelled, cannot remove its own). Only the bootstrap's own addresses, each a directory of
    this user's alone; another host's are out of reach (its kernel-leftover sweep takes them)."""
    boot = boot_env.get(BOOTSTRAP_ENV)
    for address in (json.loads(boot).get("relays") or {}).values() if boot else ():
        directory = Path(str(address).removeprefix("ipc://")).parent
        if not str(directory).startswith(f"{NODE_LOCAL_DIR}/"):
            continue  # (the kernel's own directory: the cluster removes it)
        with contextlib.suppress(OSError):
            if ours_alone(directory):
                shutil.rmtree(directory, ignore_errors=True)


def relay_nodes(boot_env: Mapping[str, str]) -> int:
    """How many relays the bootstrap environment asks the backend to start (0: none)."""
    boot = boot_env.get(BOOTSTRAP_ENV)
    return len(json.loads(boot).get("relays") or {}) if boot else 0


def relay_map(ranks: Sequence[int], layout: Layout) -> list[int] | None:
    """The bootstrap's ``relay_of`` (each rank's relay, by rank), where the ranks' nodes
    (``ranks``, each rank's node by rank) are not the layout's blocks of ``procs_per_node``
    (Slurm's ``-m cyclic``, Ray's placement): None where they are."""
    block = [layout.coords(r).node_rank for r in range(len(ranks))]
    return None if list(ranks) == block else list(ranks)


def place_relays(
    boot: dict[str, Any], plan: Plan, directory: Path | None, relays: bool, aggregators: bool
) -> tuple[int, int]:
    """Put where the relays listen (and their aggregators, :mod:`.aggregators`) in the
    bootstrap ``boot``: in the kernel's ``directory`` where the ranks are on this machine, else
    on their nodes. How many relays there are (0: none), and how many each aggregator holds
    (0: none, the relays dial the kernel)."""
    # each rank's relay: its node in the plan (Slurm's -m cyclic, Ray's placement)
    relay_of = relay_map([r.coords.node_rank for r in plan.ranks], plan.spec.layout)
    nodes = max(relay_of) + 1 if relay_of else plan.spec.layout.nodes
    if relay_of is not None:  # (each rank's node: its relay's, and its NODE_RANK under mpi)
        boot["relay_of"] = relay_of
    if relays and directory is not None:
        boot["relays"] = relay_addresses(directory, nodes)
    elif relays and zmq.has("ipc"):  # ranks on other hosts: a Unix socket on their node
        boot["relays"] = node_local_addresses(nodes, leftover_prefix())
    else:
        return 0, 0
    per = fanout(nodes, plan.spec.relays == "tree") if aggregators else 0
    if not per:
        return nodes, 0
    if directory is not None:
        boot["aggregators"] = aggregator_addresses(directory, nodes, per)
    else:  # on the first node of each group, on TCP (CurveZMQ where the kernel's channel is)
        hosts = {r.coords.node_rank: r.host for r in reversed(plan.ranks)}
        firsts = [hosts[node] for node in range(0, nodes, per)]
        boot["aggregators"] = tcp_addresses(firsts, free_port(count=len(firsts)))
        if boot.get("curve"):
            boot["aggregator_curve"] = server_keys()
    boot["fanout"] = per
    rooted(boot)  # (several: one of them merges the others', the kernel takes one per cell)
    return nodes, per


def relay_failure(ranks: Sequence[int], node: int, host: str, code: int, now: float) -> RankFailure:
    """A dead relay is a dead node: "relay of node 1 on host h died: its ranks 4-7 are gone"
    (``ranks``: the node's)."""
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    gone = f"rank {ranks[0]} is" if len(ranks) == 1 else f"ranks {ranks_brief(ranks)} are"
    return RankFailure(
        rank=-1, t=now, host=host, kind="relay",
        evalue=f"relay of node {node} on host {host} died ({how}): its {gone} gone",
        exit_code=code if code >= 0 else None, signal=-code if code < 0 else None,
    )  # fmt: skip


class LocalRelays:
    """One relay process per node on this machine (``local`` with relays ``"always"``), and
    the aggregators above them where the bootstrap has some (:mod:`.aggregators`), each in its
    own process group, their output in ``logdir``: forked from the ranks' fork ``server``
    where there is one (:mod:`.zygote`), else spawned."""

    def __init__(
        self, nodes: int, env: Mapping[str, str], logdir: Path, server: ForkServer | None = None
    ) -> None:
        self.procs: dict[int, Started] = {}
        self.aggregators: dict[int, Started] = {}
        self._reported: set[int] = set()
        self._reported_aggregators: set[int] = set()
        self.host = socket.gethostname()
        self._server = server
        boot = json.loads(env.get(BOOTSTRAP_ENV) or "{}")
        for index in range(len(boot.get("aggregators") or {})):  # (before their relays)
            self.aggregators[index] = self._start(
                AGGREGATOR_COMMAND, str(index), env, logdir / f"aggregator-{index}.log"
            )
        for node in range(nodes):
            self.procs[node] = self._start(
                RELAY_COMMAND, str(node), env, logdir / f"relay-{node}.log"
            )

    def _start(
        self, command: Sequence[str], number: str, env: Mapping[str, str], log_path: Path
    ) -> Started:
        """A relay's or an aggregator's process (``command`` with its ``number``), in its own
        process group, output to ``log_path``."""
        if self._server is not None:
            try:
                module = command[2]  # (``python -m MODULE``)
                pid = self._server.fork(dict(env), log_path, module, (number,))
                return Forked(self._server, pid)
            except ForkRefused as exc:  # (it cannot: this one and the rest are spawned)
                log.warning("jupyter-distributed: relays are spawned, not forked: %s", exc)
                self._server = None
        with log_path.open("wb") as log_file:
            return subprocess.Popen(  # noqa: S603 (our own relay command)
                (*command, number),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def exited(self) -> list[tuple[int, int]]:
        """(node, return code) of relays that ended since the last call."""
        return newly_ended(self.procs, self._reported)

    def aggregators_exited(self) -> list[tuple[int, int]]:
        """(index, return code) of aggregators that ended since the last call."""
        return newly_ended(self.aggregators, self._reported_aggregators)

    def all(self) -> list[Started]:
        return [*self.procs.values(), *self.aggregators.values()]

    def sentinels(self) -> list[int]:
        return pidfds(p.pid for p in self.all())

    def _running(self) -> bool:
        return any(p.poll() is None for p in self.all())

    def terminate(self, grace: float) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in self.all():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self._running():
                time.sleep(0.01)
        for proc in self.all():
            proc.wait()
