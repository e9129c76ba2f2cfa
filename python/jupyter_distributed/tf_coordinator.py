"""The kernel as TensorFlow's coordinator (``--strategy parameter-server --framework tensorflow``).

The ranks start their ``tf.distribute.Server`` before the first cell (see the worker's
``param_server``) and keep ``tf_cluster``, the cluster spec, in their namespace. The first cell
on a new cluster pulls it from the ranks; the kernel then connects to the servers as ``chief``
and gives the notebook ``strategy`` (a ``ParameterServerStrategy``) and ``coordinator`` (a
``ClusterCoordinator``), as TensorFlow's tutorial runs the coordinator in a notebook. A name the
notebook already holds is not overwritten: the objects go under another name, said in one line.

Before the cluster's ranks are stopped the coordinator is closed: its names and the notebook's
values that live on the servers leave the notebook and are freed while the servers still serve,
so no gRPC "Connection refused" floods the notebook afterwards. (TensorFlow has no public way
to disconnect; resetting its eager context crashes the kernel on the next use of a variable
made under the strategy.) TensorFlow is imported only here, and only once a cluster asks for it.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Protocol

from .layout import Layout, Strategy

PULL_NAME = "tf_cluster"  # the cluster spec in every rank's namespace
NAMES = ("strategy", "coordinator")
FIT_ISSUE = (
    "Keras 3 does not support model.fit under ParameterServerStrategy (keras issue 18624): "
    "train with the custom loop (coordinator.schedule(step), coordinator.join()), or install "
    "tf-keras and set TF_USE_LEGACY_KERAS=1 before importing TensorFlow"
)
_FIT_MARK = "ClusterCoordinator.create_per_worker_dataset"  # Keras 3's ValueError under fit


def coordinates(layout: Layout) -> bool:
    """Whether the kernel coordinates this layout's ranks."""
    return layout.strategy is Strategy.PARAMETER_SERVER and layout.uses_tensorflow


def tasks_lost(layout: Layout, ranks: Iterable[tuple[int, str]]) -> str:
    """The TensorFlow tasks among ``(rank, state)`` that died, named, e.g. ``; worker 1 (rank
    2) is gone``; empty when none did."""
    servers = layout.parameter_servers
    dead = [
        f"ps {r} (rank {r})" if r < servers else f"worker {r - servers} (rank {r})"
        for r, state in ranks
        if state in ("failed", "exited")
    ]
    if not dead:
        return ""
    return f"; TensorFlow's {', '.join(dead)} {'is' if len(dead) == 1 else 'are'} gone"


def free_name(name: str, user_ns: MutableMapping[str, Any]) -> str:
    """``name``, or ``name_2``, ``name_3``... the first the notebook does not hold."""
    candidate, n = name, 1
    while candidate in user_ns:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


class Coordinator:
    """The kernel's connection to one cluster's TensorFlow servers."""

    def __init__(self, cluster: dict[str, list[str]]) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # no INFO banners under the cell
        import tensorflow as tf

        self.cluster = cluster
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type="chief", task_id=0, rpc_layer="grpc"
        )
        self.strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(self.strategy)
        self.bound: dict[str, str] = {}  # our object's role -> the notebook's name for it

    def objects(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "coordinator": self.coordinator}

    def bind(self, user_ns: MutableMapping[str, Any]) -> str:
        """Set ``strategy`` and ``coordinator`` in the notebook (never over a name it holds
        for something else); returns the line that says so."""
        objects = self.objects()
        names = {}
        for role in NAMES:
            mine = role not in user_ns or user_ns[role] is objects[role]
            names[role] = role if mine else free_name(role, user_ns)
            user_ns[names[role]] = objects[role]
        self.bound = names
        servers, workers = len(self.cluster.get("ps", [])), len(self.cluster.get("worker", []))
        what = f"ParameterServerStrategy over {servers} ps and {workers} workers"
        taken = [role for role in NAMES if names[role] != role]
        if taken:
            used = ", ".join(f"{names[r]} (not {r}: the notebook holds one)" for r in taken)
            return f"TensorFlow: {what}, the kernel as coordinator; names used: {used}"
        return f"TensorFlow: {what}; the kernel coordinates: strategy, coordinator"

    def close(self, user_ns: MutableMapping[str, Any]) -> str:
        """Let go of the servers while they still serve: our names and the notebook's values
        that live on them (variables on ``/job:ps``, per-worker datasets and iterators, remote
        values) leave the notebook and are freed, and the closure threads end, so nothing
        calls a stopped server afterwards (each call would log gRPC errors under the cell).
        Returns the line naming the notebook's values that went ("" when none did)."""
        objects = self.objects()
        for role, name in self.bound.items():
            if user_ns.get(name) is objects[role]:
                del user_ns[name]
        gone = sorted(
            name
            for name, value in list(user_ns.items())
            if not name.startswith("_") and _remote(value)
        )
        for name in gone:
            del user_ns[name]
        log = logging.getLogger("tensorflow")  # its INFO lines of each stopping step
        level = log.level
        log.setLevel(logging.WARNING)
        try:
            stop = getattr(getattr(self.coordinator, "_cluster", None), "stop", None)
            if callable(stop):
                stop()
            del objects
            self.strategy = self.coordinator = None
            gc.collect()  # their remote handles are freed now, while the servers still serve
        finally:
            log.setLevel(level)
        if not gone:
            return ""
        return f"TensorFlow: {', '.join(gone)} lived on the stopped cluster and left the notebook"


