"""When a relay looks below again after a wake-up that only held its ranks' ends (issue 26).

A node's ranks end a cell one after the other, and each ``Done`` the relay holds (:mod:`.fanin`)
used to cost it a wake-up of its own: the poll, the drain that ends on ``zmq.Again``, the due
checks and the scheduler's switch, ~35 µs of its ~50 µs per rank per cell where the ends come
apart (``benchmarks/bench_relay_cpu.py --spread 100``). So after a wake-up that took only ends
to hold (nothing went up, nothing came from above, no connection closed) while a cell still
awaits at least :data:`PACE_AWAITED` ends, and the look below that woke it had waited less than
:data:`PACE_S` (the ends come in faster than that, one by one: a relay whose ends pile up
while it waits for a core, as 80 relays on two do, takes them many a wake-up already, and a
wait would only add one), the relay waits :data:`PACE_S` before it looks below again, and the
ends that came meanwhile are taken in one drain.

What it costs, and what it never delays:

- A message from above (the kernel's: a cell, an interrupt, a stop) ends the wait at once: the
  relay polls its connection upward throughout.
- An end that is an error, or anything of a rank that is not an end to hold (output, a prompt,
  stacks), is forwarded at once in the wake-up that takes it; one that comes *during* a wait is
  taken at the wait's end, at most :data:`PACE_S` late. The wait never starts after a wake-up
  that took any such message.
- A node of fewer than :data:`PACE_AWAITED` + 1 ranks never waits (an 8-GPU node's cell ends as
  before); on a larger node, once fewer ends than that are awaited the relay takes each end as
  it comes, so the node's reduction goes up at most :data:`PACE_S` late, and only when its last
  ends came within a wait.
"""

from __future__ import annotations

from collections.abc import Callable

PACE_S = 0.001  # how long a relay waits before it looks below again (see the module's text)
PACE_AWAITED = 8  # ... only while a cell still awaits at least this many of its node's ends


class RelayPace:
    """A relay's count of what one wake-up took, and the wait after it (:meth:`pause`)."""

    def __init__(self, awaited: Callable[[], int]) -> None:
        self._awaited = awaited  # the most ends a cell that holds some still awaits
        self._held = 0
        self._other = False
        self.pauses = 0  # waits so far (the tests count them)

    def held(self) -> None:
        """An end was taken to hold."""
        self._held += 1

    def other(self) -> None:
        """Anything else happened in this wake-up (a message forwarded or batched, one from
        above, a connection closed)."""
        self._other = True

    def pause(self, due: float | None, slept: float) -> float:
        """Seconds to wait before the next look below (0: none), ``due`` the seconds until
        the relay next has something to send (None: nothing waits), ``slept`` how long the
        look that woke it waited; the wake-up's counts start again."""
        held, other = self._held, self._other
        self._held, self._other = 0, False
        if not held or other or slept >= PACE_S or self._awaited() < PACE_AWAITED:
            return 0.0
        self.pauses += 1
        return PACE_S if due is None else max(0.0, min(PACE_S, due))
