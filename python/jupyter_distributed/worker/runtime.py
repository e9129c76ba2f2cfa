"""What runs inside a rank: its namespace, the cells it executes, and what it reports back.

The main thread takes cells from its own socket (``cellsocket``), executes them and sends their
ends; the control channel's I/O thread delivers interrupts (a real SIGINT to the main thread, so
``time.sleep`` and friends wake up) and sends output, ``report()`` samples and heartbeats.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import linecache
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
import types
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..protocol.commands import Execute, Interrupt, Shutdown
from ..protocol.frames import MAX_MESSAGE, too_large
from ..protocol.header import Message
from ..protocol.metrics import Sample
from ..protocol.reports import Done
from ..protocol.shared import map_shared
from ..protocol.signing import Buffer
from .cudaoom import failure_notes
from .debugger import Debugger, run_under
from .rankenv import RankEnv
from .report import Reporter
from .rich import Displays, guard_stdin

_MAX_REPR = 10_000
MPL_BACKEND = "module://jupyter_distributed.worker.mplbackend"


def make_report(samples: deque[tuple[float, dict[str, Any]]]) -> Callable[..., None]:
    """``report(samples=64, loss=0.3)``: a deque append, no I/O; the I/O thread ships it."""
    append, now = samples.append, time.time

    def report(**metrics: Any) -> None:
        append((now(), metrics))

    return report


def run_cell(code: str, namespace: dict[str, Any], filename: str) -> Any:
    """Execute ``code`` like IPython: the value of a final expression is returned."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename, "exec")
    last: ast.Expression | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body[-1].value)
        tree.body.pop()
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 (the user's cell)
    if last is not None:
        value = eval(compile(last, filename, "eval"), namespace)  # noqa: S307 (the user's cell)
        return None if code.rstrip().endswith(";") else value  # a final ";" hides it, as in IPython
    return None


def format_failure(exc: BaseException) -> list[str]:
    """The traceback from the cell's own code on: without the worker's frames that ran it (as
    IPython shows a cell's traceback without its own)."""
    if isinstance(exc, SyntaxError):
        return traceback.format_exception_only(type(exc), exc)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    ours = str(Path(__file__).parent) + os.sep
    first = next((i for i, f in enumerate(frames) if not f.filename.startswith(ours)), 0)
    frames = frames[first:]  # (an error of the worker's own: every frame but this module's)
    return [
        "Traceback (most recent call last):\n",
        *traceback.format_list(frames),
        *traceback.format_exception_only(type(exc), exc),
    ]


def safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 (a broken __repr__ must not break the rank)
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR] + " …"


