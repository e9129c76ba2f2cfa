"""A multipart message as records of a Unix SOCK_SEQPACKET socket (the local cell sockets)."""

from __future__ import annotations

import socket
import struct

import pytest

from jupyter_distributed.protocol.frames import MAX_FRAME
from jupyter_distributed.protocol.packets import (
    FIRST,
    LAST,
    RECORD,
    BadPacket,
    Reassembler,
    records,
)


def _join(record: list[bytes | memoryview]) -> bytes:
    return b"".join(bytes(b) for b in record)


def _through(frames: list[bytes]) -> list[bytes]:
    """``frames`` sent and received over a real socket pair, as the ranks' cell sockets do."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out = Reassembler()
    with a, b:
        for record in records(frames):
            a.sendmsg(record)
            message = out.feed(b.recv(RECORD))
        assert message is not None
        return [bytes(f) for f in message]


def test_a_small_message_is_one_record() -> None:
    (record,) = list(records([b"sig", b"{}"]))
    assert _join(record)[0] == FIRST | LAST
    assert _through([b"sig", b"{}", b""]) == [b"sig", b"{}", b""]


def test_a_large_message_travels_in_records_that_fit_the_socket() -> None:
    frames = [b"s" * 32, b"h" * 300, bytes(range(256)) * 1000, b"", b"t" * (3 * RECORD)]
    cut = [_join(r) for r in records(frames)]
    assert len(cut) > 4 and all(len(r) <= RECORD for r in cut)
    assert [r[0] for r in cut] == [FIRST] + [0] * (len(cut) - 2) + [LAST]
    assert _through(frames) == frames


def test_a_message_cut_short_is_dropped_by_the_next_one() -> None:
    out = Reassembler()
    big = [_join(r) for r in records([b"x" * (2 * RECORD)])]
    assert out.feed(big[0]) is None  # the sender was interrupted after its first record
    (small,) = [_join(r) for r in records([b"sig", b"next"])]
    assert [bytes(f) for f in out.feed(small) or []] == [b"sig", b"next"]
    with pytest.raises(BadPacket, match="outside any message"):
        out.feed(big[1])  # the rest of the one cut short


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (b"", "empty record"),
        (bytes([FIRST | LAST]) + b"\x01", "no frame table"),
        (bytes([FIRST | LAST]) + struct.pack("<I", 0), "table of 0 frames"),
        (bytes([FIRST | LAST]) + struct.pack("<I", 1 << 20), "table of 1048576 frames"),
        (bytes([FIRST]) + struct.pack("<II", 1, 2 * MAX_FRAME), "over the size limit"),
        (bytes([FIRST | LAST]) + struct.pack("<II", 1, 2) + b"abc", "more bytes than"),
        (bytes([FIRST | LAST]) + struct.pack("<II", 1, 4) + b"abc", "fewer bytes than"),
        (bytes([LAST]) + b"abc", "outside any message"),
    ],
)
def test_records_that_make_no_message_are_refused(record: bytes, why: str) -> None:
    out = Reassembler()
    with pytest.raises(BadPacket, match=why):
        out.feed(record)
    (good,) = [_join(r) for r in records([b"ok"])]
    assert [bytes(f) for f in out.feed(good) or []] == [b"ok"]  # the next message is whole
