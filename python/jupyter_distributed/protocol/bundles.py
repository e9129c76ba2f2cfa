"""MIME bundles (what IPython's ``display()`` publishes): their size, a compact mark for the
logs ("image/png 640×480"), and the cap past which a one-line note replaces one."""

from __future__ import annotations

import base64
import binascii
import json
import struct
from typing import Any

DEFAULT_MAX_BYTES = 10 * 2**20
#: richest first: the type a mark names
RICHEST = (
    "application/vnd.plotly.v1+json",
    "image/png",
    "image/jpeg",
    "image/svg+xml",
    "text/html",
    "text/markdown",
    "text/latex",
    "application/json",
    "text/plain",
)


def size(data: dict[str, Any]) -> int:
    """Bytes of a bundle as it travels (strings by length, anything else as JSON)."""
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def _human(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    return f"{n / 1e3:.1f} kB" if n < 1e6 else f"{n / 1e6:.1f} MB"


def png_size(encoded: str) -> tuple[int, int] | None:
    """Width and height from a base64 PNG's header (only its first bytes are decoded)."""
    try:
        head = base64.b64decode(encoded[:44])
    except (binascii.Error, ValueError):
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def mark(data: dict[str, Any]) -> str:
    """One line naming a bundle: its richest type and its size (pixels for a PNG)."""
    mime = next((m for m in RICHEST if m in data), next(iter(data), "empty"))
    value = data.get(mime)
    if mime == "image/png" and isinstance(value, str):
        dims = png_size(value)
        if dims is not None:
            return f"image/png {dims[0]}×{dims[1]}"
    if mime == "text/plain" and isinstance(value, str) and len(data) == 1:
        first = value.splitlines()[0] if value else ""
        return f"text/plain {first[:80]}"
    return f"{mime} {_human(size({mime: value}))}"


def capped(data: dict[str, Any], limit: int, rank: int) -> dict[str, Any]:
    """``data``, or a one-line note in its place when it is larger than ``limit`` bytes."""
    n = size(data)
    if n <= limit:
        return data
    return {
        "text/plain": f"[rank {rank}] a display of {_human(n)} ({mark(data)}) was not sent: "
        f"over the cap of {_human(limit)}; raise it with --display-max-mb or "
        "%config Distributed.display_max_mb"
    }
