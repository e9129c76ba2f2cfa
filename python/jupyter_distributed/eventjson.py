"""The one JSON codec of the event classes (:mod:`.events`): an event's dict, and its text
written as ``json.dumps`` writes it without an encoder made per call (the store's hot path)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from enum import Enum
from typing import Any, ClassVar, cast


class JsonEvent:
    """The one codec of the event classes: ``{"kind": ..., <fields>..., <json_extras>...}``.

    A field's value is written as it is, except an enum (its value), an object with
    ``to_json`` (its JSON) and a dict with integer keys (string keys, as JSON has them).
    ``json_extras`` names properties the JSON carries beside the fields."""

    kind: ClassVar[str]
    json_extras: ClassVar[tuple[str, ...]] = ()
    _names: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._names = ()  # filled on first use: the dataclass decorator runs after this hook

    def to_json(self) -> dict[str, Any]:
        cls = type(self)
        if not cls._names:
            cls._names = (*(f.name for f in fields(cast(Any, cls))), *cls.json_extras)
        out: dict[str, Any] = {"kind": cls.kind}
        for name in cls._names:
            value = getattr(self, name)
            out[name] = value if type(value) in _AS_IS else _plain(value)
        return out

    def to_json_text(self) -> str:
        """``json.dumps(self.to_json())``, the same text (the store's hot path: a cell's end
        is 2 such events per rank)."""
        return _dumps(self.to_json())


def _encoder() -> Callable[[Any], str]:
    """``json.dumps`` with its defaults, without making an encoder per call (where the C
    encoder is missing: ``json.dumps`` itself)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.dumps
    ascii_text, default = json.encoder.encode_basestring_ascii, json.JSONEncoder().default
    encode = make(None, default, ascii_text, None, ": ", ", ", False, False, True)
    return lambda value: "".join(encode(value, 0))


_dumps = _encoder()
_AS_IS = frozenset((str, int, float, bool, type(None)))  # (no enum, no dict: _plain's as is)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict) and any(isinstance(k, int) for k in value):
        return {str(k): v for k, v in value.items()}
    return value