class Runtime:
    """Executes commands from the kernel on the main thread."""

    def __init__(self, env: RankEnv, reporter: Reporter) -> None:
        self.env = env
        # a Slurm node's name (two slurmd may share a machine; Slurm's names are what users know)
        self.host = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        self.reporter = reporter
        # How pulled values leave: (buffers, names that could not) for {name: value}; pickles,
        # unless the rank's host says otherwise (a SageMaker rank returns data by default).
        self.encode_pull: Callable[[dict[str, Any]], tuple[Sequence[Buffer], dict[str, str]]]
        self.encode_pull = pickle_values
        self.samples: deque[tuple[float, dict[str, Any]]] = deque()
        self.run_id = ""
        self.gpu_device: int | None = None  # set once a cell has used CUDA (for heartbeats)
        self._executing = False
        self.in_cell = False  # from a cell's command to its end (the I/O thread's pace reads it)
        self.cell_started = 0.0  # (monotonic) when the last cell's command came
        self.debugger: Debugger | None = None  # pdb and input() through the kernel (a channel)
        self._flush_lock = threading.Lock()
        self.flushed = 0.0  # (monotonic) samples last sent
        module = types.ModuleType("__main__", "The namespace of a jupyter-distributed rank")
        sys.modules["__main__"] = module
        self.namespace: dict[str, Any] = module.__dict__
        self.namespace.update(
            rank=env.rank,
            world_size=env.world_size,
            local_rank=env.local_rank,
            node_rank=env.node_rank,
            report=make_report(self.samples),
        )
        if "matplotlib_inline" in os.environ.get("MPLBACKEND", "matplotlib_inline"):
            os.environ["MPLBACKEND"] = MPL_BACKEND  # (the kernel's inline one needs a kernel)
        self.displays = Displays(reporter, env.rank)
        self.displays.watch(self.namespace, module)
        guard_stdin()
        signal.signal(signal.SIGINT, self._on_sigint)

    # -- called on the I/O thread ---------------------------------------------------------

    def on_message(self, message: Message, buffers: list[Buffer]) -> None:
        """A command on the control channel (cells come on the cell socket): an interrupt
        of the running cell."""
        if not (self._executing and isinstance(message, Interrupt)):
            return
        if message.run_id in (None, self.run_id):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def flush_metrics(self, send: Callable[[str, list[Sample]], None] | None = None) -> None:
        """Send the waiting ``report()`` samples (any thread: the I/O thread's look), or hand
        them, none or some, to ``send`` (a line that takes them along, ``worker/report.py``)."""
        with self._flush_lock:
            count, take = len(self.samples), self.samples.popleft
            samples = [take() for _ in range(count)]
            if send is not None:
                send(self.run_id, samples)
            elif samples:
                self.reporter.metrics(self.run_id, samples)
            if samples:
                self.flushed = time.monotonic()

    # -- main thread ----------------------------------------------------------------------

    def _on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        if self._executing:
            raise KeyboardInterrupt

    def serve(
        self,
        sync_output: Callable[[], None],
        receive: Callable[[], tuple[Message, list[Buffer]]],
    ) -> None:
        """Execute cells until told to stop, as ``receive`` (the main thread's own socket, see
        ``cellsocket``) hands them over."""
        while True:
            command, buffers = receive()
            if isinstance(command, Shutdown):
                return
            if isinstance(command, Execute):
                self.execute(command, buffers, sync_output)
            if self.debugger is not None and self.debugger.asker.shutdown:
                return  # (it came while a prompt waited)

    def execute(
        self, command: Execute, buffers: list[Buffer], sync_output: Callable[[], None]
    ) -> None:
        self.run_id = run_id = command.run_id
        self.cell_started = time.monotonic()
        self.in_cell = True
        self.reporter.state(run_id, "running")
        self.displays.begin(run_id, command.display_max, sync_output, command.figures)
        status, value, failure = "ok", None, None
        debugger = self.debugger
        if debugger is not None:
            debugger.begin(run_id, command.stdin, sync_output, forget=not command.debug)
        try:
            if buffers:
                extra = map_shared(command.shared) if command.shared else buffers[1:]
                self.namespace.update(pickle.loads(buffers[0], buffers=extra))  # noqa: S301
            self._executing = True
            try:
                value = run_under(debugger, command, self.env.rank, self._run_cell)
                self.displays.end_cell()
                self.displays.result(value)
            finally:
                self._executing = False
        except BaseException as exc:  # noqa: BLE001 (the user's error, for the notebook)
            stopped = isinstance(exc, KeyboardInterrupt)
            status = "interrupted" if stopped else "error"
            failure = self._failure(exc, "interrupted" if stopped else "exception")
            if debugger is not None and not command.debug:
                debugger.last = exc  # (kept for %distributed debug until the next cell)
        sync_output()
        self._note_gpu()
        self.flush_metrics()
        out_buffers: list[Buffer] = []
        missing: dict[str, str] = {}
        if command.pull:
            out_buffers, missing = self._pull(list(command.pull))
        shown = None if value is None else safe_repr(value)
        done = Done(run_id, status, failure, shown, missing)
        if out_buffers:
            done, out_buffers = self._capped(done, out_buffers, command.max_message)
        self.reporter.done(done, out_buffers)
        self.in_cell = False

    def _run_cell(self, code: str, filename: str) -> Any:
        return run_cell(code, self.namespace, filename)

    def _capped(
        self, done: Done, buffers: list[Buffer], cap: int | None
    ) -> tuple[Done, list[Buffer]]:
        """``done`` with its pulled values, or, where that message would pass the kernel's
        cap, without them and saying why (the kernel would refuse it, and the run with it)."""
        cap = cap or MAX_MESSAGE
        size = sum(memoryview(b).nbytes for b in buffers) + len(json.dumps(done.to_header()))
        if size + 512 <= cap:  # (512: the signature and the header's own fields)
            return done, buffers
        why = too_large("the message of its pulled values", size, cap)
        return dataclasses.replace(done, pull_errors={**done.pull_errors, "*": why}), []

    def _note_gpu(self) -> None:
        cuda = sys.modules.get("torch.cuda")
        if self.gpu_device is None and cuda is not None and cuda.is_initialized():
            self.gpu_device = int(cuda.current_device())

    def _failure(self, exc: BaseException, kind: str) -> dict[str, Any]:
        return {
            "rank": self.env.rank,
            "t": time.time(),
            "host": self.host,
            "pid": os.getpid(),
            "ename": type(exc).__name__,
            "evalue": str(exc),
            "traceback": format_failure(exc),
            "kind": kind,
            **failure_notes(exc),
        }

    def _pull(self, names: list[str]) -> tuple[list[Buffer], dict[str, str]]:
        errors = {
            n: f"name {n!r} is not defined on rank {self.env.rank}"
            for n in names
            if n not in self.namespace
        }
        buffers, unsent = self.encode_pull(
            {n: self.namespace[n] for n in names if n in self.namespace}
        )
        return list(buffers), {**errors, **unsent}


def pickle_values(values: dict[str, Any]) -> tuple[list[Buffer], dict[str, str]]:
    """Pulled values as one pickle (protocol 5, buffers out of band); a value that cannot be
    pickled is left out, with why."""
    import cloudpickle

    errors: dict[str, str] = {}
    buffers: list[pickle.PickleBuffer] = []
    try:
        data = cloudpickle.dumps(values, protocol=5, buffer_callback=buffers.append)
    except Exception:  # noqa: BLE001 (find which value cannot be sent)
        for name in list(values):  # find the culprits, keep the rest
            try:
                cloudpickle.dumps(values[name], protocol=5)
            except Exception as exc:  # noqa: BLE001
                errors[name] = f"cannot send {name!r} back: {type(exc).__name__}: {exc}"
                del values[name]
        buffers = []
        data = cloudpickle.dumps(values, protocol=5, buffer_callback=buffers.append)
    return [data, *(b.raw() for b in buffers)], errors
