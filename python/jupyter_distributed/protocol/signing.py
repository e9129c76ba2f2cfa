"""Signed frames between the kernel and its ranks (standard library only).

A message is a list of frames: ``[signature, header, *buffers]``. The header is JSON with a
``type`` and the message's fields; buffers carry pickled data out of band. The signature is
HMAC-SHA256, keyed by the cluster's secret as in Jupyter's own protocol, over the header and
the SHA-256 digest of every buffer (so one large push is hashed once for all ranks).

Every header also names its sender and its receiver (``src``, ``dst``: ``"k"`` for the kernel,
``"r3"`` for rank 3, so the direction is signed) and carries the sender's counter ``seq``, which
only grows. A receiver refuses a message whose signature does not match, one addressed to
someone else (a message reflected back to its sender, or one rank's message replayed to
another), and one whose counter is not above the last it accepted from that sender: a replay
is refused however many newer messages passed, in O(1) time and memory per sender. (ZeroMQ
keeps one connection's messages in order; each sender signs and queues under one lock, so its
counters leave in order too.) A message to many ranks at once (through a node's relay, see
``cluster/relay.py``) is signed once, its ``dst`` the list of its receivers: each of them
accepts it, and a replay to one of them is refused by that receiver's counter. The
signed ``src`` is also how the kernel knows which rank sent a
message: peers' self-chosen ZeroMQ identities are never trusted (see ``backends/router.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Sequence
from typing import Any

from .receivers import Receivers, encode

PROTOCOL_VERSION = 2
BOOTSTRAP_ENV = "JUPYTER_DISTRIBUTED_BOOTSTRAP"
# Set by the mpi launcher: the rank initialises MPI (mpi4py) and gets ``comm``.
MPI_FLAG_ENV = "JUPYTER_DISTRIBUTED_MPI"
KERNEL = "k"

Buffer = bytes | memoryview
# a header's JSON, read as ``json.loads`` reads it less its guess of the encoding (ours is
# UTF-8) and its keyword handling: ~0.6 µs of ~2.3 a message (issue 26)
_read_header = json.JSONDecoder().decode


def digest(buffer: Buffer) -> bytes:
    return hashlib.sha256(buffer).digest()


def rank_name(rank: int) -> str:
    """The signed name of ``rank``'s control channel (its ``src``/``dst``)."""
    return f"r{rank}"


def cell_name(rank: int) -> str:
    """The signed name of ``rank``'s cell socket (see ``worker/cellsocket.py``)."""
    return f"c{rank}"


def sender(src: str) -> tuple[int, bool]:
    """The rank a signed ``src`` names, and whether it is that rank's cell socket;
    ``ValueError`` for any other name."""
    if src[:1] not in ("r", "c") or not src[1:].isdigit():
        raise ValueError(f"unknown sender {src!r}")
    return int(src[1:]), src[0] == "c"


class BadMessage(Exception):
    """A message was refused; the text says why."""


