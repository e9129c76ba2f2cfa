"""``--push``: the notebook's values, pickled once for every backend that sends them.

The kernel pickles the pushed names exactly once, before anything is started, so that a value
that cannot be pickled is a one-line error that leaves nothing behind. Backends send the
result as it is: the ZeroMQ channel as frames (or a shared-memory file), SageMaker in the
job's code package.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cloudpickle

from .errors import SpecError


@dataclass(frozen=True)
class Pickled:
    """One pickle (protocol 5) of ``{name: value}`` with its out-of-band buffers."""

    data: bytes
    buffers: tuple[memoryview, ...] = ()

    @property
    def frames(self) -> list[bytes | memoryview]:
        """The pickle then its buffers: how every transport sends them, in this order."""
        return [self.data, *self.buffers]

    @property
    def buffer_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)


def pickle_push(
    names: tuple[str, ...],
    user_ns: Mapping[str, Any],
    extra: tuple[tuple[str, Any], ...] = (),
) -> Pickled | None:
    """Pickle the values of ``names`` (and the ``extra`` pairs, e.g. a sweep's combination);
    None when nothing is pushed. Raises :class:`SpecError` naming the value and the cause when
    a name is undefined or a value cannot be pickled."""
    if not names and not extra:
        return None
    values: dict[str, Any] = dict(extra)
    for name in names:
        if name not in user_ns:
            raise SpecError(f"--push: name {name!r} is not defined in the notebook")
        values[name] = user_ns[name]
    try:
        return _dumps(values)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 (SystemExit too: a __reduce__ may raise it)
        raise _cannot_send(values, exc) from None


def _cannot_send(values: dict[str, Any], error: BaseException) -> SpecError:
    """The error naming the first value that cannot be pickled (only looked for on failure)."""
    name = ", ".join(values)
    for key, value in values.items():
        try:
            _dumps(value)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001
            name, error = key, exc
            break
    return SpecError(f"--push: cannot send {name!r} to the ranks: {type(error).__name__}: {error}")


def _dumps(value: Any) -> Pickled:
    buffers: list[pickle.PickleBuffer] = []
    data = cloudpickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    return Pickled(data, tuple(b.raw() for b in buffers))
