"""Run a ``--sweep`` cell: one run per combination, each on its own cluster, a bounded number
at once (the backend's :meth:`~.interface.Backend.sweep_parallel`), the rest queued.

Every combination is planned (and its values pickled) before anything starts, so bad settings
leave nothing behind. Each combination runs on a worker thread (launch, execute, stop); its
events are relayed to the kernel's main thread, which alone writes under the cell, prefixed
with the combination. A failed combination never stops the others; the cell ends with a table
of every combination, ``--pull`` names set to dicts keyed by the combination, and an error
naming the failed combinations (or a KeyboardInterrupt when the user stopped the sweep).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TextIO, cast

from .backends import get_backend
from .display import CellView
from .errors import interrupted
from .events import Event, RunEvent, RunState
from .figures import kernel_figures
from .history.store import Store
from .interface import Backend, Plan, RunRequest
from .protocol.figures import FigureConfig
from .push import Pickled, pickle_push
from .recorder import NamedView, RunRecorder, new_run_id
from .spec import Spec
from .sweep_outcome import ComboResult, SweepFailed, SweepOutcome
from .sweeps import combination_key, label

Record = Callable[[Spec, Plan, NamedView, str], RunRecorder]


@dataclass(frozen=True)
class SweepHost:
    """What a sweep needs of the kernel's :class:`~.session.Session`, which runs sweeps: its
    store, its interrupt grace and message cap, and its own recording of a run
    (``record(spec, plan, view, sweep_id)``, the session's ``record`` bound to the cell), so
    the sweep records each combination exactly as a cell's run is recorded."""

    store: Store
    interrupt_grace: float
    max_message: int
    record: Record


STOPPED = "interrupted: the sweep was stopped (the stop button)"


class _Prefixed:
    """A text stream that starts every line with a combination's label."""

    def __init__(self, prefix: str, stream: TextIO) -> None:
        self.prefix, self.stream = prefix, stream

    def write(self, text: str) -> int:
        self.stream.write("".join(self.prefix + line for line in text.splitlines(keepends=True)))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


class _Relay:
    """A combination's view on its worker thread: everything is queued for the main thread."""

    def __init__(self, index: int, out: queue.SimpleQueue[tuple[int, str, tuple[Any, ...]]]):
        self.index, self.out, self.run_id = index, out, ""

    def on_event(self, event: Event) -> None:
        self.out.put((self.index, "on_event", (event,)))

    def notice(self, text: str) -> None:
        self.out.put((self.index, "notice", (text,)))

    def flush(self) -> None:
        """The main thread flushes."""

    def finish(self, unrecorded: int = 0) -> None:
        self.out.put((self.index, "finish", (unrecorded,)))


@dataclass
class _Combo:
    spec: Spec
    plan: Plan
    push: Pickled | None
    relay: _Relay
    result: ComboResult
    figures: FigureConfig | None = None


def run_sweep(
    session: SweepHost,
    spec: Spec,
    code: str,
    user_ns: dict[str, Any],
    quiet: bool = False,
) -> SweepOutcome:
    assert spec.sweep is not None  # noqa: S101 (the caller checks)
    backend = get_backend(spec.backend)
    parallel = backend.sweep_parallel(spec)
    relayed: queue.SimpleQueue[tuple[int, str, tuple[Any, ...]]] = queue.SimpleQueue()
    combos: list[_Combo] = []
    views: list[CellView] = []
    figures = kernel_figures()  # (read here, on the kernel's main thread)
    for i, combo in enumerate(spec.sweep.combinations()):
        one = replace(spec, sweep=None, params=combo)
        plan = backend.plan(one)
        push = pickle_push(one.push, user_ns, combo)
        combos.append(_Combo(one, plan, push, _Relay(i, relayed), ComboResult(combo), figures))
        prefix = f"[{label(combo)}] "
        out = cast(TextIO, _Prefixed(prefix, sys.stdout))
        err = cast(TextIO, _Prefixed(prefix, sys.stderr))
        views.append(
            CellView(
                out=out,
                err=err,
                quiet=quiet,
                display_ranks=spec.display,
                output_ranks=spec.output,
                collapse=spec.collapse,
                ranks=one.ranks,
            )
        )
    outcome = SweepOutcome(f"sweep-{new_run_id()}", parallel, [c.result for c in combos])
    sys.stderr.write(
        f"[jupyter-distributed] {outcome.sweep_id}: {len(combos)} combination(s) of "
        f"{', '.join(spec.sweep.names)}, {parallel} at a time on --backend {spec.backend}\n"
    )
    sys.stderr.flush()
    cancel = threading.Event()
    stopped = False
    line = _ProgressLine(CellView(outcome.sweep_id, quiet=quiet), outcome.results)
    with ThreadPoolExecutor(parallel, thread_name_prefix="jd-sweep") as pool:
        futures = [
            pool.submit(_run_one, session, backend, c, code, outcome.sweep_id, cancel)
            for c in combos
        ]
        try:
            try:
                _pump(relayed, views, futures, line.update)
            except KeyboardInterrupt:
                stopped = True
                cancel.set()
                for f in futures:
                    f.cancel()
                for c in combos:
                    if c.result.state is RunState.RUNNING and c.result.run_id:
                        session.store.request_control(c.result.run_id, "cancel")
                _pump(relayed, views, futures, line.update)
        finally:
            line.view.starting("")  # gone before the table
    for c in combos:
        if c.result.state is RunState.PENDING:
            c.result.state, c.result.message = RunState.INTERRUPTED, "not started"
        elif stopped and c.result.state is RunState.INTERRUPTED and c.result.run_id:
            # its ranks were interrupted through the cancel request; say who asked
            c.result.message = STOPPED
            session.store.append([RunEvent(c.result.run_id, time.time(), c.result.state, STOPPED)])
    for name in spec.pull:
        user_ns[name] = {
            combination_key(r.combo): r.pulled[name] for r in outcome.results if name in r.pulled
        }
    sys.stdout.write(outcome.table() + "\n")
    sys.stdout.flush()
    if stopped:
        raise interrupted(f"{outcome.sweep_id} was interrupted; unstarted combinations skipped")
    failed = [r for r in outcome.results if r.state is not RunState.COMPLETED]
    if failed:
        names = "; ".join(f"{label(r.combo)} ({r.run_id or 'not started'})" for r in failed)
        raise SweepFailed(
            f"{len(failed)} of {len(outcome.results)} combination(s) failed: {names}; "
            f"the others completed (%distributed logs RUN shows a run's output)"
        )
    return outcome


class _ProgressLine:
    """One live line under the cell while the sweep runs: the combination(s) running and
    their place in the sweep ("sweep: lr=0.1 bs=32 · 2 of 6"), redrawn in place as the cluster
    start-up line is (:meth:`.CellView.starting`), emptied when the sweep ends."""

    def __init__(self, view: CellView, results: list[ComboResult]) -> None:
        self.view, self.results, self.shown = view, results, ""

    def text(self) -> str:
        running = [i for i, r in enumerate(self.results) if r.state is RunState.RUNNING]
        if not running:
            return ""
        names = " | ".join(label(self.results[i].combo) for i in running)
        places = ", ".join(str(i + 1) for i in running)
        return f"sweep: {names} · {places} of {len(self.results)}"

    def update(self) -> None:
        text = self.text()
        if text and text != self.shown:  # (between two combinations: the last one stays)
            self.view.starting(text)
            self.shown = text


def _pump(
    relayed: queue.SimpleQueue[tuple[int, str, tuple[Any, ...]]],
    views: list[CellView],
    futures: list[Future[None]],
    tick: Callable[[], None] = lambda: None,
) -> None:
    """Show the combinations' events on this (the main) thread until every one is done;
    ``tick`` redraws the sweep's progress line."""
    while True:
        tick()
        try:
            index, method, args = relayed.get(timeout=0.05)
        except queue.Empty:
            for view in views:
                view.maybe_flush()
            if all(f.done() for f in futures):
                break
            continue
        getattr(views[index], method)(*args)
    while True:
        try:
            index, method, args = relayed.get_nowait()
        except queue.Empty:
            break
        getattr(views[index], method)(*args)
    for view in views:
        view.flush()


def _run_one(
    session: SweepHost,
    backend: Backend,
    combo: _Combo,
    code: str,
    sweep_id: str,
    cancel: threading.Event,
) -> None:
    """One combination, start to end, on a worker thread; its result says how it went."""
    result = combo.result
    if cancel.is_set():
        return
    began = time.monotonic()
    recorder = session.record(combo.spec, combo.plan, combo.relay, sweep_id)
    result.run_id, result.state = recorder.run_id, RunState.RUNNING
    cluster = None
    doing = "starting the cluster"
    spec = combo.spec
    try:
        cluster = backend.launch(combo.plan, session.store, recorder)
        recorder.launched(cluster)
        if cancel.is_set():
            raise KeyboardInterrupt
        doing = "running the cell"
        request = RunRequest(
            recorder.run_id, code, spec.ranks, combo.push, spec.pull, spec.timeout,
            display_max=int(spec.display_max_mb * 2**20), figures=combo.figures,
            interrupt_grace=session.interrupt_grace, max_message=session.max_message,
        )  # fmt: skip
        run = cluster.execute(request, recorder)
        pulled: dict[str, Any] = {}
        recorder.finish(run, spec.pull, spec.ranks, pulled, raise_outcome=False)
        result.pulled = {name: pulled[name] for name in spec.pull if name in pulled}
    except BaseException as exc:  # noqa: BLE001 (recorded as this combination's failure)
        recorder.abort(exc, doing)
    finally:
        if cluster is not None:
            cluster.stop()
        result.seconds = time.monotonic() - began
        record = session.store.run(recorder.run_id)
        if record is not None:
            result.state, result.message = record.state, record.message
