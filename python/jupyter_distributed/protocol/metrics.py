"""``report()`` samples on their way from a rank to the kernel, in a compact binary batch.

A rank that calls ``report()`` in a tight loop shares its interpreter lock with the I/O thread
that ships the samples, so every microsecond spent per sample there is a microsecond added to
``report()``. The rank therefore sends each batch as one pickle, made at C speed: plain numbers,
strings, dicts and tuples pickle natively, anything else (a NumPy or torch scalar) is turned into
a float, or, if it is not a number, into its repr. The kernel loads the batch with an unpickler
that refuses every global but ``float`` and ``str``, and does the per-value checks there.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

Sample = tuple[float, dict[str, Any]]
_ALLOWED = {("builtins", "float"): float, ("builtins", "str"): str}


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        """Called only for values that are not plain Python objects (and for the classes
        ``float`` and ``str`` of our own reductions, which pickle as usual)."""
        if obj is float or obj is str:
            return NotImplemented
        try:
            return float, (float(obj),)
        except (TypeError, ValueError):
            return str, (repr(obj)[:200],)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[module, name]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in metrics") from None


def pack_samples(samples: list[Sample]) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=5).dump(samples)
    return out.getvalue()


def unpack_samples(data: bytes | memoryview) -> list[Sample]:
    """The samples of a batch; raises ``pickle.UnpicklingError`` for anything else."""
    loaded = _Unpickler(io.BytesIO(data)).load()
    if not isinstance(loaded, list):
        raise pickle.UnpicklingError("a metrics batch must be a list")
    return loaded


def numeric(raw: dict[str, Any]) -> tuple[dict[str, float], list[tuple[str, Any]]]:
    """The values that are numbers, and the (name, value) pairs that are not."""
    values: dict[str, float] = {}
    bad: list[tuple[str, Any]] = []
    for key, value in raw.items():
        try:
            values[str(key)] = float(value)
        except (TypeError, ValueError):
            bad.append((key, value))
    return values, bad


def bad_metric_message(key: str, value: Any) -> str:
    return f"report(): {key}={value!r} is not a number; such values are skipped"
