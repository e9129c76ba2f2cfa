"""What a cell awaits of thousands of ranks is kept as runs (issue 26): it must answer as the
set of ranks it stands for would, whatever order a cell's nodes and ranks end in."""

from __future__ import annotations

import random

from jupyter_distributed.cluster.rankset import RankSet


def test_a_rank_set_answers_as_a_set_of_its_ranks_would() -> None:
    rng = random.Random(26)  # noqa: S311 (a repeatable order, not a secret)
    for start in ([*range(1000)], (5, 6, 7, 9, 2), range(3, 40), [], [4, 4, 1]):
        ranks, plain = RankSet(start), set(start)
        assert ranks == plain and len(ranks) == len(plain) and bool(ranks) == bool(plain)
        for _ in range(300):
            first = rng.randrange(-5, 1010)
            change = rng.choice(
                [range(first, first + rng.randrange(0, 130)), (first,), [first, first + 2]]
            )
            if len(change) == 1 and rng.random() < 0.5:
                ranks.discard(change[0])
                plain.discard(change[0])
            else:
                ranks.difference_update(change)
                plain.difference_update(change)
            probe = rng.randrange(-5, 1010)
            assert (probe in ranks) == (probe in plain)
            assert list(ranks) == sorted(plain) and len(ranks) == len(plain)
        copy = ranks.copy()
        ranks.clear()
        assert not ranks and copy == plain


def test_a_cell_to_every_rank_is_one_run_and_stays_a_few() -> None:
    ranks = RankSet(tuple(range(10_000)))
    assert repr(ranks) == "RankSet(0-9999)"
    for node in range(0, 80, 2):  # (half the nodes' reductions came)
        ranks.difference_update(range(node * 125, node * 125 + 125))
    assert len(ranks) == 5_000 and repr(ranks).count(",") == 39  # 40 runs, not 5,000 ranks
    assert 125 in ranks and 124 not in ranks and 9_999 in ranks


def test_the_set_a_cell_awaits_is_made_once_per_tuple_and_never_shared() -> None:
    ranks = tuple(range(1000))
    first = RankSet.of(ranks)
    first.difference_update(range(0, 125))  # (a node's ends came)
    again = RankSet.of(ranks)  # the next cell: every rank again, not what the last left
    assert len(again) == 1000 and repr(again) == "RankSet(0-999)" and len(first) == 875
    assert RankSet.of(tuple(range(8))) == RankSet(range(8))  # another tuple: its own set
    assert RankSet.of([1, 2, 5]) == {1, 2, 5}  # (a list is never kept: it may change)
