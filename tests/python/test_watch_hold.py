"""The look at the processes (every 0.5 s on the I/O thread) must not cut a cell's held replies
into two store transactions when it finds nothing: a cell's ends stay one transaction (issue
26), and what it does find (a death) still goes first, with what was held."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, cast

import pytest

from jupyter_distributed.cluster.inbox import Exited
from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.history.store import Store

from .test_round_trip import _appends, _finished, _inbox, _reply, router, store  # noqa: F401


def _look(on: Router, exited: list[tuple[int | None, int]]) -> None:
    """One look at the processes, as a cluster whose processes report ``exited`` runs it."""
    ended = iter([exited])
    cluster = SimpleNamespace(
        info=on.ranks.info, silence_limit=None, router=on, _lost="",
        processes=SimpleNamespace(exited=lambda: next(ended, [])),
        _dead_nodes=lambda now: [], _explain=lambda failure: failure,
        _stopping=threading.Event(), mark_lost=lambda why: None, stacks_dir="",
    )  # fmt: skip
    cluster._last_words = lambda failures, now: ProcessCluster._last_words(
        cast(Any, cluster), failures, now
    )
    ProcessCluster._watch(cast(Any, cluster))


def test_a_look_that_finds_nothing_leaves_the_held_replies_held(
    router: Router,  # noqa: F811
    store: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = _appends(store, monkeypatch)
    router.cell.awaited = {0, 1}
    router._on_batch(_reply(0))
    _look(router, [])
    assert written == [] and _inbox(router) == []  # still held: rank 1 has not answered
    router._on_batch(_reply(1))
    assert len(written) == 1 and _finished(_inbox(router)) == [0, 1]  # one transaction

    router.cell.awaited = {0, 1}  # a death found: what was held goes first, with it
    router._on_batch(_reply(0))
    _look(router, [(1, -9)])
    items = _inbox(router)
    assert len(written) == 2 and _finished(items) == [0]
    assert [i.failure.rank for i in items if isinstance(i, Exited)] == [1]