class Signer:
    """Signs what ``me`` sends and verifies what it receives (``me``: :data:`KERNEL` or a
    :func:`rank_name`)."""

    def __init__(self, key: bytes, me: str) -> None:
        if len(key) < 16:
            raise ValueError("the cluster secret must have at least 16 bytes")
        self._mac = hmac.new(key, digestmod=hashlib.sha256)  # (the key's pads, hashed once)
        self.me = me
        # from the clock: a sender started again (a launcher that retried a rank) counts on
        # above its previous life, so its hello is heard and the kernel sees the restart
        self._counter = itertools.count(time.time_ns())
        self.sent = 0  # the counter of the last message packed
        self._last: dict[str, int] = {}  # sender -> the highest counter accepted from it

    def sign(self, header: Buffer, digests: Sequence[bytes]) -> bytes:
        """HMAC-SHA256 of the header followed by the digests, as hex: a copy of the signer's
        HMAC, whose key was set up once, not OpenSSL's one-shot HMAC, which sets up the key
        for each message (in a cell's cold caches ~19 µs against ~30; issue 26)."""
        mac = self._mac.copy()
        mac.update(header)
        for d in digests:
            mac.update(d)
        return mac.hexdigest().encode()

    def pack(
        self,
        fields: dict[str, Any],
        buffers: Sequence[Buffer] = (),
        digests: Sequence[bytes] | None = None,
        to: str = KERNEL,
    ) -> list[Buffer]:
        """Frames of a signed message to ``to`` whose header holds ``fields`` (with its
        ``type``), this sender's next counter and the protocol version. Pass ``digests`` (from
        :func:`digest`) to sign the same large buffers for many ranks without hashing them
        again. Callers on several threads must pack and queue under one lock (counters leave
        in order)."""
        return self.pack_each(fields, [to], buffers, digests)[0]

    def pack_each(
        self,
        fields: dict[str, Any],
        receivers: Sequence[str],
        buffers: Sequence[Buffer] = (),
        digests: Sequence[bytes] | None = None,
    ) -> list[list[Buffer]]:
        """:meth:`pack` for each of ``receivers`` in turn (one message to every rank), the
        fields encoded once for all."""
        return self._pack(fields, [json.dumps(to) for to in receivers], buffers, digests)

    def pack_all(
        self,
        fields: dict[str, Any],
        receivers: Sequence[str],
        buffers: Sequence[Buffer] = (),
        digests: Sequence[bytes] | None = None,
        dst: str | None = None,
    ) -> list[Buffer]:
        """One message to all of ``receivers``, signed once (its ``dst`` is their list): what
        a relay forwards unchanged to each of its ranks that the list names. ``dst``: that
        list as JSON already (a sender that names the same thousands of ranks again)."""
        if dst is None:
            dst = encode(receivers)
        return self._pack(fields, [dst], buffers, digests)[0]

    def _pack(
        self,
        fields: dict[str, Any],
        dsts: Sequence[str],
        buffers: Sequence[Buffer],
        digests: Sequence[bytes] | None,
    ) -> list[list[Buffer]]:
        """A signed message per ``dsts`` (each a JSON ``dst``), with its own counter."""
        body = json.dumps(fields, separators=(",", ":"))[1:]  # '"type":...}' (or '}')
        if digests is None:
            digests = [digest(b) for b in buffers]
        src, tail = json.dumps(self.me), f',"v":{PROTOCOL_VERSION}' + ("," if body != "}" else "")
        out: list[list[Buffer]] = []
        for dst in dsts:
            self.sent = seq = next(self._counter)
            header = f'{{"src":{src},"dst":{dst},"seq":{seq}{tail}{body}'.encode()
            out.append([self.sign(header, digests), header, *buffers])
        return out

    def accepted(self, src: str) -> int:
        """The highest counter accepted from ``src`` so far (0: none)."""
        return self._last.get(src, 0)

    def vouched(self, src: str, seq: int) -> bool:
        """Take ``src``'s counter ``seq`` from a message a trusted relay vouches for (one it
        verified and passed on inside its own signed message); False for a replay."""
        if seq <= self._last.get(src, 0):
            return False
        self._last[src] = seq
        return True

    def vouched_each(self, srcs: Sequence[str], seqs: Sequence[int]) -> list[bool]:
        """:meth:`vouched` for each of ``srcs`` with its counter in ``seqs`` (a relay's range
        of ranks' ends), in bulk where none is a replay."""
        last = self._last
        if all(seq > last.get(src, 0) for src, seq in zip(srcs, seqs, strict=True)):
            last.update(zip(srcs, seqs, strict=True))
            return [True] * len(srcs)
        return [self.vouched(src, seq) for src, seq in zip(srcs, seqs, strict=True)]

    def unpack(self, frames: Sequence[Buffer]) -> tuple[dict[str, Any], list[Buffer]]:
        """The verified header (its ``src`` says who sent it) and buffers of ``frames``."""
        header = self.check(frames)
        dst = header["dst"]
        if dst != self.me and not (isinstance(dst, list) and self.me in Receivers(dst)):
            raise BadMessage(f"a message from {header['src']} to {dst!r} reached {self.me}")
        return header, list(frames[2:])

    def check(self, frames: Sequence[Buffer]) -> dict[str, Any]:
        """The header of ``frames`` once their signature and counter are verified, whoever it
        is addressed to (a relay checks what it forwards; :meth:`unpack` checks the receiver
        too)."""
        if len(frames) < 2:
            raise BadMessage("a message needs a signature and a header")
        signature, body = bytes(frames[0]), frames[1:]
        if not hmac.compare_digest(signature, self.sign(body[0], [digest(b) for b in body[1:]])):
            raise BadMessage("bad signature (a connection without the cluster's secret?)")
        try:
            header: dict[str, Any] = _read_header(str(body[0], "utf-8"))
            src, seq, _ = str(header["src"]), int(header["seq"]), header["dst"]
        except (ValueError, KeyError, TypeError) as exc:
            raise BadMessage(f"unreadable header: {exc}") from None
        if seq <= self._last.get(src, 0):
            raise BadMessage(f"replayed message {src}#{seq}")
        self._last[src] = seq
        return header
