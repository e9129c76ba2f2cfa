"""What every kernel↔rank message shares: its header form and the checked way back (stdlib only).

A message travels as a signed header (:mod:`.signing`) plus optional buffers. ``to_header``
gives the header's fields, with the message's ``kind`` as ``type``; ``from_header`` reads them
back or raises :class:`BadHeader`. The messages themselves are in :mod:`.commands` (kernel →
rank) and :mod:`.reports` (rank → kernel); :mod:`.messages` knows them all and parses headers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar


class BadHeader(ValueError):
    """A verified header that does not describe a valid message (a bug, or an old rank)."""


@dataclass(frozen=True)
class Message:
    """A message; subclasses set ``kind``, declare their fields and read them in ``_read``."""

    kind: ClassVar[str] = ""

    def to_header(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_header(cls: type[M], header: dict[str, Any]) -> M:
        """The message of a header; raises :class:`BadHeader` when a field is missing or of
        the wrong type."""
        try:
            return cls._read(header)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadHeader(f"a {cls.kind!r} message with a bad header: {exc!r}") from None

    @classmethod
    def _read(cls: type[M], h: dict[str, Any]) -> M:
        return cls()


M = TypeVar("M", bound=Message)


def opt(convert: Callable[[Any], Any], value: Any) -> Any:
    """``convert(value)``, or None for a field the header left out."""
    return None if value is None else convert(value)
