"""The scratch a reduced-precision matrix product allocates on CPU, added to the traced step.

A bf16 (or fp16) matrix product on CPU runs in oneDNN, which allocates its scratchpad through
torch's CPU allocator beside the product's output (one allocation inside ``aten::mm``; none
with ``torch.backends.mkldnn`` off; larger with more threads); fake tensors never see it. Its
size depends on the shapes, on which operand is transposed and on the thread count, with no
simple rule (two threads on a 2-vCPU AMD EPYC: 256×16 @ 16×64 75,392 B, 91,904 with the left
side transposed; 512³ 263,808 B, 820,992 transposed; one thread: 70,656 and 410,752 B
transposed; fp32: none).
So each distinct product is run once on real zero tensors under torch's profiler, its scratch
(the allocator's peak less the output) cached, and the trace allocates that much as a fake
temporary right after the product's output and frees it at once: MemTracker counts it at every
peak it is part of (the small FSDP models' peak is inside such a product in a unit's backward:
up to 16 % under without it, ``benchmarks/bench_fsdp_fake.py --dtype bf16``).

On a GPU the product's workspace is cuBLAS's, allocated once per handle and stream and counted
apart (``timing.device_workspace_bytes``), so only CPU products are counted here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

MAX_FLOPS = 2**31
"""Products over this many multiply-adds are not run (tens of ms each on CPU, seconds for a
large vocabulary's logits); their scratch is not counted: 263,808 B measured at 4096×1024 @
1024×1024 (2.8 MB with the left side transposed), small beside such models' peaks."""


def _products() -> frozenset[Any]:
    import torch

    aten = torch.ops.aten
    return frozenset((aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default))


class ProductScratch(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's
    """Enter inside MemTracker (after it): each CPU bf16/fp16 product gets its scratch."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        import torch

        out = func(*args, **(kwargs or {}))
        if func not in _products():
            return out
        tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
        if not tensors or any(t.device.type != "cpu" for t in tensors):
            return out
        if tensors[-1].dtype not in (torch.bfloat16, torch.float16):
            return out
        key = tuple((tuple(t.shape), tuple(t.stride())) for t in tensors)
        on = (torch.get_num_threads(), torch.backends.mkldnn.enabled)  # (off: no scratch)
        size = scratch_bytes(str(func), key, str(tensors[-1].dtype), *on)
        if size > 0:
            held = torch.empty(size, dtype=torch.uint8)  # through MemTracker: counted, then freed
            del held
        return out


@functools.lru_cache(maxsize=1024)
def scratch_bytes(
    op: str, operands: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...], dtype: str,
    threads: int, onednn: bool = True,
) -> int:  # fmt: skip
    """The bytes ``op`` (``aten.mm.default`` …) allocates beside its output on CPU, for
    operands of these (shape, stride) pairs and dtype, on ``threads`` threads, with oneDNN on
    or off (``torch.backends.mkldnn.enabled``, which the run has now): measured once."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    from torch.utils._python_dispatch import _disable_current_modes

    *_, (a, _), (b, _) = operands
    flops = (a[0] if len(a) == 3 else 1) * a[-2] * a[-1] * b[-1]
    if flops > MAX_FLOPS:
        return 0
    func = {str(f): f for f in _products()}[op]
    kind = getattr(torch, dtype.removeprefix("torch."))
    with _disable_current_modes(), torch.no_grad():
        real = [_zeros(shape, stride, kind) for shape, stride in operands]
        func(*real)  # warm: oneDNN's primitive cache, the profiler's first start
        try:
            with (
                _without_profiler_log(),
                profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
            ):
                out = func(*real)
        except RuntimeError as e:  # a profiler already running on this thread
            warnings.warn(f"a {op} product's CPU scratch not measured: {e}", stacklevel=2)
            return 0
        return max(0, _held_most(prof) - int(out.numel() * out.element_size()))


@contextlib.contextmanager
def _without_profiler_log() -> Iterator[None]:
    """Kineto writes a ``USDT: … profiler_start`` and ``… profiler_stop`` line to file
    descriptor 2 each time a profile starts and stops, and a kernel (ipykernel) forwards what
    is written there into the cell: those two lines are left out, anything else written there
    meanwhile is written back."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            rest = b"".join(line for line in caught if not line.startswith(b"USDT:"))
            if rest:
                os.write(2, rest)


def _zeros(shape: tuple[int, ...], stride: tuple[int, ...], dtype: Any) -> Any:
    import torch

    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True) if n > 0)
    return torch.zeros(span, dtype=dtype).as_strided(shape, stride)


def _held_most(prof: Any) -> int:
    """The most bytes the CPU allocator held during the profile, above what it held before."""
    from torch._C._profiler import _EventType

    held: list[tuple[int, int, int]] = []  # (time, the allocator's count after, the event's size)
    nodes = list(prof.profiler.kineto_results.experimental_event_tree())
    while nodes:
        node = nodes.pop()
        nodes.extend(node.children)
        if node.tag == _EventType.Allocation:
            f = node.extra_fields
            held.append((node.start_time_ns, f.total_allocated, f.alloc_size))
    if not held:
        return 0
    held.sort()
    return max(0, max(h for _, h, _ in held) - (held[0][1] - held[0][2]))
