"""The file descriptors a cluster holds in the kernel, and room made for them before it starts.

Counted on real local clusters of 4, 8 and 16 ranks (``/proc/self/fd``; see
benchmarks/RESULTS.md): each rank holds :data:`PER_RANK` in the kernel (its control connection,
its cell socket and the pidfd that wakes the kernel when it exits), each cluster
:data:`PER_CLUSTER` more (the ZeroMQ context's and the I/O loop's own, a log). A soft
``RLIMIT_NOFILE`` too low for that (1,024 is common, so about 330 ranks) is raised towards the
hard limit, which an unprivileged process may do; past the hard limit, the cluster is refused
in one line before anything starts, with the number of ranks that fit. (Out of descriptors,
the kernel's sockets could not accept the ranks' connections: the ranks never said hello and
the start waited for its timeout without a word.) Children (the ranks, a launcher, the fork
server) inherit the raised limit.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LaunchError

PER_RANK = 3
PER_CLUSTER = 11
SPARE = 16  # the start's own (a spawn's pipes, a log), the store's, what the user's code opens


def open_descriptors() -> int:
    """The descriptors this process holds now, less the listing's own (0 where ``/proc``
    cannot say)."""
    try:
        return max(0, sum(1 for _ in Path("/proc/self/fd").iterdir()) - 1)
    except OSError:
        return 0


def descriptors_needed(ranks: int, open_now: int) -> int:
    """What this process needs open at once while a cluster of ``ranks`` runs."""
    return open_now + PER_CLUSTER + SPARE + PER_RANK * ranks


def make_room(ranks: int) -> None:
    """Raise the soft ``RLIMIT_NOFILE`` where a cluster of ``ranks`` needs it (to twice the need,
    within the hard limit: room for the next); :class:`LaunchError` where the hard limit is too
    low, naming how many ranks fit and what to do."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX: nothing to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    now = open_descriptors()
    need = descriptors_needed(ranks, now)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard != resource.RLIM_INFINITY and need > hard:
        fit = max(0, (hard - descriptors_needed(0, now)) // PER_RANK)
        raise LaunchError(
            f"{ranks} ranks need about {need} file descriptors in this kernel, past its hard "
            f"limit of {hard}: {fit} rank(s) fit; raise the limit where Jupyter starts "
            f"(`ulimit -n {need}` in its shell; past the hard limit, LimitNOFILE= in systemd or "
            "nofile in /etc/security/limits.conf) or use fewer ranks"
        )
    target = 2 * need if hard == resource.RLIM_INFINITY else min(hard, 2 * need)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        raise LaunchError(
            f"{ranks} ranks need about {need} file descriptors in this kernel, past its limit "
            f"of {soft}, which could not be raised ({exc}); raise it where Jupyter starts "
            f"(`ulimit -n {need}` in its shell) or use fewer ranks"
        ) from None
