"""What the kernel's end of the control channel refuses, and how it says so.

Rejected messages (unsigned, malformed, out of order: see :mod:`.intake`) are logged at most a
few times a minute, then counted (:mod:`.throttle`), with the socket they came on.

No message may pass the cap on a whole message that the last cell sent its ranks
(``Distributed.max_message_mb``; ZeroMQ's ``MAXMSGSIZE`` bounds only each frame). A rank checks
what it sends, so a larger one is refused and named, and the cluster of a rank that sent it is
lost with that cause: the run fails, it never waits for what was refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..protocol.frames import too_large
from ..protocol.packets import BadPacket, TooLarge
from .cellpeers import CellPeer
from .intake import Peer
from .throttle import Throttled

log = logging.getLogger("jupyter_distributed")


class Refusals:
    """(I/O thread) A router's refusals: ``where`` names the socket a peer's messages came
    on, ``ranks_of`` the ranks reached through it, ``limit`` is the cap in bytes, and
    ``on_lost`` is told the cause when a rank's message passed it."""

    def __init__(
        self,
        where: Callable[[Peer], str | None],
        ranks_of: Callable[[Peer], list[int]],
        limit: Callable[[], int],
        on_lost: Callable[[str], None],
    ) -> None:
        self._where, self._ranks_of, self._limit, self._on_lost = where, ranks_of, limit, on_lost
        self.rejected = Throttled()

    def reject(self, where: str | None, cause: object) -> None:
        self.rejected.warning("jupyter-distributed: rejected a message on %s: %s", where, cause)

    def rejected_from(self, peer: Peer, cause: object) -> None:
        self.reject(self._where(peer), cause)

    def cell_rejected(self, peer: CellPeer, exc: BadPacket) -> None:
        if isinstance(exc, TooLarge):
            self.oversized(peer, exc.size)
        else:
            self.reject(self._where(peer), exc)

    def oversized(self, peer: Peer, size: int) -> None:
        """``peer`` sent a message over the cap: refused and named; if the connection is a
        rank's, the cluster is lost with that cause."""
        ranks = self._ranks_of(peer)
        who = f"rank {min(ranks)}" if ranks else "a peer that is no rank"
        cause = too_large(f"a message from {who}", size, self._limit())
        if not ranks:
            self.reject(self._where(peer), cause)
            return
        log.error("jupyter-distributed: %s", cause)
        self._on_lost(cause)
