"""What a backend declares about itself, in its own folder: ``PLUGIN = Plugin(...)``.

A backend is one module (or folder) plus one line in :mod:`jupyter_distributed.backends`'s
registry. It declares:

- ``options``: a frozen :class:`~jupyter_distributed.spec.BackendOptions` dataclass. Each field
  made with :func:`option` is a ``%%distributed`` flag (``--instance-type`` for
  ``instance_type``; its type gives the argparse type, a ``bool`` is a switch); other fields are
  set from configuration only. Flags of one backend given with another are refused.
- ``settings``: a :class:`~jupyter_distributed.settings.Settings` (traitlets) subclass. A trait
  named like an options field is that field's default; users set it with ``%config``,
  ``ipython_config.py``, or ``{env_prefix}{NAME}`` environment variables.
- ``commands``: ``%distributed NAME ...`` line commands (:class:`LineCommand`).
- ``follow``: ``"module:function"`` that follows a run whose kernel is gone, called by the server
  as a :class:`~.hooks.FollowHook`: ``function(context, run, sleep, poll, clients)``.
- ``doctor``: ``"module:function"`` returning ``[(ok, text), ...]``: what this kernel needs to
  use the backend, each missing thing saying what to do (``%distributed doctor --backend NAME``).

``backend`` and the hooks are ``"module:attribute"`` strings, imported only when used, so the
plugin module itself stays light (no boto3, no mpi4py). Loading a hook checks that it is
callable and gives it its type from :mod:`.hooks`, so mypy checks the calls on both sides.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin, get_type_hints

from ..errors import SpecError
from ..settings import Settings
from ..spec import BackendOptions

if TYPE_CHECKING:  # the hooks' types bring the backend interface; flags need none of it
    from ..interface import Backend
    from .hooks import CommandHook, DoctorHook, FollowHook


def option(
    default: Any,
    help: str,
    *,
    metavar: str | None = None,
    flag: str = "",
    repeat: bool | None = None,
) -> Any:
    """A field of a backend's options that is also a ``%%distributed`` flag.

    ``flag`` defaults to the field name with dashes (``max_wait`` → ``--max-wait``). A ``bool``
    field defaulting to False is a switch; one defaulting to True needs ``flag="--no-..."``. A
    ``tuple`` field is repeatable (unless ``repeat=False``: then ``from_flags`` parses the one
    string) and receives the list of values given."""
    meta = {"help": help, "metavar": metavar, "flag": flag, "repeat": repeat}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Flag:
    """One generated flag: ``dest`` is the options field it sets."""

    dest: str
    flag: str
    help: str
    metavar: str | None
    kind: type
    repeat: bool
    default: Any


def _kind(hint: Any) -> tuple[type, bool]:
    """``(scalar type, repeatable)`` of an options field's annotation."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        hint = next(a for a in get_args(hint) if a is not type(None))
        origin = get_origin(hint)
    if origin is tuple:
        return str, True
    return (hint if hint in (bool, int, float) else str), False


_FLAGS: dict[type[BackendOptions], tuple[Flag, ...]] = {}


def flags_of(options: type[BackendOptions]) -> list[Flag]:
    """The flags of an options class (kept: every cell asks, and the answer never changes)."""
    if options not in _FLAGS:
        _FLAGS[options] = _flags_of(options)
    return list(_FLAGS[options])


def _flags_of(options: type[BackendOptions]) -> tuple[Flag, ...]:
    hints = get_type_hints(options)
    out = []
    for f in fields(options):
        if "help" not in f.metadata:
            continue
        kind, repeat = _kind(hints[f.name])
        if f.metadata["repeat"] is not None:
            repeat = f.metadata["repeat"]
        name = f.metadata["flag"] or "--" + f.name.replace("_", "-")
        meta = f.metadata
        out.append(Flag(f.name, name, meta["help"], meta["metavar"], kind, repeat, f.default))
    return tuple(out)


@dataclass(frozen=True)
class LineCommand:
    """``%distributed NAME ARGS``: ``arguments`` are argparse ``add_argument`` calls as
    ``(names, keywords)``; ``run`` is ``"module:function"``, a :class:`~.hooks.CommandHook`
    called as ``function(args, context)`` with a :class:`~.hooks.CommandContext`; a returned
    string is printed."""

    name: str
    usage: str
    help: str
    run: str
    arguments: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()

    def hook(self) -> CommandHook:
        return cast("CommandHook", load(self.run))


@dataclass(frozen=True)
class Plugin:
    name: str
    title: str  # the heading of its flags in %%distributed?
    backend: str  # "module:Class"
    options: type[BackendOptions] | None = None
    settings: type[Settings] | None = None
    commands: tuple[LineCommand, ...] = ()
    follow: str | None = None
    doctor: str | None = None

    def flags(self) -> list[Flag]:
        return flags_of(self.options) if self.options is not None else []

    def defaults(self, settings: Settings | None) -> dict[str, Any]:
        """The options fields that ``settings`` (the configured traits) give a default to."""
        if settings is None or self.options is None:
            return {}
        names = {f.name for f in fields(self.options) if f.init}
        return {n: getattr(settings, n) for n in settings.trait_names(config=True) if n in names}

    def backend_class(self) -> type[Backend]:
        return cast("type[Backend]", load(self.backend))

    def follow_hook(self) -> FollowHook | None:
        return cast("FollowHook", load(self.follow)) if self.follow else None

    def doctor_hook(self) -> DoctorHook | None:
        return cast("DoctorHook", load(self.doctor)) if self.doctor else None


def load(target: str) -> object:
    """Import ``"module:attribute"``, which must be callable (a hook, a Backend class); the
    :class:`Plugin`'s methods give it its type."""
    module, _, attr = target.partition(":")
    found: object = getattr(importlib.import_module(module), attr)
    if not callable(found):
        raise SpecError(f"{target} is not callable: a plug-in's hook must be a function")
    return found


def doctor(p: Plugin) -> str:
    """``%distributed doctor --backend NAME``: the plugin's checks, one line each, and a verdict."""
    hook = p.doctor_hook()
    checks = hook() if hook is not None else []
    lines = [f"{'ok     ' if ok else 'MISSING'} {text}" for ok, text in checks]
    missing = sum(not ok for ok, _ in checks)
    lines.append(f"--backend {p.name}: " + (f"{missing} thing(s) missing" if missing else "ready"))
    return "\n".join(lines)
