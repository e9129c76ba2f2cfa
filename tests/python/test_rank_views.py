"""The kernel's views of its ranks, set per span by relays' reductions (issue 26).

A reduction's range ("ranks 0-7 ended") is one write to the ranks' span, not one per rank; each
rank reads the span's ``state`` and ``last_seen`` unless it said something of its own since.
What the views, the states recorded and the liveness check give must be what a write per rank
gave: the same scenario is played on views written per span and on views written rank by rank.
"""

from __future__ import annotations

from jupyter_distributed.cluster.fancompact import Compacting
from jupyter_distributed.cluster.liveness import silent_ranks
from jupyter_distributed.events import RankState, RankStates, Recorded
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.rankviews import RankSpans

LAYOUT = Layout(nodes=2, procs_per_node=8)
RUN = "run-1"
RAN = [RankState.RUNNING, RankState.DONE]


def infos() -> dict[int, RankInfo]:
    return {r: RankInfo(r, f"node{r // 8}", 100 + r, "idle", LAYOUT.coords(r)) for r in range(16)}


def ended(views: RankSpans, ranges: list[tuple[int, int]], t: float) -> dict[int, list[RankState]]:
    """A reduction's plain ends of ``ranges`` at ``t``: the states recorded for each rank."""
    compacting = Compacting()
    compacting.ended(views, RUN, ranges, t)
    events: list[Recorded] = []
    compacting.close(events, [], 0)
    (states,) = events
    assert isinstance(states, RankStates)
    out: dict[int, list[RankState]] = {}
    for rank, state, host, pid in states.each():
        assert (host, pid) == (f"node{rank // 8}", 100 + rank)
        out.setdefault(rank, []).append(state)
    return out


def one_by_one(info: dict[int, RankInfo], ranges: list[tuple[int, int]], t: float) -> None:
    """What a ``Done`` per rank did to its view."""
    for first, last in ranges:
        for r in range(first, last + 1):
            info[r].state, info[r].last_seen = "idle", t


def views_of(info: dict[int, RankInfo]) -> list[tuple[int, str, float | None]]:
    return [(i.rank, i.state, i.last_seen) for i in info.values()]


def test_a_reductions_range_is_one_write_that_every_rank_reads() -> None:
    info, alone = infos(), infos()
    views = RankSpans(info)
    assert ended(views, [(0, 7), (8, 15)], 100.0) == dict.fromkeys(range(16), RAN)
    one_by_one(alone, [(0, 7), (8, 15)], 100.0)
    assert views_of(info) == views_of(alone)
    assert all(i._seen is None and i._state == "idle" for i in info.values())  # (not written)

    for i in (info, alone):  # rank 3 says it runs the next cell; rank 9's heartbeat comes later
        i[3].state, i[3].last_seen = "running", 105.0
    assert ended(views, [(0, 7)], 110.0) == {
        r: [RankState.DONE] if r == 3 else RAN for r in range(8)
    }
    one_by_one(alone, [(0, 7)], 110.0)
    for i in (info, alone):
        i[9].last_seen = 140.0
    assert views_of(info) == views_of(alone)
    assert info[3].state == "idle" and info[3].last_seen == 110.0  # the span's, newer than its own

    # ranks 0-3 end alone in the next cell (node 0's ends came in parts): 4-7 keep their views
    assert ended(views, [(0, 3)], 120.0) == dict.fromkeys(range(4), RAN)
    one_by_one(alone, [(0, 3)], 120.0)
    assert views_of(info) == views_of(alone)


def test_the_liveness_check_reads_the_spans_and_names_the_same_silent_ranks() -> None:
    info, alone = infos(), infos()
    views = RankSpans(info)
    ended(views, [(0, 7), (8, 15)], 100.0)
    one_by_one(alone, [(0, 7), (8, 15)], 100.0)
    ended(views, [(0, 3)], 120.0)  # 0-3 in a span of their own, 4-7 in none now
    one_by_one(alone, [(0, 3)], 120.0)
    for i in (info, alone):
        i[9].last_seen = 140.0  # its heartbeat: it alone of node 1 is alive
        i[5].last_seen = 141.0  # (a rank in no span)
        i[12].state = "exited"  # (an ended rank is not silent)
    assert silent_ranks(info, 30.0, 130.0, views) == []  # nothing silent yet
    got = silent_ranks(info, 30.0, 145.0, views)
    want = silent_ranks(alone, 30.0, 145.0)
    assert [(f.rank, f.evalue, f.host, f.pid) for f in got] == [
        (f.rank, f.evalue, f.host, f.pid) for f in want
    ]
    assert [f.rank for f in got] == [4, 6, 7, 8, 10, 11, 13, 14, 15]
    assert views_of(info) == views_of(alone)  # (the silent ones marked failed)
    assert silent_ranks(info, 30.0, 146.0, views) == []  # once
