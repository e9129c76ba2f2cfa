"""The file descriptors a cluster holds in the kernel, and room made for them before it starts.

Counted on real local clusters of 4, 8 and 16 ranks (``/proc/self/fd``; see
benchmarks/RESULTS.md): each rank holds :data:`PER_RANK` in the kernel (its control connection,
its cell socket and the pidfd that wakes the kernel when it exits), each cluster
:data:`PER_CLUSTER` more (the ZeroMQ context's and the I/O loop's own, a log). Behind node
relays a rank's two connections are its relay's, not the kernel's: a rank then holds at most
its pidfd (:data:`PER_RELAYED_RANK`, none where its process is on another host) and each relay
:data:`PER_RELAY` (its connection and its process's pidfd). A soft
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
PER_RELAYED_RANK = 1
PER_RELAY = 2
PER_CLUSTER = 11
SPARE = 16  # the start's own (a spawn's pipes, a log), the store's, what the user's code opens


def open_descriptors() -> int:
    """The descriptors this process holds now, less the listing's own (0 where ``/proc``
    cannot say)."""
    try:
        return max(0, sum(1 for _ in Path("/proc/self/fd").iterdir()) - 1)
    except OSError:
        return 0


def descriptors_needed(ranks: int, open_now: int, relays: int = 0) -> int:
    """What this process needs open at once while a cluster of ``ranks`` runs (behind
    ``relays`` node relays, where it has them)."""
    ranks_own = (PER_RELAYED_RANK if relays else PER_RANK) * ranks
    return open_now + PER_CLUSTER + SPARE + ranks_own + PER_RELAY * relays


def make_room(ranks: int, relays: int = 0) -> None:
    """Raise the soft ``RLIMIT_NOFILE`` where a cluster of ``ranks`` (behind ``relays`` node
    relays) needs it (to twice the need, within the hard limit: room for the next);
    :class:`LaunchError` where the hard limit is too low, naming how many ranks fit and what to
    do."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX: nothing to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    now = open_descriptors()
    need = descriptors_needed(ranks, now, relays)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard != resource.RLIM_INFINITY and need > hard:
        per_rank = PER_RELAYED_RANK if relays else PER_RANK
        fit = max(0, (hard - descriptors_needed(0, now, relays)) // per_rank)
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
