"""What runs inside a rank: its namespace, the cells it executes, and what it reports back.

The main thread executes cells; the channel's I/O thread receives commands, delivers interrupts
(a real SIGINT to the main thread, so ``time.sleep`` and friends wake up) and sends output,
``report()`` samples and heartbeats.
"""

from __future__ import annotations

import ast
import linecache
import os
import pickle
import queue
import signal
import socket
import sys
import threading
import time
import traceback
import types
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .metrics import bad_metric_message, pack_samples
from .protocol import Buffer
from .shared import map_shared

_MAX_REPR = 10_000


@dataclass(frozen=True)
class RankEnv:
    """This rank's identity, from torchrun-style variables or Open MPI's / PMI's."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int

    @classmethod
    def from_environ(cls, environ: dict[str, str] | os._Environ[str] = os.environ) -> RankEnv:
        def first(*names: str, default: str | None = None) -> int:
            for name in names:
                if name in environ:
                    return int(environ[name])
            if default is None:
                raise KeyError(f"none of {', '.join(names)} is set")
            return int(default)

        rank = first("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
        world = first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
        local = first("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", default="0")
        local_size = first(
            "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", default="1"
        )
        # (OMPI_COMM_WORLD_NODE_RANK is not the node's index: it counts ranks on the node)
        node = first("GROUP_RANK", default=str(rank // local_size))
        return cls(rank, world, local, local_size, node)

    def export(self) -> None:
        """Set torchrun's names, so code written for torchrun runs unchanged (under MPI too)."""
        os.environ.update(
            RANK=str(self.rank),
            WORLD_SIZE=str(self.world_size),
            LOCAL_RANK=str(self.local_rank),
            LOCAL_WORLD_SIZE=str(self.local_world_size),
            GROUP_RANK=str(self.node_rank),
            NODE_RANK=str(self.node_rank),
        )


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
        return eval(compile(last, filename, "eval"), namespace)  # noqa: S307 (the user's cell)
    return None


def format_failure(exc: BaseException) -> list[str]:
    """The traceback without this module's own frames."""
    if isinstance(exc, SyntaxError):
        return traceback.format_exception_only(type(exc), exc)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
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

    def __init__(
        self, env: RankEnv, send: Callable[..., None], pickled_metrics: bool = False
    ) -> None:
        """``pickled_metrics``: ship ``report()`` samples as one binary batch (see
        :mod:`.metrics`), for a kernel-side receiver that unpacks them; else as JSON."""
        self.env = env
        self.pickled_metrics = pickled_metrics
        self.host = socket.gethostname()
        self.send = send
        self.commands: queue.SimpleQueue[tuple[dict[str, Any], list[Buffer]]] = queue.SimpleQueue()
        self.samples: deque[tuple[float, dict[str, Any]]] = deque()
        self.run_id = ""
        self.gpu_device: int | None = None  # set once a cell has used CUDA (for heartbeats)
        self._executing = False
        self._flush_lock = threading.Lock()
        self._bad_metric_warned = False
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
        signal.signal(signal.SIGINT, self._on_sigint)

    # -- called on the I/O thread ---------------------------------------------------------

    def on_message(self, header: dict[str, Any], buffers: list[Buffer]) -> None:
        kind = header["type"]
        if kind == "interrupt":
            if self._executing and header.get("run_id") in (None, self.run_id):
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        elif kind in ("execute", "shutdown"):
            self.commands.put((header, buffers))

    def flush_metrics(self) -> None:
        with self._flush_lock:
            if self.pickled_metrics:
                count, take = len(self.samples), self.samples.popleft
                if count:
                    data = pack_samples([take() for _ in range(count)])
                    self.send("metrics", {"run_id": self.run_id, "count": count}, [data])
                return
            batch: list[tuple[float, dict[str, float]]] = []
            while self.samples:
                t, raw = self.samples.popleft()
                values: dict[str, float] = {}
                for key, value in raw.items():
                    try:
                        values[key] = float(value)
                    except (TypeError, ValueError):
                        self._warn_bad_metric(key, value)
                if values:
                    batch.append((t, values))
            if batch:
                self.send("metrics", {"run_id": self.run_id, "samples": batch})

    def _warn_bad_metric(self, key: str, value: Any) -> None:
        if not self._bad_metric_warned:
            self._bad_metric_warned = True
            sys.stderr.write(bad_metric_message(key, value) + "\n")

    # -- main thread ----------------------------------------------------------------------

    def _on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        if self._executing:
            raise KeyboardInterrupt

    def serve(self, sync_output: Callable[[], None]) -> None:
        while True:
            header, buffers = self.commands.get()
            if header["type"] == "shutdown":
                return
            self.execute(header, buffers, sync_output)

    def execute(
        self, header: dict[str, Any], buffers: list[Buffer], sync_output: Callable[[], None]
    ) -> None:
        self.run_id = run_id = str(header["run_id"])
        self.send("state", {"run_id": run_id, "state": "running"})
        status, value, failure = "ok", None, None
        try:
            if buffers:
                extra = map_shared(header["shared"]) if header.get("shared") else buffers[1:]
                self.namespace.update(pickle.loads(buffers[0], buffers=extra))  # noqa: S301
            self._executing = True
            try:
                value = run_cell(str(header["code"]), self.namespace, f"<cell {run_id}>")
            finally:
                self._executing = False
        except KeyboardInterrupt as exc:
            status, failure = "interrupted", self._failure(exc, "interrupted")
        except BaseException as exc:  # noqa: BLE001 (the user's error, for the notebook)
            status, failure = "error", self._failure(exc, "exception")
        sync_output()
        self._note_gpu()
        self.flush_metrics()
        fields: dict[str, Any] = {
            "run_id": run_id,
            "status": status,
            "failure": failure,
            "value": None if value is None else safe_repr(value),
        }
        out_buffers: list[Buffer] = []
        if header.get("pull"):
            pulled, missing = self._pull(list(header["pull"]))
            fields["pull_errors"] = missing
            out_buffers = pulled
        self.send("done", fields, out_buffers)

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
        }

    def _pull(self, names: list[str]) -> tuple[list[Buffer], dict[str, str]]:
        import cloudpickle

        errors = {
            n: f"name {n!r} is not defined on rank {self.env.rank}"
            for n in names
            if n not in self.namespace
        }
        values = {n: self.namespace[n] for n in names if n in self.namespace}
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
