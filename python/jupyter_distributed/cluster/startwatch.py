"""Which starting rank is stuck, and in which stage, within seconds (pure; the clock is given).

A rank goes through ``process start`` (its process runs, nothing heard yet), ``setup``
(connected; importing and preparing its strategy), ``init_process_group`` (waiting for the
others to rendezvous) and ``ready``. A rank in one stage for longer than ``notice_after`` is
named once with its stage (it may just be slow: importing TensorFlow takes 10-20 s on two busy
cores, and start-up goes on); one still there after ``stacks_after`` is named again, with its
stacks (where it waits). A rendezvous that has not
completed ``rendezvous_limit`` seconds after the last rank entered it will not complete (a wrong
``MASTER_ADDR`` or port): the start fails with the ranks, the address and their stacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..collapse import ranks_brief
from ..errors import LaunchError
from ..protocol.stacks import RankStacks
from .hang import diagnose

PROCESS_START = "process start"
RENDEZVOUS = "init_process_group"
#: the stages in their order, as the cell's start-up line names them
SHOWN = {PROCESS_START: "process start", "setup": "imports", RENDEZVOUS: RENDEZVOUS}
NOTICE_AFTER = 5.0
STACKS_AFTER = 30.0
RENDEZVOUS_LIMIT = 5.0


@dataclass
class StartWatch:
    ranks: Iterable[int]
    t0: float
    notice_after: float = NOTICE_AFTER
    rendezvous_limit: float = RENDEZVOUS_LIMIT
    stacks_after: float = STACKS_AFTER
    stages: dict[int, tuple[str, float, str]] = field(default_factory=dict)  # stage, since, detail
    noticed: set[int] = field(default_factory=set)
    stacked: set[int] = field(default_factory=set)  # named with their stacks in this stage

    def __post_init__(self) -> None:
        self.stages = dict.fromkeys(self.ranks, (PROCESS_START, self.t0, ""))

    def reached(self, rank: int, stage: str, now: float, detail: str = "") -> None:
        if rank in self.stages and self.stages[rank][0] != stage:
            self.stages[rank] = (stage, now, detail)
            self.noticed.discard(rank)
            self.stacked.discard(rank)

    def stage(self, rank: int) -> str:
        return self.stages.get(rank, (PROCESS_START, 0.0, ""))[0]

    def slow(self, now: float) -> list[int]:
        """Ranks newly in one stage (other than ready) for longer than ``notice_after``."""
        return self._newly(now, self.notice_after, self.noticed)

    def stuck(self, now: float) -> list[int]:
        """Ranks newly in one stage (other than ready) for longer than ``stacks_after``."""
        return self._newly(now, self.stacks_after, self.stacked)

    def _newly(self, now: float, after: float, seen: set[int]) -> list[int]:
        out = sorted(
            r
            for r, (stage, since, _) in self.stages.items()
            if stage != "ready" and now - since > after and r not in seen
        )
        seen.update(out)
        return out

    def stuck_rendezvous(self, now: float) -> list[int]:
        """The ranks in ``init_process_group`` when every rank has entered it (or is past it)
        and the last one did so more than ``rendezvous_limit`` seconds ago."""
        waiting = [r for r, (s, _, _) in self.stages.items() if s == RENDEZVOUS]
        if not waiting or any(s not in (RENDEZVOUS, "ready") for s, _, _ in self.stages.values()):
            return []
        last = max(since for s, since, _ in self.stages.values() if s == RENDEZVOUS)
        return sorted(waiting) if now - last > self.rendezvous_limit else []

    def progress(self) -> str:
        """One line: the ranks in each stage, in the stages' order, and how many are ready."""
        at: dict[str, list[int]] = {}
        for r, (stage, _, _) in self.stages.items():
            at.setdefault(stage, []).append(r)
        ready = len(at.pop("ready", ()))
        order = [*SHOWN, *sorted(set(at) - set(SHOWN))]
        parts = [
            f"{SHOWN.get(stage, stage)}: rank{'s' if len(at[stage]) > 1 else ''} "
            f"{ranks_brief(at[stage])}"
            for stage in order
            if stage in at
        ]
        return " · ".join(["starting", *parts, f"ready: {ready} of {len(self.stages)}"])

    def describe(self, ranks: Iterable[int], now: float) -> str:
        """``ranks 0-62 in process start for 5s; rank 63 in setup for 6s``: ranks alike (the
        same stage, time and detail) once, so a line stays one line at hundreds of ranks."""
        alike: dict[tuple[str, str, str], list[int]] = {}
        for r in sorted(ranks):
            stage, since, detail = self.stages.get(r, (PROCESS_START, self.t0, ""))
            alike.setdefault((stage, f"{now - since:.0f}", detail), []).append(r)
        parts = []
        for (stage, secs, detail), group in alike.items():
            who = f"rank {group[0]}" if len(group) == 1 else f"ranks {ranks_brief(group)}"
            parts.append(f"{who} in {stage} for {secs}s" + (f", {detail}" if detail else ""))
        return "; ".join(parts)


def watch_start(
    watch: StartWatch,
    now: float,
    ranks: Sequence[int],
    stacks: Callable[[Sequence[int]], dict[int, RankStacks]],
    notice: Callable[[str], None],
) -> None:
    """Name ranks slow in a stage (with their stacks once they look stuck); raise
    :class:`LaunchError` for a rendezvous that hangs, naming the ranks, the address and where
    they wait."""
    stuck = watch.stuck_rendezvous(now)
    if stuck:
        where = diagnose(stacks(stuck), ranks).text
        raise LaunchError(
            f"the rendezvous in init_process_group did not complete "
            f"{watch.rendezvous_limit:.0f}s after every rank entered it "
            f"({watch.describe(stuck, now)}); check MASTER_ADDR and MASTER_PORT "
            f"(--env) and that the ranks can reach each other\n{where}"
        )
    slow, stuck = watch.slow(now), watch.stuck(now)
    if stuck:
        got = stacks(stuck)
        lines = [f"still starting: {watch.describe(stuck, now)}; where they are:"]
        for r in stuck:
            if got[r].threads:
                lines += [f"--- rank {r}:", *got[r].format()]
        notice("\n".join(lines))
    elif slow:
        notice(f"still starting: {watch.describe(slow, now)}")
