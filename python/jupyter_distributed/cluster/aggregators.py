"""A second level of relays above the node relays (issue 26): aggregators, each between the
kernel and about √nodes node relays, so that the kernel talks to about √nodes peers (35 at
1,250 nodes of 8 ranks: 10,000 ranks), not one per node.

``Distributed.relays`` (``Spec.relays``): with node relays, a second level once there are more
than :data:`AGGREGATE_ABOVE` nodes; ``"tree"`` starts one whatever the count of nodes (so that
tests run the aggregator code at small scale). Node ``n``'s relay dials aggregator
``n // fanout`` (:func:`upward`) instead of the kernel; the aggregators dial the kernel. The
bootstrap says where they listen (``aggregators``, by number as a string) and the ``fanout``.

What an aggregator is and vouches for: :mod:`.aggregator`. Where it runs: on ``local``, a
process beside the relays (:class:`~.relays.LocalRelays`), listening on a Unix socket in the
kernel's directory; on ``slurm`` (a step of its own, one task on the first node of each group),
``mpi`` (an ``mpirun`` of its own, one process on the first host of each group) and ``ray`` (an
actor on the first node of each group), on TCP on that node (:func:`tcp_addresses`, CurveZMQ as
the relays' upward connection is: its server keypair is the bootstrap's ``aggregator_curve``,
its only admitted client the cluster's client key), or on the kernel's Unix socket directory
where every rank is on the kernel's machine.

**One message per cell into the kernel.** Where there are two aggregators or more, aggregator
:data:`ROOT` (0, on the first node, where it runs already) is also the root of the tree: the
others dial it (:func:`above`) instead of the kernel, and it merges their merged reductions
with its own relays' into one it signs as the aggregator of every node (``a0-1249``: the
kernel's checks of a span against its sender's nodes are unchanged). So the kernel holds one
connection upward and takes one reduction per cell (issue 26: its fixed CPU per cell was about
one aggregator message in three). The bootstrap says so (``root``: its number). A dead root is
every node cut off, named as such (:func:`behind`, :func:`aggregator_failure`).
"""

from __future__ import annotations

import ipaddress
import json
import math
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import zmq

from ..collapse import ranks_brief
from ..errors import RankFailure
from ..protocol.signing import BOOTSTRAP_ENV
from .curve import curve_server

AGGREGATOR_COMMAND = (sys.executable, "-m", "jupyter_distributed.cluster.aggregator")
AGGREGATE_ABOVE = 200  # nodes: above this many, a second level of relays
ROOT = 0  # the aggregator the others dial where there are several (it dials the kernel)


def fanout(nodes: int, forced: bool) -> int:
    """How many node relays each aggregator holds: about √nodes (at least 2) where a second
    level is wanted (``forced``, or more than :data:`AGGREGATE_ABOVE` nodes); 0 for none."""
    if nodes < 2 or not (forced or nodes > AGGREGATE_ABOVE):
        return 0
    return max(2, math.ceil(math.sqrt(nodes)))


def rooted(boot: dict[str, Any]) -> None:
    """Name the root of the tree in the bootstrap ``boot`` where it has two aggregators or
    more (one needs none: it dials the kernel already)."""
    if len(boot.get("aggregators") or {}) >= 2:
        boot["root"] = ROOT


def above(boot: dict[str, Any], index: int) -> tuple[str, dict[str, str] | None]:
    """Where aggregator ``index`` dials, and the CurveZMQ keys it dials with (None: a Unix
    socket or no CurveZMQ): the root aggregator where the bootstrap names one and it is not
    that one, else the kernel (with the relays' keys for the kernel's, where it has them)."""
    root, curve = boot.get("root"), boot.get("curve")
    if root is None or int(root) == index:
        return str(boot["address"]), curve
    address = str(boot["aggregators"][str(root)])
    if not address.startswith("tcp://") or not curve:
        return address, None
    return address, {**curve, "server": boot["aggregator_curve"]["server"]}


def behind(index: int, nodes: int, per: int, root: bool = False) -> range:
    """The nodes aggregator ``index`` answers for (of ``nodes``, ``per`` to an aggregator):
    its group's, or every node for the root (``root``: the tree has one, as it has where
    ``nodes`` > ``per``), through which the others reach the kernel."""
    if root and index == ROOT and nodes > per:
        return range(nodes)
    return range(index * per, min(nodes, (index + 1) * per))


def aggregator_addresses(directory: Path, nodes: int, per: int) -> dict[str, str]:
    """Where each aggregator listens: a Unix socket in the kernel's directory of mode 0700."""
    return {str(a): f"ipc://{directory}/aggregator-{a}" for a in range(math.ceil(nodes / per))}


def tcp_addresses(hosts: Sequence[str], port: int) -> dict[str, str]:
    """Where each aggregator listens when the ranks are on other hosts than the kernel: TCP on
    its host (``hosts``, by aggregator: the first node of its group), at ``port`` + its number
    (several may share a machine)."""
    return {str(a): f"tcp://{host}:{port + a}" for a, host in enumerate(hosts)}


