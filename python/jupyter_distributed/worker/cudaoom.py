"""The memory picture that follows a CUDA out-of-memory error on a rank.

``torch.OutOfMemoryError`` (or an older torch's ``RuntimeError: CUDA out of memory``) alone
says little; the failure's notes add torch's headline for the device (allocated, its peak,
reserved, free of total, and the request the message names) and the rank's last GPU samples
(:mod:`.sampler`). Never imports torch: an error from torch means it is imported.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable
from typing import Any

from ..memcg import MiB
from .sampler import GPU

_REQUEST = re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]?i?B)")


def is_cuda_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None)
    if isinstance(oom, type) and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)


def failure_notes(exc: BaseException) -> dict[str, Any]:
    """``{"notes": [...]}`` for a CUDA out-of-memory error, else {} (a failure's extra fields)."""
    if not is_cuda_oom(exc):
        return {}
    return {"notes": [headline(str(exc)), *samples(GPU.recent)]}


def headline(message: str) -> str:
    """torch's memory headline of the current device, as ``memory_summary`` opens."""
    cuda = sys.modules.get("torch.cuda")
    request = _REQUEST.search(message)
    asked = f"; the request: {request.group(1)}" if request else ""
    try:
        device = cuda.current_device()  # type: ignore[union-attr]
        allocated = cuda.memory_allocated(device)  # type: ignore[union-attr]
        reserved = cuda.memory_reserved(device)  # type: ignore[union-attr]
        free, total = cuda.mem_get_info(device)  # type: ignore[union-attr]
        peak = cuda.memory_stats(device).get("allocated_bytes.all.peak")  # type: ignore[union-attr]
    except Exception as exc:  # noqa: BLE001 - the error itself is shown whatever this does
        return f"GPU memory: no summary ({type(exc).__name__}: {exc}){asked}"
    high = f" (peak {_gib(peak)})" if peak else ""
    return (
        f"GPU memory on cuda:{device}: {_gib(allocated)} allocated{high}, {_gib(reserved)} "
        f"reserved by torch, {_gib(free)} free of {_gib(total)}{asked}"
    )


def samples(recent: Iterable[tuple[float, float, float | None]]) -> list[str]:
    """The rank's last GPU samples, oldest first (none before its first)."""
    shown = [
        f"{time.strftime('%H:%M:%S', time.localtime(t))} {mem / 1024:.2f} GiB"
        + (f", {util:.0f} % busy" if util is not None else "")
        for t, mem, util in recent
    ]
    return [f"last GPU samples of this rank: {'; '.join(shown)}"] if shown else []


def _gib(n: float) -> str:
    return f"{n / MiB / 1024:.2f} GiB"
