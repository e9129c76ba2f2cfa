"""The model's training step traced on fake tensors with torch's MemTracker (nothing is
allocated): each part's peak bytes per pipeline stage, which :mod:`.memory` lays out per rank.

On CPU "memory" is the peak of live tensor bytes (torch's accounting); on a GPU the caching
allocator keeps more than that, which the allocator margin covers.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable
from typing import Any

from ..modelshapes import cut, loss_of, pieces, sample_input
from .parts import Parts
from .timing import compute_device


def _step_of(module: Any, batch: Any, optimizer: str, keep_output: bool = True) -> Parts:
    """The traced step's parts. ``keep_output``: the step holds the module's output to the end
    of its backward, as a pipeline's schedule does; without it the output goes once the loss
    is made from it, as in ``loss_of(model(x)).backward()`` (a bf16 model's logits then free
    after the loss's fp32 copy: holding them was one logits tensor over an H200's peaks)."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from .scratch import ProductScratch

    opt = (
        torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9, foreach=False)
        if optimizer == "sgd"
        else torch.optim.AdamW(module.parameters(), lr=1e-3, foreach=False)
    )
    _one_step(module, batch, opt)  # untracked: the tracked step then holds the optimizer's state
    tracker = MemTracker()
    tracker.track_external(module, opt)
    children = list(module.children())
    units = [0] * len(children)
    hooks = [_saved_by(c, units, i, tracker) for i, c in enumerate(children)]
    loss = [-1]
    if children:  # the loss's backward ends where the last child's backward begins
        hooks.append(children[-1].register_full_backward_pre_hook(_peak_into(loss, tracker)).remove)
    with tracker, ProductScratch():  # type: ignore[no-untyped-call]  # (inside the tracker)
        before = _live(tracker)
        out = module(batch)
        boundary = out.numel() * out.element_size()
        saved = _live(tracker) - before - boundary  # (the output is the boundary)
        with warnings.catch_warnings():  # the hook fires alike when its input needs no grad
            warnings.filterwarnings("ignore", "Full backward hook is firing", UserWarning)
            scalar = loss_of(out)
            if not keep_output:
                del out
            scalar.backward()
        opt.step()
    by = _peaks(tracker)
    p, g, o = by["Parameter"] + by["Buffer"], by["Gradient"], by["Optstate"]
    for hook in hooks:
        hook()
    held = tuple(sum(t.numel() * t.element_size() for t in c.parameters()) for c in children)
    saved_units = tuple(max(0, u) for u in units)
    acts = by["Total"] - p - g - o
    bw = _backward_peaks(tracker, children, held)
    loss_peak = min(loss[0], acts)
    fed = batch.numel() * batch.element_size()
    return Parts(
        p, g, o, acts, boundary, max(0, saved), saved_units, held, loss_peak, bw, loss[0], fed
    )


def _backward_peaks(tracker: Any, children: list[Any], held: tuple[int, ...]) -> tuple[int, ...]:
    """Each child's backward at its peak (MemTracker's per-module snapshot), less the
    parameters, buffers, optimizer state and the gradients of the children after it."""
    from torch.distributed._tools.mem_tracker import _ModState

    out = []
    for i, child in enumerate(children):
        stats = tracker.memory_tracking.get(child)
        snaps = stats.snapshots.get(_ModState.PEAK_BW, []) if stats is not None else []
        if not snaps:
            out.append(0)
            continue
        by = _by_name(snaps[-1])
        kept = sum(d.get(k, 0) for d in by for k in ("Parameter", "Buffer", "Optstate"))
        total = sum(d.get("Total", 0) for d in by)
        out.append(max(0, total - kept - sum(held[i + 1 :])))
    return tuple(out)


def _peak_into(into: list[int], tracker: Any) -> Callable[..., None]:
    """A hook that sets ``into[0]`` to the activations and temporaries of the peak so far."""

    def hook(*_: Any) -> None:
        by = _peaks(tracker)
        into[0] = max(into[0], by["Total"] - sum(by[k] for k in _HELD))

    return hook


_HELD = ("Parameter", "Buffer", "Gradient", "Optstate")


def _one_step(module: Any, batch: Any, opt: Any) -> None:
    loss_of(module(batch)).backward()
    opt.step()
    opt.zero_grad()


def _saved_by(child: Any, into: list[int], i: int, tracker: Any) -> Callable[[], None]:
    """Hooks that set ``into[i]`` to the bytes ``child``'s forward leaves live."""
    began = [0]

    def pre(*_: Any) -> None:
        began[0] = _live(tracker)

    def post(*_: Any) -> None:
        into[i] = _live(tracker) - began[0]

    handles = (child.register_forward_pre_hook(pre), child.register_forward_hook(post))

    def remove() -> None:
        for handle in handles:
            handle.remove()

    return remove


def _live(tracker: Any) -> int:
    """Bytes the tracker counts live now (every device)."""
    return sum(int(d.get("Total", 0)) for d in _by_name(tracker.get_tracker_snapshot("current")))


def _peaks(tracker: Any) -> dict[str, int]:
    """Each kind's peak bytes, every device's added (not the first device's: maybe the CPU's)."""
    out: dict[str, int] = {}
    for d in _by_name(tracker.get_tracker_snapshot("peak")):
        for k, v in d.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def _by_name(snapshot: dict[Any, Any]) -> list[dict[str, int]]:
    return [{getattr(k, "value", k): v for k, v in d.items()} for d in snapshot.values()]


@functools.lru_cache(maxsize=64)
def trace(
    factory: Callable[[], Any], micro: int, seq: int | None, optimizer: str, parts: int = 1
) -> tuple[Parts, ...]:
    """The training step of each of ``parts`` pipeline stages (1: the whole model) at
    ``micro`` samples, on fake tensors of the advisor's device (``timing.compute_device``): on a
    GPU, the kernels torch picks there are traced (attention's flash or memory-efficient
    kernel, layer norm's fp32 statistics; the CPU's trace was 4-7 % over an H200's bf16 steps
    and 2-4 % under its fp32 ones). Where the device's trace fails, the CPU's, with a warning."""
    device = compute_device()
    if device == "cpu":
        return _traced(factory, micro, seq, optimizer, parts, None)
    try:
        return _traced(factory, micro, seq, optimizer, parts, device)
    except Exception as e:  # noqa: BLE001 (the CPU's trace is the fallback)
        warnings.warn(f"memory traced on CPU fake tensors: on {device}'s, {e}", stacklevel=2)
        return _traced(factory, micro, seq, optimizer, parts, None)


def _traced(
    factory: Callable[[], Any], micro: int, seq: int | None, optimizer: str, parts: int,
    device: str | None,
) -> tuple[Parts, ...]:  # fmt: skip
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    on = torch.device(device) if device is not None else contextlib.nullcontext()
    with FakeTensorMode(), on:
        model = factory()
        batch = sample_input(model, micro, seq)
        if parts == 1:
            return (_step_of(model, batch, optimizer, keep_output=False),)
        layers = list(model)
        sizes = [sum(p.numel() for p in layer.parameters()) for layer in layers]
        out: list[Parts] = []
        for a, b in pieces(cut(sizes, parts)):
            stage = torch.nn.Sequential(*layers[a:b])
            out.append(_step_of(stage, batch, optimizer))
            with torch.no_grad():
                batch = stage(batch)
            if batch.is_floating_point():
                batch = batch.detach().requires_grad_(True)
        return tuple(out)
