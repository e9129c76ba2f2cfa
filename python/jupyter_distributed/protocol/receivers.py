"""Who a message signed once for many receivers is for: its header's ``dst`` as a list.

A cell, a stack request or an interrupt for every rank goes through the relays signed once, its
``dst`` naming its receivers. Named one by one, 10,000 ranks made a ``dst`` of ~90 kB that every
rank hashed, parsed and searched for its own name, and every relay and aggregator parsed, for
each such message: at 10,000 ranks a stack request's answers came after the kernel stopped
waiting. So a run of consecutive ranks of one kind is one item, ``"r0-9999"`` (the names ``r0``
to ``r9999``); names that are not in a run stay as they are. One receiver is still the plain
string (``"r3"``). Pure and standard-library only: ranks, relays, aggregators and the kernel
read it the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Any

NAME = re.compile(r"([a-z]+)(\d+)\Z")
RUN = re.compile(r"([a-z]+)(\d+)-(\d+)\Z")
SHORTEST_RUN = 3  # consecutive names written as one item (shorter runs: each name)


def encode(names: Sequence[str]) -> str:
    """``names`` as a JSON ``dst`` list, each run of consecutive names of one kind one item."""
    out: list[str] = []
    run: list[Any] = []  # [prefix, first, last] of the run being read

    def close() -> None:
        if run:
            prefix, first, last = run
            if last - first + 1 >= SHORTEST_RUN:
                out.append(f"{prefix}{first}-{last}")
            else:
                out.extend(f"{prefix}{n}" for n in range(first, last + 1))
            run.clear()

    for name in names:
        match = NAME.match(name)
        if match is None or str(int(match.group(2))) != match.group(2):  # (no "r01")
            close()
            out.append(name)
            continue
        prefix, number = match.group(1), int(match.group(2))
        if run and run[0] == prefix and run[2] + 1 == number:
            run[2] = number
        else:
            close()
            run[:] = [prefix, number, number]
    close()
    return json.dumps(out, separators=(",", ":"))


class Receivers:
    """A header's ``dst`` (one name, or a list of names and runs), read once."""

    def __init__(self, dst: object) -> None:
        items = dst if isinstance(dst, list) else [dst]
        self.names: set[str] = set()
        self.runs: list[tuple[str, int, int]] = []
        for item in map(str, items):
            match = RUN.match(item)
            if match is None:
                self.names.add(item)
            else:
                self.runs.append((match.group(1), int(match.group(2)), int(match.group(3))))

    def __contains__(self, name: object) -> bool:
        if name in self.names:
            return True
        match = NAME.match(str(name)) if self.runs else None
        if match is None:
            return False
        prefix, number = match.group(1), int(match.group(2))
        return any(p == prefix and a <= number <= b for p, a, b in self.runs)

    def among(self, mine: Collection[str]) -> list[str]:
        """Those of ``mine`` (a relay's ranks, say) that this ``dst`` names."""
        if not self.runs:
            return [name for name in self.names if name in mine]
        return [name for name in mine if name in self]
