"""Length-prefixed frames in one byte string (standard library only).

The SageMaker path has no socket to carry a message's buffers: the pushed values travel in the
job's code package and the pulled values come back in its model directory, each as frames,
every one an 8-byte little-endian length followed by its bytes.

On the ZeroMQ channel no frame a rank sends may exceed :data:`MAX_FRAME` (the kernel's socket
refuses a larger one before reading it: ``zmq.MAXMSGSIZE``), so :func:`split_large` cuts a large
buffer (a pulled array) into several frames and :func:`join_parts` puts it together again.

A message, all its frames together, may not exceed a cap (:data:`MAX_MESSAGE` unless
``Distributed.max_message_mb`` says otherwise): a sender checks what it is about to send, and
the kernel refuses a larger message from a peer (:func:`too_large` says why, naming the setting).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import BinaryIO

from .signing import Buffer

_LENGTH = struct.Struct("<Q")
MAX_FRAME = 64 << 20  # bytes in one frame a rank sends to the kernel
MAX_HEADER = 1 << 20  # a header is JSON of bounded fields (lines are cut at 64 KiB)
MAX_MESSAGE = 1 << 30  # bytes in one message, every frame together (Distributed.max_message_mb)
SMALL = 64 << 10  # bytes of a message that ZeroMQ copies faster than it lends them


def copied(frames: Sequence[Buffer]) -> bool:
    """Whether to send ``frames`` by copy: a small message of byte strings (the signature, the
    header and short buffers), where lending each frame to ZeroMQ (``copy=False``, a
    ``zmq.Frame`` object apiece) costs more than copying it."""
    size = 0
    for f in frames:
        if type(f) is not bytes:
            return False
        size += len(f)
    return size < SMALL


def message_size(frames: Iterable[Buffer]) -> int:
    """Bytes of a message: every frame together."""
    return sum(memoryview(f).nbytes for f in frames)


def too_large(what: str, size: int, limit: int) -> str:
    """Why ``what`` (a message of ``size`` bytes) is refused: how large, and what to raise."""
    need = -(-size // (1 << 20)) + 1  # (whole MB, with room for the header)
    return (
        f"{what} is {size / (1 << 20):.1f} MB, over Distributed.max_message_mb = "
        f"{limit / (1 << 20):g}: refused (raise it with %config Distributed.max_message_mb = "
        f"{need})"
    )


def split_large(
    buffers: Sequence[Buffer], limit: int = MAX_FRAME
) -> tuple[list[Buffer], list[int] | None]:
    """``buffers`` as frames of at most ``limit`` bytes each (views, no copy) and how many
    frames each buffer became; ``None`` when none had to be cut (the common case)."""
    if not buffers:
        return [], None
    views = [memoryview(b).cast("B") for b in buffers]
    if all(v.nbytes <= limit for v in views):
        return list(buffers), None
    frames: list[Buffer] = []
    parts: list[int] = []
    for v in views:
        pieces = [v[i : i + limit] for i in range(0, v.nbytes, limit)] or [v]
        frames.extend(pieces)
        parts.append(len(pieces))
    return frames, parts


def join_parts(frames: Sequence[Buffer], parts: object) -> list[Buffer]:
    """The buffers :func:`split_large` cut into ``frames``; ``ValueError`` if they do not add
    up."""
    if not (isinstance(parts, list) and all(isinstance(n, int) and n > 0 for n in parts)):
        raise ValueError(f"bad frame counts {parts!r}")
    if sum(parts) != len(frames):
        raise ValueError(f"{len(frames)} frames for counts {parts}")
    out: list[Buffer] = []
    i = 0
    for n in parts:
        out.append(frames[i] if n == 1 else b"".join(frames[i : i + n]))
        i += n
    return out


def write_frames(out: BinaryIO, frames: Iterable[Buffer]) -> None:
    for frame in frames:
        view = memoryview(frame).cast("B")
        out.write(_LENGTH.pack(view.nbytes))
        out.write(view)


def pack_frames(frames: Iterable[Buffer]) -> bytes:
    return b"".join(_LENGTH.pack(memoryview(f).nbytes) + bytes(f) for f in frames)


def unpack_frames(data: bytes) -> list[bytes]:
    """The frames of :func:`pack_frames`; raises ``ValueError`` for truncated data."""
    frames, i = [], 0
    while i < len(data):
        if i + _LENGTH.size > len(data):
            raise ValueError("truncated frame length")
        (n,) = _LENGTH.unpack_from(data, i)
        i += _LENGTH.size
        if i + n > len(data):
            raise ValueError("truncated frame")
        frames.append(data[i : i + n])
        i += n
    return frames
