"""Where a node relay listens on its node, and whose ranks it holds: the relay-side parts of
:mod:`.relays` (the relay's and the aggregator's processes import these, never the kernel's
side with its history and interface)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..layout import Layout

# on every node (a job's TMPDIR may not exist on the kernel's host); each relay's directory in it
# is made 0700 and exclusively (see listen_directory)
NODE_LOCAL_DIR = "/tmp"  # noqa: S108


def listen_directory(address: str) -> Path | None:
    """Before a relay binds ``address``: make its Unix socket's directory (mode 0700) where it
    is missing (a node-local address), and return it for the relay to remove when it ends; None
    where it exists already and is only ours (the kernel's directory, on the kernel's host). A
    directory another user could enter is refused (:class:`PermissionError`)."""
    if not address.startswith("ipc://"):
        return None
    directory = Path(address.removeprefix("ipc://")).parent
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        if not ours_alone(directory):
            why = f"{directory} exists and is not this user's alone (mode 0700)"
            raise PermissionError(why) from None
        return None
    return directory


def ours_alone(directory: Path) -> bool:
    """Whether ``directory`` is a real directory of this user's that no one else can enter."""
    st = directory.lstat()
    return not directory.is_symlink() and st.st_uid == os.getuid() and not st.st_mode & 0o077


def remove_directory(directory: Path | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def node_ranks(layout: Layout, node: int, relay_of: Sequence[int] | None = None) -> list[int]:
    """The ranks behind node ``node``'s relay: the bootstrap's ``relay_of`` where it has one,
    else the layout's block."""
    if relay_of is not None:
        return [r for r, n in enumerate(relay_of) if n == node]
    per = layout.procs_per_node
    return list(range(node * per, (node + 1) * per))
