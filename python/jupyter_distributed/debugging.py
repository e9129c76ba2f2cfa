"""``%distributed debug [--rank R]``: pdb on a rank's last exception, in the live rank, as
IPython's ``%debug`` does for a local cell; and whether the notebook answers input at all.

The rank keeps its last exception (with its frames and their locals) until its next cell
starts (``worker/debugger.py``). The default rank is the root cause of the last cell that
failed (its earliest failure). pdb runs as a short run of its own on that rank alone (its
transcript is kept in the history like a cell's output): its prompts come through the kernel's
stdin channel (``cluster/prompts.py``).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from .display import CellView
from .interface import NO_PROMPTS, RunRequest
from .session import Session

NO_STDIN = "this front-end answers no input requests (stdin), so pdb cannot prompt"


def notebook_stdin() -> bool:
    """Whether the notebook running this cell answers input requests (JupyterLab does;
    nbclient and other front-ends that set ``allow_stdin`` false do not)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    return bool(getattr(kernel, "_allow_stdin", False))


def debug(session: Session, rank: int | None, user_ns: MutableMapping[str, Any]) -> str:
    """Open pdb on ``rank``'s last exception (default: the root cause's rank); returns what
    to say when it cannot (one line), "" once pdb is left."""
    last = session.last_failed
    if last is None or not last[2]:
        return "no cell failed on the ranks in this kernel: there is no exception to debug"
    backend, run_id, failures = last
    live = session.live.get(backend)
    if live is None or not live.cluster.alive:
        return (
            f"the cluster of run {run_id} is gone, and its ranks' frames with it; the history "
            f"still has their tracebacks and output (%distributed logs {run_id})"
        )
    if not live.cluster.interactive:
        return NO_PROMPTS
    root = min(failures, key=lambda f: (f.t, f.rank)).rank
    rank = root if rank is None else rank
    if rank not in live.spec.ranks:
        ranks = ", ".join(map(str, live.spec.ranks))
        return f"rank {rank} is not one of run {run_id}'s ranks ({ranks})"
    if not notebook_stdin():
        return NO_STDIN
    cluster, code = live.cluster, f"%distributed debug --rank {rank}"
    view = CellView()
    recorder = session.record(
        live.spec, code, cluster.plan, view, cluster=cluster, deferred=cluster.defers_record
    )
    request = RunRequest(
        recorder.run_id, code, (rank,), interrupt_grace=session.interrupt_grace,
        max_message=session.max_message, record=recorder.deferred, stdin=True, debug=True,
    )  # fmt: skip
    try:
        outcome = cluster.execute(request, recorder)
    except BaseException as exc:
        recorder.abort(exc, "debugging")
        raise
    recorder.finish(outcome, (), (rank,), user_ns, after_interrupt="the ranks keep their variables")
    return ""
