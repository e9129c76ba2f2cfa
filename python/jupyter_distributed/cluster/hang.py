"""Where hung ranks are, root cause first: pure, from the ranks' stacks.

Ranks whose main threads stand at the same call and cell line are one group, shown once:
``rank 1 waits in torch.distributed.barrier (cell line 3: dist.barrier()); rank 0 finished the
cell; the collective was entered by 1 of 2 ranks``. Then the shared stack of each group.
When ranks answered with torch's flight recorder (:mod:`.hangflight`), the collective that hangs
and its sequence number come first, and each rank's last sequence numbers are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..protocol.stacks import RankStacks, Where
from .hangflight import describe, diagnose_flight, ranks_text

# the last part of a call that waits for other ranks (torch.distributed, mpi4py, horovod, ...)
_NAMES = """barrier monitored_barrier all_reduce allreduce all_gather allgather all_gather_object
    all_gather_into_tensor gather gather_object scatter scatter_object_list broadcast bcast
    broadcast_object_list reduce reduce_scatter reduce_scatter_tensor all_to_all alltoall
    all_to_all_single send recv isend irecv wait synchronize Barrier Allreduce Allgather Bcast
    Reduce Gather Scatter Alltoall Send Recv Sendrecv init_process_group new_group"""
COLLECTIVES = frozenset(_NAMES.split())


@dataclass(frozen=True)
class Diagnosis:
    headline: str  # one line, root cause first
    details: tuple[str, ...]  # each group's shared stack

    @property
    def text(self) -> str:
        return "\n".join((self.headline, *self.details))


def diagnose(
    stacks: dict[int, RankStacks],
    ranks: Sequence[int] = (),
    finished: Sequence[int] = (),
    whole: bool = True,
) -> Diagnosis:
    """``stacks`` of the ranks still working; ``ranks``: every rank of the run; ``finished``:
    those that finished the cell. ``whole=False``: only some ranks were asked (one tile's
    Stacks), so nothing is said about who entered a collective."""
    groups: dict[tuple[str, int | None], list[int]] = {}
    wheres: dict[tuple[str, int | None], Where] = {}
    unread: list[RankStacks] = []
    for rank, s in sorted(stacks.items()):
        w = s.where
        if w is None:
            unread.append(s)
            continue
        groups.setdefault(w.key, []).append(rank)
        wheres[w.key] = w
    parts: list[str] = []
    collective: list[str] = []
    total = len(ranks) or len(stacks) + len(finished)
    flight = diagnose_flight(stacks, ranks, finished) if whole else None
    placed = flight.placed if flight is not None else frozenset()
    for key, members in sorted(groups.items(), key=lambda kv: len(kv[1])):
        w = wheres[key]
        if placed.issuperset(members):
            continue  # the flight recorder's headline says where they are
        stage = stacks[members[0]].stage
        during = f" during {stage}" if stage and stage not in ("ready", "setup") else ""
        parts.append(f"{ranks_text(members)} {describe(w, len(members) > 1)}{during}")
        if whole and w.call.rsplit(".", 1)[-1] in COLLECTIVES:
            others = sorted(set(ranks or stacks) - set(members))
            never = f" ({ranks_text(others)} never entered it)" if others else ""
            collective.append(f"{w.call} was entered by {len(members)} of {total} ranks{never}")
    if finished:
        parts.append(f"{ranks_text(finished)} finished the cell")
    why: dict[str, list[int]] = {}  # ranks without a stack, alike once (thousands may be)
    for s in unread:
        why.setdefault(s.error or "no answer", []).append(s.rank)
    parts.extend(f"{ranks_text(members)}: no stack ({error})" for error, members in why.items())
    details: list[str] = []
    if flight is not None:  # the collective and its sequence number say more than the stacks
        if "finished the cell" in flight.headline:
            parts = [p for p in parts if not p.endswith(" finished the cell")]
        parts.insert(0, flight.headline)
        details.extend(f"--- {c}" for c in flight.counts)
    elif len(collective) == 1 and len(groups) == 1:
        parts.append("the collective was entered by " + collective[0].split(" was entered by ")[1])
    else:
        parts.extend(f"the collective {c}" for c in collective)
    for members in groups.values():
        first = stacks[members[0]]
        how = " (dumped by faulthandler: the GIL was held)"
        how = how if first.source == "faulthandler" else ""
        details.append(f"--- {ranks_text(members)}{how}:")
        details.extend(first.format())
    return Diagnosis("; ".join(parts) or "no rank to diagnose", tuple(details))


def snapshot_text(
    stacks: dict[int, RankStacks], running: set[int], ranks: Sequence[int], everyone: Sequence[int]
) -> str:
    """What a snapshot of ``ranks``' stacks says: the diagnosis of the running ones (who entered
    a collective is known only where every rank was asked), then the idle ones' stacks."""
    busy = {r: s for r, s in stacks.items() if r in running}
    idle = [r for r in ranks if r not in busy]
    whole = set(ranks) >= set(everyone)
    text = diagnose(busy, list(everyone), whole=whole).text if busy else ""
    if idle:
        details = [line for r in idle for line in (f"--- rank {r} (idle):", *stacks[r].format())]
        text = "\n".join([text or f"{ranks_text(idle)} idle", *details])
    return text


def last_seen(ranks: Sequence[int], stacks: dict[int, RankStacks]) -> str:
    """Where ``ranks`` were last seen, ranks alike once ("ranks 1-9999 are at cell line 3: …"):
    one line at 10,000 ranks; "" where no stack says."""
    alike: dict[tuple[str, int | None], list[int]] = {}
    wheres: dict[tuple[str, int | None], Where] = {}
    for rank in ranks:
        s = stacks.get(rank)
        w = s.where if s is not None else None
        if w is not None:
            alike.setdefault(w.key, []).append(rank)
            wheres[w.key] = w
    return "; ".join(
        f"{ranks_text(members)} {describe(wheres[key], len(members) > 1)}"
        for key, members in alike.items()
    )
