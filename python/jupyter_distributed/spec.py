"""The parallelism settings of a cell: one typed, immutable, validated spec for every backend.

Every rule lives here or in :mod:`.layout` (where the ranks sit, which the workers need too),
checked once in ``__post_init__``; each failure is a :class:`SpecError` whose one-line message
says what to change. Backends receive a spec that is already valid.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import SpecError
from .layout import Layout, jsonable
from .redact import mask_json, redact_env
from .sweeps import Combination, Sweep

# Variables that the runtime sets on every rank; a user's --env must not override them. (The
# rendezvous point, MASTER_ADDR and MASTER_PORT, may be chosen, as torchrun's --master-addr.)
RESERVED_ENV = frozenset(
    {
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
    }
)
RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT")
MAX_TIMEOUT = 365 * 24 * 3600.0
MAX_DISPLAY_MB = 60.0  # largest cap of one rich display: it travels in one frame (protocol.frames)
MAX_TEXT = 10_000  # longest --targets/--push/--pull text
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def identifier(flag: str, name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise SpecError(f"{flag}: {name!r} is not a valid Python variable name")
    return name


@dataclass(frozen=True)
class BackendOptions:
    """Settings that only one backend understands; each backend subclasses this."""

    backend: str = field(default="", init=False)

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> BackendOptions:
        """Build from the flags the cell gave (by field name) over the configured defaults.
        Repeatable flags arrive as lists; a backend overrides this to convert its own."""
        names = {f.name for f in fields(cls) if f.init}
        values = {k: v for k, v in {**defaults, **given}.items() if k in names}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


@dataclass(frozen=True)
class Spec:
    """Everything a ``%%distributed`` cell asked for. Immutable and valid once built."""

    layout: Layout = field(default_factory=Layout)
    backend: str = "local"
    env: tuple[tuple[str, str], ...] = ()
    options: BackendOptions | None = None
    push: tuple[str, ...] = ()
    pull: tuple[str, ...] = ()
    targets: tuple[int, ...] | None = None
    timeout: float | None = None
    display: tuple[int, ...] | None = None  # ranks whose rich displays show (None: all)
    display_max_mb: float = 10.0
    output: tuple[int, ...] | None = None  # ranks whose lines show (None: all)
    collapse: bool = True  # identical lines of several ranks shown once
    sweep: Sweep | None = None  # the cell's sweep axes (the session runs each combination)
    params: Combination = ()  # one combination's values: variables in the ranks' namespace
    relays: str = "auto"  # node relays (Distributed.relays): "auto", "always", "tree", "never"

    def __post_init__(self) -> None:
        if not self.backend:
            raise SpecError("--backend must not be empty")
        if self.relays not in ("auto", "always", "tree", "never"):
            raise SpecError(
                f"Distributed.relays is {self.relays!r}: use 'auto', 'always', 'tree' or 'never'"
            )
        seen: set[str] = set()
        for key, _ in self.env:
            if not _ENV_KEY.match(key):
                raise SpecError(f"--env: {key!r} is not a valid variable name (use K=V)")
            if key in RESERVED_ENV:
                raise SpecError(
                    f"--env {key} is set by jupyter-distributed on every rank; "
                    "change the settings instead"
                )
            if key in seen:
                raise SpecError(f"--env {key} is given twice; keep one")
            seen.add(key)
        for name in self.push:
            identifier("--push", name)
        for name in self.pull:
            identifier("--pull", name)
        if self.options is not None and self.options.backend != self.backend:
            raise SpecError(
                f"options for backend {self.options.backend!r} given with --backend {self.backend}"
            )
        if self.targets is not None:
            if not self.targets:
                raise SpecError("--targets selects no rank")
            bad = [t for t in self.targets if not 0 <= t < self.layout.world_size]
            if bad:
                raise SpecError(
                    f"--targets: rank {bad[0]} does not exist; ranks are "
                    f"0-{self.layout.world_size - 1}"
                )
        if self.output == ():
            raise SpecError("--output selects no rank; give ranks like 0,3, or use --quiet")
        if not 0 < self.display_max_mb <= MAX_DISPLAY_MB:
            raise SpecError(
                f"--display-max-mb must be a positive number up to {MAX_DISPLAY_MB:.0f}, "
                f"got {self.display_max_mb}"
            )
        swept = {n for n, _ in self.params} | set(self.sweep.names if self.sweep else ())
        both = sorted(swept & set(self.push))
        if both:
            raise SpecError(f"--push {both[0]} is also swept; push it or sweep it, not both")
        if self.timeout is not None and not 0 < self.timeout <= MAX_TIMEOUT:
            raise SpecError(
                f"--timeout must be a positive number of seconds up to {MAX_TIMEOUT:.0f}, "
                f"got {self.timeout}"
            )

    @property
    def world_size(self) -> int:
        return self.layout.world_size

    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks this cell runs on."""
        return self.targets if self.targets is not None else _every_rank(self.world_size)

    def cluster_key(self) -> tuple[Any, ...]:
        """Settings that define the cluster: cells with the same key reuse its ranks."""
        return (self.backend, self.layout, self.env, self.options, self.relays)

    def describe_change(self, other: Spec) -> str:
        """Name the cluster settings that differ between ``other`` (old) and ``self`` (new)."""
        changed = [
            f.name
            for f in fields(Layout)
            if getattr(self.layout, f.name) != getattr(other.layout, f.name)
        ]
        if self.backend != other.backend:
            changed.append("backend")
        if self.env != other.env:
            changed.append("env")
        if self.options != other.options:
            changed.append("backend options")
        if self.relays != other.relays:
            changed.append("relays")
        return ", ".join(changed) or "nothing"

    def to_json(self) -> dict[str, Any]:
        """The spec as stored and served; secret-looking ``--env`` values, URL passwords and
        secret ``-x NAME=value`` in MPI options are masked (:mod:`.redact`). Made once per spec
        (it is immutable, and a line's spec serves every run of its cell)."""
        data: dict[str, Any] | None = self.__dict__.get("_json")
        if data is None:
            data = mask_json(jsonable(self))
            data["env"] = [list(pair) for pair in redact_env(self.env)]
            object.__setattr__(self, "_json", data)
        return dict(data)


def parse_targets(text: str, world_size: int) -> tuple[int, ...]:
    """``"0,2-3"`` → ``(0, 2, 3)``; every rank is checked against ``world_size`` before a
    range is expanded, so a huge range costs nothing."""
    out: list[int] = []
    if len(text) > MAX_TEXT:
        raise SpecError(f"--targets is {len(text)} characters long; give ranges like 0-7")
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, dash, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if dash else first
        except ValueError:
            raise SpecError(f"--targets: {part!r} is not a rank or a range like 2-3") from None
        if last < first:
            raise SpecError(f"--targets: range {part!r} is empty; write it low-high")
        if first < 0 or last >= world_size:
            raise SpecError(
                f"--targets: rank {last if first >= 0 else first} does not exist; ranks are "
                f"0-{world_size - 1}"
            )
        out.extend(range(first, last + 1))
    return tuple(dict.fromkeys(out))


def parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``["A=1", "B=x=y"]`` → ``(("A", "1"), ("B", "x=y"))``."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise SpecError(f"--env {item!r} must look like KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)


def parse_names(flag: str, text: str) -> tuple[str, ...]:
    return tuple(identifier(flag, n.strip()) for n in text.split(",") if n.strip())


@functools.lru_cache(maxsize=8)
def _every_rank(world_size: int) -> tuple[int, ...]:
    """``0 .. world_size - 1``, made once per size (a cell asks for its ranks several times)."""
    return tuple(range(world_size))
