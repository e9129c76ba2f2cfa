"""A rank that falls silent is dead: for launchers that cannot see their processes (ranks on
other hosts), ``ProcessCluster.silence_limit`` seconds without a heartbeat end the run."""

from __future__ import annotations

import contextlib
import io
import os
import signal
from pathlib import Path

import pytest

from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec


def test_a_silent_rank_fails_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ProcessCluster, "silence_limit", 3.0)
    session, out = Session(Store(tmp_path / "h.sqlite")), io.StringIO()
    spec = Spec(layout=Layout(procs_per_node=2))
    stopped = None
    try:
        session.run_cell(spec, "pass", {}, view=CellView(out=out, err=out))
        cluster = session.live["local"].cluster
        stopped = next(i.pid for i in cluster.ranks() if i.rank == 1)
        assert stopped is not None
        os.kill(stopped, signal.SIGSTOP)  # a vanished host: no exit, no heartbeat
        with pytest.raises(RunFailed) as info:
            session.run_cell(spec, "import time; time.sleep(30)", {}, view=CellView(out=out))
        root = info.value.root
        assert (root.rank, root.kind) == (1, "timeout")
        assert "no heartbeat for" in root.summary
        assert not cluster.alive
    finally:
        if stopped is not None:
            with contextlib.suppress(ProcessLookupError):  # stop() killed it
                os.kill(stopped, signal.SIGCONT)
        session.shutdown()
