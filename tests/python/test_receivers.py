"""A message signed once for many ranks names them as runs (issue 26): at 10,000 ranks its
``dst`` was ~90 kB that each rank hashed, parsed and searched, and each relay parsed, for every
cell, stack request and interrupt; a stack request's answers then came after the kernel had
stopped waiting. A run of consecutive ranks is now one item, read the same way by the ranks
(:class:`Signer`), the relays and the aggregators."""

from __future__ import annotations

import json

import pytest

from jupyter_distributed.protocol.receivers import Receivers, encode
from jupyter_distributed.protocol.signing import KERNEL, BadMessage, Signer, cell_name

KEY = b"k" * 32


def test_consecutive_ranks_are_one_item_and_others_stay_names() -> None:
    names = [cell_name(r) for r in range(10_000)]
    assert encode(names) == '["c0-9999"]'
    assert json.loads(encode(["r0", "r1", "r2", "r3", "r7", "r9", "r10", "r11", "c12", "n0"])) == [
        "r0-3", "r7", "r9-11", "c12", "n0",
    ]  # fmt: skip
    assert json.loads(encode(["r5", "r6", "r01", "r2"])) == ["r5", "r6", "r01", "r2"]
    assert encode([]) == "[]"


def test_a_run_names_exactly_its_ranks() -> None:
    receivers = Receivers(["c0-999", "c2000", "r5-7"])
    assert all(cell_name(r) in receivers for r in range(1000))
    assert "c1000" not in receivers and "c1999" not in receivers and "c2000" in receivers
    assert "r4" not in receivers and "r6" in receivers and "c6-6" not in receivers
    assert "x" not in receivers and "k" not in Receivers("r1")
    assert sorted(receivers.among({"c3": 0, "c1500": 1, "c2000": 2, "r7": 3})) == [
        "c2000", "c3", "r7",
    ]  # fmt: skip
    assert Receivers(["c3", "c4"]).among({"c4", "c5"}) == ["c4"]


def test_a_rank_takes_a_message_for_a_run_it_is_in_and_refuses_one_it_is_not() -> None:
    kernel = Signer(KEY, KERNEL)
    names = [cell_name(r) for r in range(10_000)]
    message = kernel.pack_all({"type": "ping"}, names)
    assert len(bytes(message[1])) < 100  # (the names one by one: ~90 kB)
    header, _ = Signer(KEY, cell_name(4321)).unpack(message)
    assert header["dst"] == ["c0-9999"]
    stranger = Signer(KEY, cell_name(10_000))
    with pytest.raises(BadMessage, match="reached c10000"):
        stranger.unpack(kernel.pack_all({"type": "ping"}, names))
