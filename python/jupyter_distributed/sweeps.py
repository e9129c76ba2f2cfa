"""``--sweep NAME=v1,v2``: the axes of a parameter sweep, validated once, and their combinations.

A cell with sweeps runs once per combination (the cartesian product of the axes, in the order
given), each run with the combination's values as variables in the ranks' namespace. Values are
Python literals (``1e-3``, ``32``, ``'adam'``, ``True``); anything else is kept as text.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import re
from dataclasses import dataclass
from typing import Any

from .errors import SpecError

Value = int | float | str | bool | None
Combination = tuple[tuple[str, Value], ...]
MAX_COMBINATIONS = 1000  # a typo guard: more runs than anyone means to start from one cell
MAX_DIGITS = 100  # of an integer value: far past any a sweep means, far below what Python prints
_INTEGER = re.compile(r"[+-]?(0[xob][0-9a-f_]+|[0-9_]+)", re.IGNORECASE)


def _too_long(text: str) -> SpecError:
    return SpecError(
        f"--sweep: {text[:20]}... is an integer of {len(text)} characters; at most "
        f"{MAX_DIGITS} digits (quote it to sweep it as text)"
    )


def parse_value(text: str) -> Value:
    """``"1e-3"`` → 0.001, ``"32"`` → 32, ``"'a,b'"``-free text → the text itself."""
    if len(text) > MAX_DIGITS and _INTEGER.fullmatch(text.strip()):
        raise _too_long(text)  # (Python refuses to read or print one of over 4300 digits)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:
        raise _too_long(text)
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return text


@dataclass(frozen=True)
class Sweep:
    """The axes (name, values) of a sweep and how many combinations may run at once (None:
    the backend decides)."""

    axes: tuple[tuple[str, tuple[Value, ...]], ...]
    parallel: int | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for name, values in self.axes:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise SpecError(f"--sweep: {name!r} is not a valid Python variable name")
            if name in seen:
                raise SpecError(f"--sweep {name} is given twice; list all its values in one")
            if not values:
                raise SpecError(f"--sweep {name}= has no values; write {name}=v1,v2")
            if len(set(map(repr, values))) != len(values):
                raise SpecError(f"--sweep {name}: a value is listed twice")
            seen.add(name)
        if not self.axes:
            raise SpecError("--sweep needs at least one NAME=v1,v2")
        if self.size > MAX_COMBINATIONS:
            raise SpecError(
                f"--sweep gives {self.size} combinations; at most {MAX_COMBINATIONS} per cell"
            )
        if self.parallel is not None and (
            isinstance(self.parallel, bool)
            or not isinstance(self.parallel, int)
            or self.parallel < 1
        ):
            raise SpecError(f"--sweep-parallel must be a positive integer, got {self.parallel!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def size(self) -> int:
        n = 1
        for _, values in self.axes:
            n *= len(values)
        return n

    def combinations(self) -> list[Combination]:
        names = self.names
        product = itertools.product(*(values for _, values in self.axes))
        return [tuple(zip(names, combo, strict=True)) for combo in product]

    def to_json(self) -> dict[str, Any]:
        return {"axes": {n: list(v) for n, v in self.axes}, "parallel": self.parallel}


def combination_key(combo: Combination) -> Value | tuple[Value, ...]:
    """How ``--pull`` results are keyed: the value for one axis, else the tuple of values."""
    values = tuple(v for _, v in combo)
    return values[0] if len(values) == 1 else values


def label(combo: Combination) -> str:
    return " ".join(f"{n}={v!r}" for n, v in combo)


def parse_sweep(items: list[str], parallel: int | None) -> Sweep | None:
    """``["lr=1e-3,1e-2", "batch=32,64"]`` → a :class:`Sweep` (None when no ``--sweep``)."""
    if not items:
        if parallel is not None:
            raise SpecError("--sweep-parallel needs --sweep NAME=v1,v2")
        return None
    axes: list[tuple[str, tuple[Value, ...]]] = []
    for item in items:
        name, eq, values = item.partition("=")
        if not eq:
            raise SpecError(f"--sweep {item!r} must look like NAME=v1,v2")
        parts = [p.strip() for p in values.split(",")]
        if any(not p for p in parts):
            raise SpecError(f"--sweep {item!r} has an empty value; write {name.strip()}=v1,v2")
        axes.append((name.strip(), tuple(parse_value(p) for p in parts)))
    return Sweep(tuple(axes), parallel)
