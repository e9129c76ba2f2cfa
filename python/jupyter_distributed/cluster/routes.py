"""Who a message to some ranks goes to, worked out once per cluster (issue 26).

A cell on 1,000 ranks names them all: each rank's connection (its control channel, or its
cell socket for what its main thread takes), its signed name, and whether those connections
are a few relays' (one message for all, signed once). The ranks and their connections rarely
change between cells, so what was worked out last is kept, and used again where the same
ranks are still reached through the same connections (checked in one pass, without a Python
step per rank); otherwise it is worked out again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar, cast

from ..protocol.receivers import encode
from ..protocol.signing import cell_name, rank_name
from .cellpeers import CellPeer
from .rankset import RankSet

T = TypeVar("T")
V = TypeVar("V")

Peer = bytes | CellPeer


class Table(dict[int, V]):
    """Each rank's connection (written on the I/O thread, as messages come), with a count of
    its changes: a route is used again while the count is the same, without looking up each of
    its 1,000 ranks again (only ``[rank] = peer``, ``update`` and ``del`` change it)."""

    version = 0

    def __setitem__(self, rank: int, peer: V) -> None:
        if dict.get(self, rank, _NONE) != peer:  # (a rank's every message writes it)
            dict.__setitem__(self, rank, peer)
            self.version += 1

    def __delitem__(self, rank: int) -> None:
        dict.__delitem__(self, rank)
        self.version += 1

    def update(self, *args: object, **kwargs: object) -> None:
        dict.update(self, *args, **kwargs)  # type: ignore[arg-type]
        self.version += 1


_NONE = object()


class Connections(Protocol):
    peers: dict[int, bytes]
    cell_peers: dict[int, Peer]


class Routes:
    """The last routes worked out, for messages to the ranks' main threads and to their
    control channels. Safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # per kind: (ranks, each rank's connection or None, what was worked out of them, the
        # table and its version they were read at)
        self._kept: dict[bool, tuple[tuple[int, ...], list[Peer | None], _Route, _Seen]] = {}
        # per kind and use: what was made of a route's names or ranks (the JSON, the set)
        self._made: dict[tuple[bool, str], tuple[object, object]] = {}

    def of(self, ranks: Sequence[int], main: bool, conns: Connections) -> _Route:
        """``(peers, names, relays, reached)``: each reached rank with its connection, their
        signed names, the relays' connections where every one goes through a relay ([]
        otherwise), and the reached ranks (``main``: the ranks' cell sockets)."""
        table: dict[int, Peer] = conns.cell_peers if main else conns.peers  # type: ignore[assignment]
        key = tuple(ranks)
        version = getattr(table, "version", None)  # (None: a plain dict, looked up each time)
        with self._lock:
            kept = self._kept.get(main)
            if (
                kept is not None
                and version is not None
                and kept[3][0] is table
                and kept[3][1] == version
                and (kept[0] is key or kept[0] == key)
            ):
                return kept[2]
        got = list(map(table.get, key))
        with self._lock:
            kept = self._kept.get(main)
            if kept is not None and kept[0] == key and kept[1] == got:
                self._kept[main] = (*kept[:3], (table, version))
                return kept[2]
        peers = [(r, p) for r, p in zip(key, got, strict=True) if p is not None]
        name = cell_name if main else rank_name
        route = (peers, [name(r) for r, _ in peers], _shared(peers), [r for r, _ in peers])
        with self._lock:
            self._kept[main] = (key, got, route, (table, version))
        return route

    def dst(self, names: list[str], main: bool) -> str:
        """``names`` (a route's, as :meth:`of` gave them) as one JSON ``dst``, encoded once
        per route: a cell or ping to 10,000 ranks through relays names them all, each run of
        consecutive ranks as one item (:mod:`..protocol.receivers`)."""
        return self._once(names, (main, "dst"), lambda: encode(names))

    def awaited(self, reached: list[int], main: bool) -> RankSet:
        """``reached`` (a route's) as a new :class:`~.rankset.RankSet`, made once per route."""
        return self._once(reached, (main, "set"), lambda: RankSet(reached)).copy()

    def _once(self, source: object, kind: tuple[bool, str], make: Callable[[], T]) -> T:
        """What ``make`` makes of ``source`` (a route's, never changed), made once for it."""
        with self._lock:
            kept = self._made.get(kind)
            if kept is None or kept[0] is not source:
                kept = self._made[kind] = (source, make())
            return cast(T, kept[1])


_Route = tuple[list[tuple[int, Peer]], list[str], list[bytes], list[int]]
_Seen = tuple[object, int | None]  # a table and its version


def _shared(peers: Sequence[tuple[int, Peer]]) -> list[bytes]:
    """The relays' connections, where ``peers`` go through relays (several ranks on one
    ZeroMQ connection: a relay's); [] where each rank has its own connection (no relays)."""
    ids = [p for _, p in peers if isinstance(p, bytes)]
    distinct = list(dict.fromkeys(ids))
    return distinct if len(ids) == len(peers) and len(distinct) < len(ids) else []
