"""Which collective hangs, from torch's flight recorder: pure, from the ranks' stacks.

Each rank that answered with a flight-recorder summary (:mod:`..protocol.flight`) says, per
process group, the last collective it entered and those still active. The earliest active one is
the collective that hangs: ``all_reduce #3 (default_pg) was entered by 1 of 2 ranks (rank 0);
rank 1's last collective is #2 — rank 1 waits in time.sleep (cell line 5: time.sleep(30))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..collapse import ranks_brief
from ..protocol.flight import DEFAULT_PG, LABEL, Collective, GroupFlight
from ..protocol.stacks import RankStacks, Where


def ranks_text(ranks: Sequence[int]) -> str:
    """``rank 3``, ``ranks 0, 1, 5``; past 8 ranks as runs, bounded (:func:`ranks_brief`)."""
    ranks = sorted(set(ranks))
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + (", ".join(map(str, ranks)) if len(ranks) <= 8 else ranks_brief(ranks))


@dataclass(frozen=True)
class FlightDiagnosis:
    headline: str  # root cause first: the collective, who entered it, where the others are
    counts: tuple[str, ...]  # per group: each rank's last enqueued / started / completed ids
    placed: frozenset[int] = frozenset()  # ranks whose place (cell line, call) it already says


def _sizes(c: Collective) -> str:
    return ", ".join("[" + ", ".join(map(str, s)) + "]" for s in c.sizes) or "[]"


def _counts(group: str, flights: dict[int, GroupFlight]) -> str:
    parts = []
    for rank, g in sorted(flights.items()):
        started = f", started #{g.started}" if g.started >= 0 else ""
        parts.append(f"rank {rank} enqueued #{g.last}{started}, completed #{g.completed}")
    return f"collectives in {group} {LABEL}: " + "; ".join(parts)


def describe(w: Where, many: bool) -> str:
    """Where ranks are, for one rank or (``many``) several."""
    text = w.describe()
    if many:
        text = text.replace("waits in", "wait in", 1).replace("is at", "are at", 1)
        text = text.replace("is outside", "are outside", 1)
    return text


def _where(stacks: dict[int, RankStacks], members: list[int]) -> str:
    """`` — rank 1 waits in ...`` when the ranks stand at one place."""
    wheres = {w.key: w for r in members if r in stacks and (w := stacks[r].where) is not None}
    if len(wheres) != 1:
        return ""
    return f" — {ranks_text(members)} {describe(next(iter(wheres.values())), len(members) > 1)}"


def _group(
    group: str,
    flights: dict[int, GroupFlight],
    stacks: dict[int, RankStacks],
    total: int,
    finished: Sequence[int],
    placed: set[int],
) -> str | None:
    active = [(c.seq, r, c) for r, g in flights.items() for c in g.active if c.seq >= 0]
    if not active:
        return None
    seq = min(s for s, _, _ in active)
    at_seq = {r: c for s, r, c in active if s == seq}
    entered = sorted(r for r, g in flights.items() if g.last >= seq)
    behind = sorted(r for r, g in flights.items() if g.last < seq)
    ops = sorted({c.op for c in at_seq.values()})
    op = ops[0] if len(ops) == 1 else "collective"
    parts = [
        f"{op} #{seq} ({group}) was entered by {len(entered)} of {total} ranks "
        f"({ranks_text(entered)})"
    ]
    if len(ops) > 1:
        ranks_ops = ", ".join(f"rank {r} {c.op}" for r, c in sorted(at_seq.items()))
        parts[0] += f" as different collectives: {ranks_ops}"
    elif len({c.sizes for c in at_seq.values()}) > 1:
        ranks_sizes = ", ".join(f"rank {r} {_sizes(c)}" for r, c in sorted(at_seq.items()))
        parts[0] += f" with different sizes: {ranks_sizes}"
    by_last: dict[int, list[int]] = {}
    for r in behind:
        by_last.setdefault(flights[r].last, []).append(r)
    for last, members in sorted(by_last.items()):
        who = ranks_text(members)
        if last < 0:
            said = f"{who} entered no collective in {group}"
        elif len(members) == 1:
            said = f"{who}'s last collective is #{last}"
        else:
            said = f"the last collective of {who} is #{last}"
        where = _where(stacks, members)
        if where:
            placed.update(members)
        parts.append(said + where)
    if finished and group == DEFAULT_PG:
        parts.append(f"{ranks_text(finished)} finished the cell without entering it")
    if not behind and not finished and len(ops) == 1 and len(entered) == total:
        parts[0] += " and has not completed"
    return "; ".join(parts)


def diagnose_flight(
    stacks: dict[int, RankStacks], ranks: Sequence[int] = (), finished: Sequence[int] = ()
) -> FlightDiagnosis | None:
    """The hanging collective of each process group, or None when no rank has flight-recorder
    data or none has an active collective (then the stacks alone say where ranks are)."""
    groups: dict[str, dict[int, GroupFlight]] = {}
    for rank, s in sorted(stacks.items()):
        for g in s.flight:
            groups.setdefault(g.group, {})[rank] = g
    if not groups:
        return None
    order = sorted(groups, key=lambda name: name != DEFAULT_PG)
    heads: list[str] = []
    counts: list[str] = []
    placed: set[int] = set()
    for name in order:
        flights = groups[name]
        if name == DEFAULT_PG:
            total = len(ranks) or len(stacks) + len(finished)
            done = list(finished)
        else:  # a subgroup's members are not known beyond those that reported it
            total, done = len(flights), []
        head = _group(name, flights, stacks, total, done, placed)
        if head is not None:
            heads.append(head)
            counts.append(_counts(name, flights))
    if not heads:
        return None
    return FlightDiagnosis("; ".join(heads), tuple(counts), frozenset(placed))
