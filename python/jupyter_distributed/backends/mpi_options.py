"""Settings of ``--backend mpi`` and the pure helpers that turn them into an ``mpirun`` line.

Nothing here starts a process or imports mpi4py, so ``--dry-run`` and the argument parser can use
it freely. :func:`merge_options` is the one place that decides how a user's ``--mpi-options``
combine with ours: each default is passed once, and a user option with the same key replaces it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SpecError
from ..spec import BackendOptions

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

Option = tuple[str, ...]


@dataclass(frozen=True)
class MpiOptions(BackendOptions):
    """``--hosts``/``--hostfile`` (the hosts, one node each, in order) and ``--mpi-options``."""

    hosts: tuple[str, ...] = ()
    hostfile: str | None = None
    mpi_options: str = ""
    backend: str = field(default="mpi", init=False)

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
    try:
        text = Path(path).expanduser().read_text()
    except OSError as exc:
        raise SpecError(f"--hostfile {path}: cannot read it ({exc.strerror})") from None
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
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"--mpi-options: cannot split {text!r}: {exc}") from None
    options = split_options(tokens)
    for option in options:
        name = option[0].lstrip("-")
        if name in RESERVED:
            raise SpecError(
                f"--mpi-options: {option[0]} is set from your settings; "
                f"use {RESERVED[name]} instead"
            )
        if name in _MCA and len(option) != 3:
            raise SpecError(
                f"--mpi-options: {option[0]} takes a name and a value, "
                f"got {' '.join(option[1:]) or 'nothing'}"
            )
    return options


def merge_options(defaults: Sequence[Option], user: Sequence[Option]) -> list[str]:
    """Our defaults then the user's options, flattened. A default whose key the user also gives
    is dropped (the user's value wins); a key the user gives twice is passed once, last value."""
    chosen: dict[tuple[str, ...], Option] = {}
    for option in user:
        chosen[option_key(option)] = option
    merged: list[Option] = [d for d in defaults if option_key(d) not in chosen]
    merged.extend(chosen.values())
    return [token for option in merged for token in option]


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


def unquote(text: str) -> str:
    """The magic's line splitter keeps the quotes around ``--mpi-options "..."``; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
