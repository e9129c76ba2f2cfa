"""Settings of ``--backend mpi`` and the pure helpers that turn them into an ``mpirun`` line.

Nothing here starts a process or imports mpi4py, so ``--dry-run`` and the argument parser can use
it freely. For ``--backend mpi``, :func:`merge_options` decides how a user's ``--mpi-options``
combine with ours: each default is passed once, and a user option with the same key replaces it.
(SageMaker builds its ``custom_mpi_options`` string separately, in ``sagemaker/request.py``,
because it must match what the SageMaker Python SDK sends.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from traitlets import Float, Unicode

from ... import userfiles
from ...errors import SpecError
from ...settings import Settings
from ...spec import BackendOptions
from ..plugin import option as flag

if TYPE_CHECKING:  # the grammar is imported when options are checked, not with the flags
    from ...cluster.cmdline import Option

MAX_HOSTFILE = 1 << 20  # bytes; a hostfile is a list of host names

_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]-]+$")

# Options whose value our settings decide; the message says which flag to use instead.
RESERVED = {
    "np": "-n/--procs-per-node",
    "n": "-n/--procs-per-node",
    "c": "-n/--procs-per-node",
    "host": "--hosts",
    "H": "--hosts",
    "hostfile": "--hostfile",
    "machinefile": "--hostfile",
    "default-hostfile": "--hostfile",
    "npernode": "--procs-per-node",
    "N": "--procs-per-node",
}
# Options that take no value; every other option takes the tokens up to the next option.
_MCA = {"mca", "gmca"}


@dataclass(frozen=True)
class MpiOptions(BackendOptions):
    """``--hosts``/``--hostfile`` (the hosts, one node each, in order) and ``--mpi-options``."""

    hosts: tuple[str, ...] = flag(
        (), "hosts, one node each in order (default: this machine)", metavar="h1,h2", repeat=False
    )
    hostfile: str | None = flag(
        None, "Open MPI hostfile (one host per line; slots are ignored)", metavar="FILE"
    )
    mpi_options: str = flag(
        "",
        'extra mpirun options, e.g. --mpi-options "--mca btl tcp,self" (a single option: '
        "--mpi-options=--report-bindings); ours are never passed twice",
        metavar='"..."',
    )
    oversubscribe: bool = flag(
        False, "allow more ranks on this machine than ranks_per_core × its CPU cores"
    )
    mpirun: str = "mpirun"  # configuration only (DistributedMPI.mpirun)
    default_mpi_options: str = ""  # configuration only, before the cell's --mpi-options
    ranks_per_core: float = 4.0  # configuration only
    backend: str = field(default="mpi", init=False)

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> MpiOptions:
        if given.get("hosts") and given.get("hostfile"):
            raise SpecError("give either --hosts or --hostfile, not both")
        values = {**defaults, **given}
        hosts = tuple(h.strip() for h in str(given.get("hosts") or "").split(",") if h.strip())
        if given.get("hostfile"):
            hosts = parse_hostfile(given["hostfile"])
        values["hosts"] = hosts
        from ...cluster.cmdline import unquote

        values["mpi_options"] = unquote(values.get("mpi_options") or "")
        return cls(**values)

    def __post_init__(self) -> None:
        if not self.hosts and self.hostfile:
            raise SpecError(f"--hostfile {self.hostfile} lists no host; add one per line")
        for host in self.hosts:
            if not _HOST.match(host):
                raise SpecError(f"--hosts: {host!r} is not a host name or address")
        if len(set(self.hosts)) != len(self.hosts):
            dup = next(h for h in self.hosts if self.hosts.count(h) > 1)
            raise SpecError(
                f"host {dup} is listed twice; list each host once "
                "(--procs-per-node sets the processes per host)"
            )
        user_options(self.mpi_options)  # raises SpecError on a bad or reserved option
        user_options(self.default_mpi_options)

    def hosts_for(self, nodes: int) -> tuple[str, ...]:
        """The first ``nodes`` hosts (none given: one node on this machine)."""
        if not self.hosts:
            if nodes > 1:
                raise SpecError(
                    f"--nodes {nodes} with --backend mpi needs the hosts: "
                    "give --hosts h1,h2 or --hostfile FILE"
                )
            return ()
        if nodes > len(self.hosts):
            raise SpecError(
                f"--nodes {nodes} but only {len(self.hosts)} host(s) given; "
                "add hosts or lower --nodes"
            )
        return self.hosts[:nodes]


def parse_hostfile(path: str) -> tuple[str, ...]:
    """Host names of an Open MPI hostfile (``host [slots=N]`` lines, ``#`` comments)."""
    text = userfiles.read_text("--hostfile", path, MAX_HOSTFILE, "a hostfile lists host names")
    hosts = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            hosts.append(words[0])
    return tuple(hosts)


def split_options(tokens: Sequence[str]) -> list[Option]:
    """Group mpirun tokens into options: each option with the values that follow it."""
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") and not _is_number(token):
            groups.append([token])
        elif not groups:
            raise SpecError(f"--mpi-options: {token!r} is not an option; options start with -")
        else:
            groups[-1].append(token)
    return [tuple(g) for g in groups]


def option_key(option: Option) -> tuple[str, ...]:
    """What makes two options the same setting: the name (``-x``/``--mca``: and its variable)."""
    name = option[0].lstrip("-")
    if name in _MCA and len(option) > 1:
        return ("mca", option[1])
    if name == "x" and len(option) > 1:
        return ("x", option[1].split("=", 1)[0])
    return (name,)


def user_options(text: str) -> list[Option]:
    from ...cluster import cmdline

    options = cmdline.user_options(text, "--mpi-options", split_options, option_key, RESERVED)
    for option in options:
        if option[0].lstrip("-") in _MCA and len(option) != 3:
            raise SpecError(
                f"--mpi-options: {option[0]} takes a name and a value, "
                f"got {' '.join(option[1:]) or 'nothing'}"
            )
    return options


def merge_options(defaults: Sequence[Option], user: Sequence[Option]) -> list[str]:
    """Our defaults then the user's options (:func:`..cluster.cmdline.merge_options`, with
    mpirun's keys)."""
    from ...cluster import cmdline

    return cmdline.merge_options(defaults, user, option_key)


def default_options(as_root: bool, procs_per_node: int) -> list[Option]:
    """What we always pass: ranks fill one host after the other, unpinned (the kernel and
    other ranks share the cores), output tagged by rank, and root allowed where we are root."""
    options: list[Option] = [("--allow-run-as-root",)] if as_root else []
    options += [
        ("--oversubscribe",),
        ("--bind-to", "none"),
        ("--map-by", f"ppr:{procs_per_node}:node"),
        ("--tag-output",),
        # when a rank dies, end the others at once (Open MPI waits 1 s by default), so
        # mpirun names the dead rank without delay
        ("--mca", "odls_base_sigkill_timeout", "0"),
    ]
    return options


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


class DistributedMPI(Settings):
    """Defaults of ``--backend mpi`` (``c.DistributedMPI.*``)."""

    env_prefix = "JUPYTER_DISTRIBUTED_MPI_"
    mpirun = Unicode("mpirun", help="the mpirun to run (a name on PATH or a path)").tag(config=True)
    default_mpi_options = Unicode(
        "", help="mpirun options for every cell, before the cell's --mpi-options"
    ).tag(config=True)
    ranks_per_core = Float(
        4.0, min=0.0, help="ranks on this machine per CPU core before --oversubscribe is needed"
    ).tag(config=True)


def rank_nodes(options: Sequence[Option], nodes: int, procs_per_node: int) -> list[int]:
    """Each rank's node (by rank), as mpirun maps the ranks over ``--host h:procs_per_node``:
    ours, ``ppr:procs_per_node:node`` (and ``slot``) fill one host after the other; ``node``
    deals the ranks round the hosts (rank r on host r % nodes). The user's ``--map-by`` (the
    last one given) decides; a policy that does not say which host a rank is on (``core``,
    ``socket``, a rankfile, ``--rank-by``) is refused, as the ranks' relays and hosts follow
    from it."""
    world = nodes * procs_per_node
    policy = f"ppr:{procs_per_node}:node"
    for option in options:
        name, _, value = option[0].lstrip("-").partition("=")
        value = value or (option[1] if len(option) > 1 else "")
        if name in ("map-by", "bynode", "byslot"):
            policy = {"bynode": "node", "byslot": "slot"}.get(name, value)
        elif name in ("rank-by", "rankfile", "rf", "npersocket"):
            raise SpecError(
                f"--mpi-options: --{name} changes which host each rank is on; leave it out "
                "(--map-by node or ppr:N:node say it)"
            )
    head, *rest = policy.lower().split(":")  # (modifiers such as :PE=2 come after)
    if head == "slot" or (head == "ppr" and rest[:2] == [str(procs_per_node), "node"]):
        return [r // procs_per_node for r in range(world)]
    if head == "node":
        return [r % nodes for r in range(world)]
    raise SpecError(
        f"--mpi-options: --map-by {policy} does not say which host each rank is on; use "
        f"node, slot or ppr:{procs_per_node}:node (-n sets the processes per host)"
    )
