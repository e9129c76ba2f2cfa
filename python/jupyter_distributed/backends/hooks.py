"""The typed calls between the kernel (or the Jupyter server) and a backend's hooks.

A plug-in names its hooks as ``"module:function"`` strings (:mod:`.plugin`); loading one checks
that it is callable and gives it the type below, so mypy checks both sides of every call:

- a line command is a :class:`CommandHook`: ``run(args, context)``;
- a follower of detached runs is a :class:`FollowHook`: ``follow(context, run, sleep, poll,
  clients)``, called by the server (:mod:`..server.follower`);
- a doctor is a :class:`DoctorHook`: ``doctor()`` → ``[(ok, text), ...]``.

The :class:`CommandContext` is what the kernel's session (or the server) gives a hook: its
store, and a :class:`RecordRun` that records a run the way every cell's run is recorded (the
session's ``RunRecorder``), so a backend never imports the recorder above it.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..interface import RunOutcome, RunView

if TYPE_CHECKING:
    from ..history.store import RunRecord, Store


class Recording(RunView, Protocol):
    """One run being recorded and shown: the backend's :class:`~..interface.RunView`, and its
    end (``finish``: records the outcome, sets the pulled names in ``user_ns`` and, with
    ``raise_outcome``, raises for a failed or interrupted run)."""

    def finish(
        self,
        outcome: RunOutcome,
        pull: Sequence[str],
        ranks: Sequence[int],
        user_ns: MutableMapping[str, Any] | None,
        *,
        after_interrupt: str,
        raise_outcome: bool,
    ) -> RunOutcome: ...


class RecordRun(Protocol):
    """``record(run)``: record ``run`` (its record written first if the store lacks it) and
    show it where the caller shows runs (under the cell; nowhere for the server)."""

    def __call__(self, run: RunRecord) -> Recording: ...


@dataclass
class CommandContext:
    """What a hook may use: the store (``history.store.Store``), the recording of runs, the
    kernel's namespace (empty for the server) and the backend's configured option defaults
    (:meth:`~.plugin.Plugin.defaults`: ``%config``, config files, environment)."""

    store: Store
    record: RecordRun
    user_ns: dict[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)


class CommandHook(Protocol):
    """``%distributed NAME ARGS``: a returned string is printed."""

    def __call__(self, args: Namespace, context: CommandContext) -> str | None: ...


class FollowHook(Protocol):
    """Follow ``run`` (whose kernel is gone) to its end, recording it through
    ``context.record``; ``sleep`` raises when the server stops; ``clients`` makes the
    backend's service clients (tests), else they come from ``context.defaults``."""

    def __call__(
        self,
        context: CommandContext,
        run: RunRecord,
        sleep: Callable[[float], None],
        poll: float,
        clients: Callable[[], object] | None = None,
    ) -> None: ...


class DoctorHook(Protocol):
    """What this kernel needs to use the backend: ``[(ok, text), ...]``."""

    def __call__(self) -> list[tuple[bool, str]]: ...
