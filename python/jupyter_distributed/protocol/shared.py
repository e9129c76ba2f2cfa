"""Large pushes to ranks on the kernel's own host go through one shared-memory file.

Sending 100 MB over ZeroMQ to each of N ranks copies it N times through sockets. Instead the
kernel writes the pickled out-of-band buffers once into a file in ``/dev/shm`` (a RAM-backed
file system on Linux; the temp directory elsewhere), readable only by its owner, and sends each
rank its path and the buffer sizes in the signed message header. Every rank maps the file
copy-on-write: reading shares the same memory pages, and a rank that modifies its copy gets
private pages. The kernel deletes the file when the run ends (mappings stay valid).

The file needs no digest: its unguessable name travels in a signed header, and only the user who
owns the file (who can read the cluster's secret anyway) can write to it.
"""

from __future__ import annotations

import mmap
import os
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .signing import Buffer

SHARED_MIN_BYTES = 1 << 20  # smaller pushes are not worth a file
_ALIGN = 64


def shared_dir() -> Path:
    shm = Path("/dev/shm")  # noqa: S108 - a RAM file system, not a shared temp directory
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


def _padded(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def write_shared(buffers: Sequence[Buffer], directory: Path | None = None) -> dict[str, Any]:
    """Write ``buffers`` into a new owner-only file; returns the header field that describes
    it (``path`` and ``sizes``). The caller deletes the file with :func:`remove_shared`."""
    # named after the writer (the kernel): a dead kernel's files are swept (``reaper``)
    name = f"jupyter-distributed-k{os.getpid()}-{secrets.token_hex(16)}"
    path = (directory or shared_dir()) / name
    sizes = [memoryview(b).nbytes for b in buffers]
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        offset = 0
        for buffer, size in zip(buffers, sizes, strict=True):
            view = memoryview(buffer).cast("B")
            written = 0
            while written < size:
                written += os.pwrite(fd, view[written:], offset + written)
            offset += _padded(size)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    return {"path": str(path), "sizes": sizes}


def remove_shared(field: dict[str, Any]) -> None:
    Path(field["path"]).unlink(missing_ok=True)


def map_shared(field: dict[str, Any]) -> list[memoryview]:
    """The buffers of a file written by :func:`write_shared`, mapped copy-on-write (writable
    for the rank, never written back)."""
    sizes = [int(s) for s in field["sizes"]]
    total = sum(_padded(s) for s in sizes[:-1]) + (sizes[-1] if sizes else 0)
    if total == 0:
        return [memoryview(bytearray()) for _ in sizes]
    with Path(field["path"]).open("rb") as f:
        mapped = mmap.mmap(f.fileno(), total, access=mmap.ACCESS_COPY)
    whole = memoryview(mapped)
    out, offset = [], 0
    for size in sizes:
        out.append(whole[offset : offset + size])
        offset += _padded(size)
    return out
