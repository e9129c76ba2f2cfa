"""SageMaker's side of the waits and of pdb: the job's status as one live line under the cell
while it runs (from DescribeTrainingJob's SecondaryStatus), and one line, never a prompt, for
pdb, ``input()``, ``--break`` and ``%distributed debug`` (its ranks have no channel to the
kernel). Against moto's server and the local platform of ``sagemaker_runtime``."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_distributed.debugging import debug
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.store import Store
from jupyter_distributed.interface import NO_PROMPTS
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session

from .sagemaker_runtime import LocalSageMaker
from .test_sagemaker_backend import Recorder, _spec


class LiveLines(Recorder):
    """A cell's view that keeps each state of its start-up line (what a notebook redraws)."""

    def __init__(self) -> None:
        super().__init__()
        self.live_lines: list[str] = []

    def starting(self, text: str) -> None:
        self.live_lines.append(text)
        super().starting(text)


def test_the_jobs_status_is_one_live_line_while_it_runs(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    session, view = Session(Store(tmp_path / "h.sqlite3")), LiveLines()
    session.run_cell(_spec(Layout(nodes=1, procs_per_node=1)), "pass", {}, view=view)
    job = session.store.runs(limit=1)[0].external_id
    states = [line.removeprefix(f"SageMaker {job}: ").split(" · ")[0] for line in view.live_lines]
    assert states[-1] == ""  # gone once the job ended
    # (the line follows the job's polls: a poll may skip a short state, so the states shown are
    # some of the job's own, in their order, each with the job's name)
    order = ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    shown = states[:-1]
    assert shown and all(state in order for state in shown), states
    assert [order.index(state) for state in shown] == sorted(order.index(s) for s in shown)
    assert all(line.startswith(f"SageMaker {job}: ") for line in view.live_lines[:-1])
    assert all(
        a != b for a, b in zip(view.live_lines, view.live_lines[1:], strict=False)
    )  # on change


def test_pdb_input_break_and_debug_say_in_one_line_there_is_no_channel(
    configured: LocalSageMaker, tmp_path: Path
) -> None:
    session, view = Session(Store(tmp_path / "h.sqlite3")), Recorder()
    spec = _spec(Layout(nodes=1, procs_per_node=1))
    with pytest.raises(RunFailed) as info:
        session.run_cell(spec, "breakpoint()\n", {}, view=view, stdin=True)
    failure = info.value.root
    assert (failure.ename, failure.evalue) == ("NoStdin", NO_PROMPTS)
    with pytest.raises(RunFailed) as info:
        session.run_cell(spec, "input('name? ')\n", {}, view=view, stdin=True)
    assert info.value.root.evalue == NO_PROMPTS
    assert debug(session, None, {}) == NO_PROMPTS  # post-mortem after the failed job
    view = Recorder()
    session.run_cell(spec, "pass\n", {}, view=view, break_rank=0)
    assert view.err.getvalue().count(NO_PROMPTS) == 1
