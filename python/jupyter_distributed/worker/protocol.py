"""Signed messages between the kernel and its ranks (standard library only).

A message is a list of frames: ``[signature, header, *buffers]``. The header is JSON with a
``type``, a unique ``id`` and the message's fields; buffers carry pickled data out of band. The
signature is HMAC-SHA256, keyed by the cluster's secret as in Jupyter's own protocol, over the
header and the SHA-256 digest of every buffer (so one large push is hashed once for all
ranks). A message whose signature does not match, or whose id was already seen (a replay), is
refused.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
from collections import deque
from collections.abc import Sequence
from typing import Any

PROTOCOL_VERSION = 1
BOOTSTRAP_ENV = "JUPYTER_DISTRIBUTED_BOOTSTRAP"

Buffer = bytes | memoryview


def digest(buffer: Buffer) -> bytes:
    return hashlib.sha256(buffer).digest()


class BadMessage(Exception):
    """A message was refused; the text says why."""


class Signer:
    def __init__(self, key: bytes, seen: int = 4096) -> None:
        if len(key) < 16:
            raise ValueError("the cluster secret must have at least 16 bytes")
        self._key = key
        self._prefix = os.urandom(4).hex()
        self._counter = itertools.count()
        self._seen: set[str] = set()
        self._order: deque[str] = deque()
        self._limit = seen

    def sign(self, header: Buffer, digests: Sequence[bytes]) -> bytes:
        mac = hmac.new(self._key, header, digestmod=hashlib.sha256)
        for d in digests:
            mac.update(d)
        return mac.hexdigest().encode()

    def pack(
        self,
        msg_type: str,
        fields: dict[str, Any] | None = None,
        buffers: Sequence[Buffer] = (),
        digests: Sequence[bytes] | None = None,
    ) -> list[Buffer]:
        """Frames of a signed message. Pass ``digests`` (from :func:`digest`) to sign the
        same large buffers for many ranks without hashing them again."""
        header = json.dumps(
            {
                "type": msg_type,
                "id": f"{self._prefix}-{next(self._counter)}",
                "v": PROTOCOL_VERSION,
                **(fields or {}),
            },
            separators=(",", ":"),
        ).encode()
        if digests is None:
            digests = [digest(b) for b in buffers]
        return [self.sign(header, digests), header, *buffers]

    def unpack(self, frames: Sequence[Buffer]) -> tuple[dict[str, Any], list[Buffer]]:
        if len(frames) < 2:
            raise BadMessage("a message needs a signature and a header")
        signature, body = bytes(frames[0]), list(frames[1:])
        if not hmac.compare_digest(signature, self.sign(body[0], [digest(b) for b in body[1:]])):
            raise BadMessage("bad signature (a connection without the cluster's secret?)")
        try:
            header = json.loads(bytes(body[0]))
            msg_id = str(header["id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise BadMessage(f"unreadable header: {exc}") from None
        if msg_id in self._seen:
            raise BadMessage(f"replayed message {msg_id}")
        self._seen.add(msg_id)
        self._order.append(msg_id)
        if len(self._order) > self._limit:
            self._seen.discard(self._order.popleft())
        return header, body[1:]