def server_keys() -> dict[str, str]:
    """The aggregators' CurveZMQ server keypair (z85; one per cluster, in the bootstrap: whoever
    holds the bootstrap holds the cluster's secret already)."""
    public, secret = zmq.curve_keypair()
    return {"server": public.decode(), "secret": secret.decode()}


def on_hosts(env: Mapping[str, str], hosts: Sequence[str]) -> dict[str, str]:
    """``env`` with each TCP aggregator's address on its host in ``hosts`` (by aggregator),
    for a backend that knows where its nodes are only once they run (Slurm, Ray)."""
    boot = json.loads(env[BOOTSTRAP_ENV])
    for index, address in (boot.get("aggregators") or {}).items():
        if address.startswith("tcp://"):
            port = address.rsplit(":", 1)[1]
            boot["aggregators"][index] = f"tcp://{hosts[int(index)]}:{port}"
    return {**env, BOOTSTRAP_ENV: json.dumps(boot)}


def group_heads(env: Mapping[str, str]) -> list[int]:
    """The first node of each aggregator's group, by aggregator (where it runs; none: no
    aggregators), from the bootstrap environment the backend is given."""
    boot = json.loads(env.get(BOOTSTRAP_ENV) or "{}")
    count = len(boot.get("aggregators") or {})
    return [a * int(boot["fanout"]) for a in range(count)]


def upward(boot: dict[str, Any], node: int) -> tuple[str, dict[str, str] | None]:
    """Where node ``node``'s relay dials, and the CurveZMQ keys it dials with (None: a Unix
    socket): its aggregator where the bootstrap has them, else the kernel."""
    aggregators, curve = boot.get("aggregators"), boot.get("curve")
    if not aggregators:
        return str(boot["address"]), curve
    address = str(aggregators[str(node // int(boot["fanout"]))])
    if not address.startswith("tcp://") or not curve:
        return address, None
    return address, {**curve, "server": boot["aggregator_curve"]["server"]}


def listen_curve(
    ctx: zmq.Context[zmq.Socket[bytes]], sock: zmq.Socket[bytes], boot: dict[str, Any]
) -> Callable[[], None]:
    """An aggregator's ROUTER on TCP, before it binds: CurveZMQ's server with the bootstrap's
    keys, admitting only the cluster's client key (the relays'), as the kernel's does; returns
    what stops its authenticator."""
    keys = boot["aggregator_curve"]
    public, secret = keys["server"].encode(), keys["secret"].encode()
    return curve_server(ctx, sock, public, secret, boot["curve"]["public"].encode())


def bind_address(address: str) -> str:
    """``tcp://HOST:PORT`` with HOST resolved to the address it binds (ZeroMQ binds an
    address or an interface, not a host name). A host name that resolves to loopback here
    (Debian's ``127.0.1.1`` for the machine's own name) while other hosts reach it by that name
    binds every interface: CurveZMQ admits only the cluster's relays."""
    if not address.startswith("tcp://"):
        return address
    host, port = address.removeprefix("tcp://").rsplit(":", 1)
    resolved = socket.gethostbyname(host)
    named = resolved != host and host != "localhost"
    if named and ipaddress.ip_address(resolved).is_loopback:
        return f"tcp://*:{port}"
    return f"tcp://{resolved}:{port}"


def aggregated_nodes(boot: dict[str, Any], index: int, nodes: int) -> list[int]:
    """The nodes aggregator ``index`` (of ``nodes`` nodes) answers for: those whose relays dial
    it, and for the root (the bootstrap's ``root``) every node."""
    root = boot.get("root")
    if root is not None and int(root) == index:
        return list(range(nodes))
    return list(behind(index, nodes, int(boot["fanout"])))


def other_aggregators(boot: dict[str, Any], index: int, nodes: int) -> list[tuple[int, int]]:
    """The first and last node of each aggregator that dials aggregator ``index``: the others,
    for the root; none for any other."""
    root, per = boot.get("root"), int(boot["fanout"])
    if root is None or int(root) != index:
        return []
    groups = (behind(a, nodes, per) for a in range(len(boot["aggregators"])) if a != index)
    return [(group[0], group[-1]) for group in groups]


def aggregator_failure(
    index: int,
    nodes: Sequence[int],
    ranks: Sequence[int],
    host: str,
    code: int,
    now: float,
    root: bool = False,
) -> RankFailure:
    """A dead aggregator is a dead set of nodes: "aggregator 1 on host h died (killed by
    signal 9): its nodes 3-5 are gone, with their ranks 24-47"; the root (``root``) every node:
    "aggregator 0 (the root, through which every aggregator reaches the kernel) on host h
    died ...: its nodes 0-124 are gone"."""
    name = f"aggregator {index}"
    if root:
        name += " (the root, through which every aggregator reaches the kernel)"
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    behind = f"node {nodes[0]} is" if len(nodes) == 1 else f"nodes {ranks_brief(nodes)} are"
    with_ranks = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks_brief(ranks)}"
    return RankFailure(
        rank=-1, t=now, host=host, kind="relay",
        evalue=f"{name} on host {host} died ({how}): its {behind} gone, "
        f"with their {with_ranks}",
        exit_code=code if code >= 0 else None, signal=-code if code < 0 else None,
    )  # fmt: skip
