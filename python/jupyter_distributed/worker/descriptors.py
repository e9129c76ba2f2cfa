"""A rank's file descriptors (standard library only).

- Waits for them are ``poll(2)``, never ``select(2)``: ``select`` fails on any descriptor
  numbered 1024 or more, which a rank (or the fork server) holds once its ``RLIMIT_NOFILE`` is
  raised and its code opens many files or sockets.
- A torch process group connects every rank to every other (gloo, NCCL's bootstrap): a rank of
  a large world raises its soft limit towards the hard one, as the kernel does for its own
  (ranks on other hosts do not inherit the kernel's).
"""

from __future__ import annotations

import contextlib
import select
from collections.abc import Iterable

PER_PEER = 4  # a process group's connections to each other rank, with room for a second group
BASE = 256  # the interpreter's, the channel's, a data loader's files


def readable(fds: Iterable[int], timeout: float | None = None) -> list[int]:
    """The descriptors of ``fds`` readable (or hung up) within ``timeout`` seconds (None: wait
    as long as it takes); [] when none is."""
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    return [fd for fd, _ in poll.poll(None if timeout is None else timeout * 1000)]


def make_room(world_size: int) -> None:
    """Raise the soft ``RLIMIT_NOFILE`` where a world of ``world_size`` ranks may need more,
    within the hard limit (what cannot be raised is left as it is)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = BASE + PER_PEER * world_size
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    target = need if hard == resource.RLIM_INFINITY else min(hard, need)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
