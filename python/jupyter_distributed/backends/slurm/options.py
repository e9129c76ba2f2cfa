"""Settings of ``--backend slurm`` and the pure helpers that turn them into an ``srun`` line.

Nothing here runs a Slurm command, so ``--dry-run`` and the argument parser can use it freely.
The user's ``--slurm-options`` merge with ours as ``--mpi-options`` do with mpirun's
(:mod:`...cluster.cmdline`): each of ours is passed once and a user option for the same
setting replaces it, whether written ``-p x``, ``--partition x`` or ``--partition=x``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import SpecError
from ...spec import BackendOptions
from ..plugin import option as flag

if TYPE_CHECKING:  # the grammar is imported when options are checked, not with the flags
    from ...cluster.cmdline import Option

# Short names of srun options, by the long name they stand for.
SHORT = {
    "p": "partition",
    "A": "account",
    "t": "time",
    "N": "nodes",
    "n": "ntasks",
    "J": "job-name",
    "l": "label",
    "c": "cpus-per-task",
    "w": "nodelist",
    "x": "exclude",
    "C": "constraint",
    "q": "qos",
    "G": "gpus",
    "o": "output",
    "e": "error",
    "K": "kill-on-bad-exit",
    "m": "distribution",
}
# srun options whose value our settings decide; the message says what to use instead.
RESERVED = {
    "nodes": "--nodes",
    "ntasks": "--nodes and --procs-per-node",
    "ntasks-per-node": "--procs-per-node",
    "export": "--env (every variable of the kernel is exported)",
    "label": "nothing: rank labels are always on",
    "kill-on-bad-exit": "nothing: a dead rank always ends the step",
    "output": "nothing: the ranks' output comes back to the cell",
    "error": "nothing: the ranks' output comes back to the cell",
}
# srun options that take no value; the others take the next token unless written name=value.
_FLAGS = {
    "exclusive",
    "overlap",
    "unbuffered",
    "u",
    "verbose",
    "v",
    "quiet",
    "Q",
    "overcommit",
    "O",
    "contiguous",
    "spread-job",
    "use-min-nodes",
    "hint",
}
_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$|^UNLIMITED$|^INFINITE$")
_GPUS = re.compile(r"^([A-Za-z0-9_.-]+:)?\d+$")
_NAME = re.compile(r"^[A-Za-z0-9_.,\[\]-]+$")


@dataclass(frozen=True)
class SlurmOptions(BackendOptions):
    """``--partition``, ``--account``, ``--time``, ``--gpus-per-node`` and ``--slurm-options``."""

    partition: str | None = flag(
        None, "Slurm partition (srun --partition; default: the cluster's)", metavar="NAME"
    )
    account: str | None = flag(None, "Slurm account to charge (srun --account)", metavar="NAME")
    time: str | None = flag(None, "time limit, e.g. 30 or 1:00:00 (srun --time)", metavar="LIMIT")
    gpus_per_node: str | None = flag(
        None, "GPUs per node (srun --gpus-per-node)", metavar="[TYPE:]N"
    )
    slurm_options: str = flag(
        "",
        'extra srun options, e.g. --slurm-options "--qos high --constraint v100"; '
        "one of yours replaces ours for the same setting",
        metavar='"..."',
    )
    backend: str = field(default="slurm", init=False)

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> SlurmOptions:
        values = {**defaults, **given}
        from ...cluster.cmdline import unquote

        values["slurm_options"] = unquote(values.get("slurm_options") or "")
        values = {k: (v or None) if k != "slurm_options" else v for k, v in values.items()}
        return cls(**values)

    def __post_init__(self) -> None:
        for name, value in (("--partition", self.partition), ("--account", self.account)):
            if value is not None and not _NAME.match(value):
                raise SpecError(f"{name}: {value!r} is not a Slurm name")
        if self.time is not None and not _TIME.match(self.time):
            raise SpecError(
                f"--time {self.time!r}: use minutes, MM:SS, HH:MM:SS or D-HH:MM:SS "
                "(Slurm's time format)"
            )
        if self.gpus_per_node is not None and not _GPUS.match(self.gpus_per_node):
            raise SpecError(
                f"--gpus-per-node {self.gpus_per_node!r}: give a count, or TYPE:COUNT like a100:4"
            )
        user_options(self.slurm_options)  # raises SpecError on a bad or reserved option

    def ours(self) -> list[Option]:
        """Our srun options for these settings (before the user's are merged in)."""
        options: list[Option] = []
        for name in ("partition", "account", "time", "gpus_per_node"):
            value = getattr(self, name)
            if value is not None:
                options.append((f"--{name.replace('_', '-')}={value}",))
        return options


def option_key(option: Option) -> tuple[str, ...]:
    """Which srun setting an option is: its long name (``-p``, ``--partition=x`` → partition)."""
    head = option[0]
    long = head.startswith("--")
    return (head[2:].split("=", 1)[0] if long else SHORT.get(head[1:2], head[1:2]),)


def split_options(tokens: list[str]) -> list[Option]:
    """Group srun tokens into options: ``--x=v``, ``--x v``, ``-p v``, ``-pv`` or a flag."""
    options: list[Option] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("-") or len(token) == 1:
            raise SpecError(f"--slurm-options: {token!r} is not an option; options start with -")
        name = token[2:] if token.startswith("--") else token[1:]
        takes_value = "=" not in name and name not in _FLAGS and len(name) >= 1
        if not token.startswith("--") and len(name) > 1:  # -pdebug
            takes_value = False
        if takes_value and (i + 1 >= len(tokens) or tokens[i + 1].startswith("-")):
            raise SpecError(f"--slurm-options: {token} needs a value (write {token}=VALUE)")
        if takes_value:
            options.append((token, tokens[i + 1]))
            i += 2
        else:
            options.append((token,))
            i += 1
    return options


def user_options(text: str) -> list[Option]:
    why = "is set by jupyter-distributed"
    from ...cluster import cmdline

    return cmdline.user_options(text, "--slurm-options", split_options, option_key, RESERVED, why)


def merge_options(defaults: list[Option], user: list[Option]) -> list[str]:
    """Ours then the user's, each srun setting once (:func:`...cluster.cmdline.merge_options`)."""
    from ...cluster import cmdline

    return cmdline.merge_options(defaults, user, option_key)


def default_options(nodes: int, procs_per_node: int) -> list[Option]:
    """What we always pass: the layout, one step whose death ends every rank, every variable
    of the kernel exported (the bootstrap secret travels in the environment, not the command
    line), and task labels so srun's reports name ranks."""
    return [
        ("--nodes", str(nodes)),
        ("--ntasks-per-node", str(procs_per_node)),
        ("--ntasks", str(nodes * procs_per_node)),
        ("--kill-on-bad-exit=1",),
        ("--export=ALL",),
        ("--label",),
        ("--job-name=jupyter-distributed",),
    ]


def rank_nodes(slurm_options: str, nodes: int, procs_per_node: int) -> list[int]:
    """Each rank's node (by rank), as srun's ``--distribution`` (``-m``) places the tasks
    across the nodes: ``block`` (the default: node n holds ranks n*per..), ``cyclic`` (node n
    holds ranks n, n+nodes, ..) or ``plane=SIZE`` (blocks of SIZE dealt round the nodes); only
    its first part (how tasks go to nodes) matters here."""
    world = nodes * procs_per_node
    value = "block"
    for option in user_options(slurm_options):
        if option_key(option) == ("distribution",):
            head = option[0]
            text = head.partition("=")[2] if head.startswith("--") else head[2:]  # (-mcyclic)
            text = option[1] if len(option) > 1 else text
            value = text.split(":", 1)[0] or "block"
    if value in ("block", "*"):
        return [r // procs_per_node for r in range(world)]
    if value == "cyclic":
        return [r % nodes for r in range(world)]
    size = value.removeprefix("plane=")
    if value.startswith("plane=") and size.isdigit() and int(size) > 0:
        return [(r // int(size)) % nodes for r in range(world)]
    raise SpecError(
        f"--slurm-options: --distribution {value} does not say which node each rank is on; "
        "use block, cyclic or plane=SIZE (or Distributed.relays = 'never')"
    )
