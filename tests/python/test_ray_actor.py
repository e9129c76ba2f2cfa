"""The Ray actor behind a rank, as a plain object (no Ray needed): its worker's output."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from jupyter_distributed.backends.ray.actor import RankActor


def test_the_workers_last_line_is_read_and_no_file_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a named file would go
    actor = RankActor()
    actor.start({})  # no bootstrap in its environment: the worker fails at once, saying why
    assert actor.wait() == 1
    assert "JUPYTER_DISTRIBUTED_BOOTSTRAP" in actor.tail()
    actor.stop(1)
    assert "JUPYTER_DISTRIBUTED_BOOTSTRAP" in actor.tail()  # (still readable after the stop)
    assert list(tmp_path.iterdir()) == []  # a killed actor leaves nothing on the node either
