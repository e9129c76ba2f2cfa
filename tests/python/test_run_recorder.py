"""One run recorder: a run is in the history from before its ranks start to its truthful end."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.display import CellView
from jupyter_distributed.errors import LaunchError, RunFailed
from jupyter_distributed.events import MetricEvent, RunState
from jupyter_distributed.global_batch import GlobalBatch
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RunOutcome
from jupyter_distributed.layout import Layout
from jupyter_distributed.recorder import RunRecorder, new_run_id

from .backend_cases import mpi_missing

pytestmark = pytest.mark.timeout(120)


def _store(shell: Any) -> Store:
    store: Store = shell.user_ns["_jd_session"].store
    return store


def _runs(shell: Any, capsys: Any) -> str:
    capsys.readouterr()
    shell.run_line_magic("distributed", "runs")
    return str(capsys.readouterr().out)


def test_a_rank_that_dies_before_hello_leaves_a_failed_run_with_its_cause(
    shell: Any, capsys: Any
) -> None:
    # A Python that cannot find its standard library exits before it can say hello.
    with pytest.raises(LaunchError) as info:
        shell.run_cell_magic(
            "distributed", "-n 2 --env PYTHONHOME=/nonexistent-jd", "print('never runs')"
        )
    assert "before it was ready" in str(info.value)
    (run,) = _store(shell).runs()
    assert run.state is RunState.FAILED
    assert run.message == str(info.value)
    assert run.source == "print('never runs')" and run.ended is not None
    text = _runs(shell, capsys)
    assert "failed" in text and "before it was ready" in text
    # the kernel stays usable: the next cell starts a cluster and is recorded as completed
    assert shell.run_cell("%%distributed -n 2\nprint(rank)").success
    latest = _store(shell).runs()[0]
    assert latest.state is RunState.COMPLETED and latest.cluster_id


def test_an_mpi_host_without_an_address_leaves_a_failed_run(shell: Any, tmp_path: Path) -> None:
    if missing := mpi_missing():
        pytest.skip(missing)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("nosuchhost.invalid slots=1\n")
    with pytest.raises(LaunchError, match=r"nosuchhost\.invalid has no address"):
        shell.run_cell_magic(
            "distributed", f"--backend mpi --nodes 1 --hostfile {hostfile}", "print(rank)"
        )
    (run,) = _store(shell).runs()
    assert run.state is RunState.FAILED and run.backend == "mpi"
    assert "nosuchhost.invalid has no address" in run.message


def test_bad_input_is_refused_before_anything_is_recorded(shell: Any) -> None:
    class ExitsWhenPickled:
        def __reduce__(self) -> Any:
            raise SystemExit("no")

    shell.user_ns["weird"] = ExitsWhenPickled()
    with pytest.raises(UsageError, match="cannot send 'weird' to the ranks: SystemExit: no"):
        shell.run_cell_magic("distributed", "-n 1 --push weird", "pass")
    assert _store(shell).runs() == []


def test_global_batch_is_counted_as_samples_pass(shell: Any, capsys: Any) -> None:
    cell = "for _ in range(3):\n    report(samples=8)"
    assert shell.run_cell(f"%%distributed -n 2\n{cell}").success
    first = _store(shell).runs()[0]
    assert first.summary["global_batch"] == 16
    capsys.readouterr()
    assert shell.run_cell(f"%%distributed -n 3\n{cell}").success  # same cell, one more rank
    second = _store(shell).runs()[0]
    assert second.summary["global_batch"] == 24
    assert second.summary["previous_global_batch"] == 16
    assert "global batch changed from 16" in capsys.readouterr().err


def _recorder(store: Store, observers: Any = ()) -> RunRecorder:
    record = RunRecord(id=new_run_id(), backend="local", world_size=2, ranks=[0, 1])
    view = CellView(out=io.StringIO(), err=io.StringIO())
    return RunRecorder.start(store, record, view, observers=observers)


def test_a_failed_outcome_without_rank_failures_is_never_recorded_as_completed(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "h.sqlite3")
    recorder = _recorder(store)
    lost = RunOutcome(RunState.FAILED, message="history store at X: database or disk is full")
    with pytest.raises(RunFailed, match="database or disk is full"):
        recorder.finish(lost)
    run = store.run(recorder.run_id)
    assert run is not None and run.state is RunState.FAILED
    assert run.message == "history store at X: database or disk is full"


def test_the_global_batch_observer_reads_nothing_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    batch = GlobalBatch("cell", Layout(procs_per_node=4))
    recorder = _recorder(store, [batch])
    for t in range(5):
        recorder.on_event(MetricEvent(recorder.run_id, 0, float(t), {"samples": 32.0}))
    recorder.on_event(MetricEvent(recorder.run_id, 0, 9.0, {"sys.cpu_percent": 3.0}))
    assert store.metrics(recorder.run_id) == []  # nothing was written: it was only seen
    recorder.finish(RunOutcome(RunState.COMPLETED))
    run = store.run(recorder.run_id)
    assert run is not None and run.summary["global_batch"] == 128
