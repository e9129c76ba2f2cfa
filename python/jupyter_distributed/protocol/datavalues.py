"""Pulled values as data, never code: how a SageMaker rank returns ``--pull`` values by default.

Reading them runs no code, whoever wrote the bytes (unlike a pickle): the first frame is JSON,
the others are blobs it points at. A value is one of:

- ``None``, a bool, int, float or str, as itself;
- ``{"list"|"tuple"|"set"|"frozenset": [values]}``, ``{"dict": [[key, value], ...]}``,
  ``{"complex": [re, im]}``;
- ``{"bytes": i}``: blob ``i``;
- ``{"ndarray": i}`` / ``{"npscalar": i}``: blob ``i`` in NumPy's ``.npy`` format, read with
  ``allow_pickle=False`` (no object arrays);
- ``{"tensor": i}``: blob ``i`` from ``torch.save``, read with ``torch.load(weights_only=True)``.

Anything else cannot be sent this way: :func:`encode` names it, and the user may opt into
pickles (``--trust-pickle``). Standard library only; NumPy and torch are imported only when a
value is one of theirs.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

FORMAT = "data"  # the rank's header field ``pull_format`` for this encoding ("pickle" else)
_SEQUENCES: dict[str, type] = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


class NotData(ValueError):
    """A value this format cannot hold, or bytes that are not this format."""


def encode(values: Mapping[str, Any]) -> tuple[list[bytes], dict[str, str]]:
    """``(frames, errors)``: each name's value as data; a name whose value is not data (a
    function, an object of the cell's class, an object array) is left out, with why."""
    blobs: list[bytes] = []
    tree: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, value in values.items():
        start = len(blobs)
        try:
            tree[name] = _encode(value, blobs, 0)
        except (NotData, RecursionError) as exc:
            del blobs[start:]
            errors[name] = (
                f"cannot send {name!r} back as data ({exc}); pull JSON-like values, NumPy "
                "arrays or torch tensors, or opt into pickles with --trust-pickle"
            )
    return [json.dumps(tree).encode(), *blobs], errors


def _encode(value: Any, blobs: list[bytes], depth: int) -> Any:
    if depth > 100:
        raise NotData("nested more than 100 deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    items: Any = value  # (iterable when its type is one of the sequences)
    for tag, kind in _SEQUENCES.items():
        if type(value) is kind:
            return {tag: [_encode(v, blobs, depth + 1) for v in items]}
    if type(value) is dict:
        pairs = [
            [_encode(k, blobs, depth + 1), _encode(v, blobs, depth + 1)] for k, v in value.items()
        ]
        return {"dict": pairs}
    if type(value) is complex:
        return {"complex": [value.real, value.imag]}
    if type(value) in (bytes, bytearray):
        blobs.append(bytes(value))
        return {"bytes": len(blobs) - 1}
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if numpy is not None and isinstance(value, numpy.ndarray | numpy.generic):
        if value.dtype.hasobject:
            raise NotData(f"a NumPy array of dtype {value.dtype} holds Python objects")
        out = io.BytesIO()
        numpy.save(out, value, allow_pickle=False)
        blobs.append(out.getvalue())
        return {"ndarray" if isinstance(value, numpy.ndarray) else "npscalar": len(blobs) - 1}
    if torch is not None and isinstance(value, torch.Tensor):
        out = io.BytesIO()
        torch.save(value.detach(), out)
        blobs.append(out.getvalue())
        return {"tensor": len(blobs) - 1}
    raise NotData(f"{type(value).__module__}.{type(value).__qualname__} is not data")


def decode(frames: Sequence[bytes]) -> dict[str, Any]:
    """The values :func:`encode` wrote; raises :class:`NotData` (one line) for anything else.
    Runs no code from the bytes."""
    if not frames:
        return {}
    try:
        tree = json.loads(frames[0])
        if not isinstance(tree, dict):
            raise NotData("the values are not a JSON object")
        return {str(name): _decode(value, frames) for name, value in tree.items()}
    except NotData:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise NotData(f"unreadable: {type(exc).__name__}") from None


def _decode(node: Any, frames: Sequence[bytes]) -> Any:
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is not dict or len(node) != 1:
        raise NotData("an unknown value in the data")
    ((tag, body),) = node.items()
    if tag in _SEQUENCES and type(body) is list:
        return _SEQUENCES[tag](_decode(v, frames) for v in body)
    if tag == "dict" and type(body) is list:
        return {_decode(k, frames): _decode(v, frames) for k, v in body}
    if tag == "complex" and type(body) is list:
        return complex(*(float(x) for x in body))
    if type(body) is not int or not 0 < body + 1 < len(frames):
        raise NotData(f"an unknown value in the data ({tag})")
    blob = bytes(frames[body + 1])
    if tag == "bytes":
        return blob
    if tag in ("ndarray", "npscalar"):
        return _numpy(blob, scalar=tag == "npscalar")
    if tag == "tensor":
        return _tensor(blob)
    raise NotData(f"an unknown value in the data ({tag})")


def _numpy(blob: bytes, scalar: bool) -> Any:
    try:
        import numpy
    except ImportError:
        raise NotData("a NumPy array, and NumPy is not installed in this kernel") from None
    try:
        array = numpy.load(io.BytesIO(blob), allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 (whatever NumPy says of bad bytes: not data)
        raise NotData(f"a NumPy array that does not read ({type(exc).__name__})") from None
    return array[()] if scalar else array


def _tensor(blob: bytes) -> Any:
    try:
        import torch
    except ImportError:
        raise NotData("a torch tensor, and torch is not installed in this kernel") from None
    try:
        tensor = torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 (weights_only refuses anything but tensors)
        raise NotData(f"a torch tensor that does not read ({type(exc).__name__})") from None
    if not isinstance(tensor, torch.Tensor):
        raise NotData("a torch value that is not a tensor")
    return tensor