def _remote(value: Any) -> bool:
    """Whether ``value`` lives on the cluster's servers (and is useless once they stop)."""
    device = getattr(value, "device", None) if _from_tensorflow(value) else None
    if isinstance(device, str) and device.startswith(("/job:ps", "/job:worker")):
        return True
    return type(value).__module__.startswith("tensorflow.python.distribute.coordinator")


def _from_tensorflow(value: Any) -> bool:
    return type(value).__module__.startswith(("tensorflow.", "keras."))


class Coordinators:
    """The kernel's coordinator of each backend's live cluster, with the namespace it was
    given to."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[Coordinator, MutableMapping[str, Any]]] = {}

    def __contains__(self, backend: str) -> bool:
        return backend in self.held

    def connect(
        self,
        backend: str,
        pulled: Mapping[int, Mapping[str, Any]],
        user_ns: MutableMapping[str, Any],
        view: Notices,
    ) -> None:
        """Connect to the servers named by the ranks' ``tf_cluster`` (pulled after a cell)."""
        specs = [values[PULL_NAME] for values in pulled.values() if PULL_NAME in values]
        if not specs:
            return  # the cell did not finish on any rank: the next one tries again
        try:
            coordinator = Coordinator(specs[0])
        except ImportError:
            view.notice("--framework tensorflow: TensorFlow is not installed in the kernel")
            return
        except Exception as exc:  # noqa: BLE001 (TensorFlow's own errors, in one line)
            first = str(exc).strip().splitlines()[:1]
            view.notice(f"the kernel could not coordinate: {type(exc).__name__}: {''.join(first)}")
            return
        self.held[backend] = (coordinator, user_ns)
        fit_hint()
        view.notice(coordinator.bind(user_ns))

    def bind_again(self, user_ns: MutableMapping[str, Any]) -> str:
        """``%distributed tf-strategy``: the coordinator's names in the notebook again."""
        if not self.held:
            return (
                "no TensorFlow coordinator: run a cell with --strategy parameter-server "
                "--framework tensorflow first"
            )
        return "\n".join(c.bind(user_ns) for c, _ in self.held.values())

    def close(self, backend: str, view: Notices) -> None:
        held = self.held.pop(backend, None)
        if held is not None:
            said = held[0].close(held[1])
            if said:
                view.notice(said)


class Notices(Protocol):
    def notice(self, text: str) -> None: ...


def fit_hint() -> None:
    """Keras 3's ``model.fit`` under the strategy fails deep in Keras: show it as one line
    naming the custom loop (other errors show as ever). Left alone outside IPython or when the
    shell already has its own handler for exceptions."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or shell.custom_exceptions:
        return

    def handler(
        self: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
    ) -> list[str]:
        """Called in IPython's ``except``: shows the error itself (IPython does not)."""
        if _FIT_MARK in str(value) and _through_keras(tb):
            stb = [f"{etype.__name__}: {FIT_ISSUE}"]
            self._showtraceback(etype, FIT_ISSUE, stb)
            return stb
        self.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
        return []

    shell.set_custom_exc((ValueError,), handler)


def _through_keras(tb: Any) -> bool:
    """Whether the traceback passes through Keras (which filters its own frames out of it,
    leaving its error handler)."""
    while tb is not None:
        if f"{os.sep}keras{os.sep}" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False
