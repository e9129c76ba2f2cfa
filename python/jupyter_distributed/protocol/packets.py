"""A multipart message as records of a Unix ``SOCK_SEQPACKET`` socket (standard library only).

Where every rank is on the kernel's machine, a rank's cell socket (cells in, their ends out)
is a plain Unix socket instead of ZeroMQ: a send goes from one thread straight to the thread
blocked in the peer's receive, without the two ZeroMQ I/O threads between them (see
``worker/cellsocket.py``). Such a socket keeps each record whole, but a record must fit the
socket's buffer, so a message travels as records of at most :data:`RECORD` bytes:

- the first byte of each record is its flags: :data:`FIRST` on a message's first record,
  :data:`LAST` on its last (a small message is one record with both);
- the first record goes on with the frame table: the number of frames, then each frame's
  length (little-endian 32-bit integers); then come the frames' bytes, end to end.

A message cut short (its sender interrupted between two records) is dropped by the next
``FIRST``; the receiver checks the table against :data:`~.frames.MAX_FRAME` (each frame) and
its own cap on a whole message (the kernel's: ``Distributed.max_message_mb``) before it
allocates anything.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence

from .frames import MAX_FRAME, MAX_HEADER
from .signing import Buffer

RECORD = 64 << 10  # bytes of one record, flags included
MAX_FRAMES = 4096  # frames in one message
FIRST, LAST = 1, 2
_COUNT = struct.Struct("<I")


class BadPacket(ValueError):
    """Records that do not make a message (dropped, as a bad signature would be)."""


class TooLarge(BadPacket):
    """A frame table whose frames add up to more than the receiver's cap on a message."""

    def __init__(self, size: int) -> None:
        super().__init__(f"a message of {size} bytes, over the cap")
        self.size = size


def records(frames: Sequence[Buffer]) -> Iterator[list[Buffer]]:
    """``frames`` as records, each a list of buffers for one ``sendmsg`` (no frame copied)."""
    views = [memoryview(f).cast("B") for f in frames]
    table = _COUNT.pack(len(views)) + b"".join(_COUNT.pack(v.nbytes) for v in views)
    record: list[Buffer] = [b"", table]
    room = RECORD - 1 - len(table)
    first = True
    for view in views:
        while view.nbytes > room:
            record.append(view[:room])
            view = view[room:]
            record[0] = bytes([FIRST if first else 0])
            yield record
            record, room, first = [b""], RECORD - 1, False
        if view.nbytes:
            record.append(view)
            room -= view.nbytes
    record[0] = bytes([(FIRST if first else 0) | LAST])
    yield record


class Reassembler:
    """Records in, whole messages out (one per connection); with ``limit``, a message whose
    frame table adds up to more than ``limit()`` bytes is refused (:class:`TooLarge`) before
    any of it is kept."""

    def __init__(self, limit: Callable[[], int] | None = None) -> None:
        self._limit = limit
        self._sizes: list[int] = []
        self._body = bytearray()
        self._want = 0
        self._open = False

    def feed(self, record: Buffer) -> list[Buffer] | None:
        """The message ``record`` completes, else ``None``; :class:`BadPacket` for a record
        that cannot belong to a message (the message so far is dropped with it)."""
        view = memoryview(record).cast("B")
        if not view.nbytes:
            raise BadPacket("an empty record")
        flags, data = view[0], view[1:]
        if flags & FIRST:
            self._open = False  # a message cut short before it is dropped
            data = self._table(data)
            self._open = True
        elif not self._open:
            raise BadPacket("a record outside any message")
        if len(self._body) + data.nbytes > self._want:
            self._open = False
            raise BadPacket("more bytes than the frame table says")
        self._body += data
        if not flags & LAST:
            return None
        self._open = False
        if len(self._body) != self._want:
            raise BadPacket("fewer bytes than the frame table says")
        body, at = memoryview(self._body), 0
        out: list[Buffer] = []
        self._body = bytearray()  # (the message keeps the views of the old one)
        for size in self._sizes:
            out.append(body[at : at + size])
            at += size
        return out

    def _table(self, data: memoryview) -> memoryview:
        if data.nbytes < _COUNT.size:
            raise BadPacket("no frame table")
        (count,) = _COUNT.unpack_from(data)
        end = _COUNT.size * (count + 1)
        if not 0 < count <= MAX_FRAMES or data.nbytes < end:
            raise BadPacket(f"a frame table of {count} frames")
        sizes = [_COUNT.unpack_from(data, _COUNT.size * (i + 1))[0] for i in range(count)]
        if any(size > MAX_FRAME + MAX_HEADER for size in sizes):
            raise BadPacket("a frame over the size limit")
        if self._limit is not None and sum(sizes) > self._limit():
            raise TooLarge(sum(sizes))
        self._sizes, self._want, self._body = sizes, sum(sizes), bytearray()
        return data[end:]
