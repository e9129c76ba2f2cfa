"""Memory per rank: the model's training step traced on fake tensors with torch's MemTracker
(nothing is allocated), then the layout's sharding and the pipeline's microbatches in flight.

On CPU "memory" is the peak of live tensor bytes (torch's accounting); on a GPU the caching
allocator keeps more than that, which the allocator margin covers.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..modelshapes import cut, loss_of, pieces, sample_input
from .intake import DTYPE_BYTES, AdviseError, ModelInfo

OPTIMIZER_STATES = {"adamw": 2, "sgd": 1}


@dataclass(frozen=True)
class Parts:
    """One module's training step at one microbatch size, at the step's traced peak."""

    params: int
    grads: int
    optim: int
    activations: int  # everything else live at the peak: saved activations and temporaries
    boundary: int = 0  # bytes of the module's output (what a pipeline stage sends on)
    saved: int = 0  # bytes a forward leaves live for its backward, less its output
    unit_saved: tuple[int, ...] = ()  # each top-level child's, its output included
    unit_bytes: tuple[int, ...] = ()  # each top-level child's parameter bytes (FSDP's units)
    loss_peak: int = -1  # activations and temporaries at most before the last child's backward

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optim + self.activations


def _step_of(module: Any, batch: Any, optimizer: str) -> Parts:
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

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
    with tracker:
        before = _live(tracker)
        out = module(batch)
        boundary = out.numel() * out.element_size()
        saved = _live(tracker) - before - boundary  # (the output is the boundary)
        with warnings.catch_warnings():  # the hook fires alike when its input needs no grad
            warnings.filterwarnings("ignore", "Full backward hook is firing", UserWarning)
            loss_of(out).backward()
        opt.step()
    peak = next(iter(tracker.get_tracker_snapshot("peak").values()))
    by = {getattr(k, "value", k): v for k, v in peak.items()}
    p, g, o = by["Parameter"] + by["Buffer"], by["Gradient"], by["Optstate"]
    for hook in hooks:
        hook()
    held = tuple(sum(t.numel() * t.element_size() for t in c.parameters()) for c in children)
    saved_units = tuple(max(0, u) for u in units)
    acts = by["Total"] - p - g - o
    return Parts(p, g, o, acts, boundary, max(0, saved), saved_units, held, min(loss[0], acts))


def _peak_into(into: list[int], tracker: Any) -> Callable[..., None]:
    """A hook that sets ``into[0]`` to the activations and temporaries of the peak so far."""

    def hook(*_: Any) -> None:
        peak = next(iter(tracker.get_tracker_snapshot("peak").values()))
        by = {getattr(k, "value", k): v for k, v in peak.items()}
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


def _by_name(snapshot: dict[Any, Any]) -> list[dict[str, int]]:
    return [{getattr(k, "value", k): v for k, v in d.items()} for d in snapshot.values()]


@functools.lru_cache(maxsize=64)
def trace(
    factory: Callable[[], Any], micro: int, seq: int | None, optimizer: str, parts: int = 1
) -> tuple[Parts, ...]:
    """The training step of each of ``parts`` pipeline stages (1: the whole model) at
    ``micro`` samples, on fake tensors."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        model = factory()
        batch = sample_input(model, micro, seq)
        if parts == 1:
            return (_step_of(model, batch, optimizer),)
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


@dataclass(frozen=True)
class Memory:
    """Predicted bytes per rank (the largest rank), by component."""

    params: int
    grads: int
    optim: int
    activations: int
    buffers: int  # DDP's gradient buckets, FSDP's gathered layers, pipeline receive buffers
    margin: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optim + self.activations + self.buffers + self.margin

    def breakdown(self) -> dict[str, int]:
        return {
            "params": self.params,
            "grads": self.grads,
            "optim": self.optim,
            "activations": self.activations,
            "buffers": self.buffers,
            "margin": self.margin,
        }


def analytic_parts(info: ModelInfo, micro: int, seq: int, optimizer: str) -> Parts:
    """The fallback: parameters × dtype, fp32 gradients... as formulas; activations per layer
    from Korthikanti et al. 2022 (34·s·h + 5·a·s² bytes per sample, 16-bit, no recompute)."""
    a = info.analytic
    if a is None:
        raise AdviseError("analytic memory needs the model's numbers")
    width = DTYPE_BYTES[a.dtype]
    params = info.parameters * width
    states = OPTIMIZER_STATES[optimizer] * info.parameters * 4
    per_layer = seq * a.hidden * 34 + 5 * a.heads * seq * seq
    acts = micro * a.layers * per_layer * width // 2
    return Parts(params, params, states, acts, micro * seq * a.hidden * width)


def layout_memory(
    stages: tuple[Parts, ...],
    layer_params: tuple[int, ...],
    parameters: int,
    strategy: str,
    dp: int,
    microbatches: int,
    interleaved: bool,
    margin: float,
    optimizer_states: int = 2,
) -> Memory:
    """Bytes on the fullest rank of a layout, from its stages' traced steps."""
    if strategy == "model-parallel":
        pp = len(stages)
        best: Memory | None = None
        for s, part in enumerate(stages):
            in_flight = min(microbatches, pp - s) if interleaved else microbatches
            # the input received from the stage before and its gradient sent back; the
            # gradient of its own output received from the stage after
            received = stages[s - 1].boundary if s > 0 else 0
            buffers = 2 * received + (part.boundary if s < pp - 1 else 0)
            if s == pp - 1:  # the schedule keeps every microbatch's output to merge them
                buffers += (microbatches - in_flight) * part.boundary
            # one microbatch's whole step (its temporaries too), and what the others in flight
            # keep from their forwards until their backwards
            acts = part.activations + (in_flight - 1) * part.saved
            # a microbatch after the first runs its backward with the gradients of the ones
            # before already accumulated: the traced peak of one microbatch may predate them
            grads = part.params if microbatches > 1 else part.grads
            m = _with_margin(part.params, max(part.grads, grads), part.optim, acts, buffers, margin)
            best = m if best is None or m.total > best.total else best
        assert best is not None  # noqa: S101 (a layout has at least one stage)
        return best
    (whole,) = stages
    if strategy == "fsdp" and dp > 1:
        return fsdp_memory(whole, layer_params, parameters, dp, optimizer_states, margin)
    # DDP: the reducer's gradient buckets, the size of the parameters (measured on gloo ranks
    # with the allocator's own count; the second copy counted before, rank 0's broadcast at
    # wrap time, was a free on gloo's thread that the profiler missed)
    buckets = whole.params if strategy == "ddp" and dp > 1 else 0
    return _with_margin(whole.params, whole.grads, whole.optim, whole.activations, buckets, margin)


def _with_margin(p: int, g: int, o: int, a: int, b: int, margin: float) -> Memory:
    return Memory(p, g, o, a, b, int((p + g + o + a + b) * margin))


def fsdp_memory(
    whole: Parts,
    layer_params: tuple[int, ...],
    parameters: int,
    dp: int,
    optimizer_states: int,
    margin: float,
) -> Memory:
    """FSDP2 (one unit per child with parameters, then the root) on ``dp`` ranks, at the worst
    moment of its backward, measured on gloo ranks with torch's profiler: while unit ``i`` runs
    its backward, the unit after it is still being reduce-scattered (its full gradient as the
    collective's input, gloo's copy of it, the shard out), unit ``i`` is gathered, and the unit
    before it is being prefetched (the all-gather's output and gloo's own buffer); the shards,
    the optimizer's states, the saved activations and the gradient shards reduced so far are
    live too. gloo frees its copy on its own thread, so the copy of the unit reduced before is
    counted as well: it was still live in 2 of 3 runs of a 4 MiB unit on 4 ranks, and counting
    it keeps the prediction on the side that fits. Or the optimizer's step, whichever is
    larger."""
    if whole.unit_bytes:  # traced: each child with parameters is a unit
        at = [c for c, n in enumerate(whole.unit_bytes) if n > 0]
        units = [whole.unit_bytes[c] for c in at]
        saved = [sum(whole.unit_saved[: c + 1]) for c in at]  # live when its backward runs
    else:  # the analytic fallback: one unit per layer, activations all live
        units = [int(n * whole.params / max(1, parameters)) for n in layer_params if n > 0]
        saved = [whole.saved] * len(units)
    root = max(0, whole.params - sum(units))  # the root's own parameters stay gathered
    shard = -(-whole.params // dp)
    states = optimizer_states * shard
    last = units[-1] if units else 0
    acts = max(whole.activations, whole.saved)
    # the loss's backward, before the head's pre-backward gathers it: no unit gathered; gloo's
    # copy of the head's shard from the forward's last all-gather may still be live (freed on
    # its own thread; seen in 1 of 3 runs of mlp × 2), so it is counted
    at_loss = whole.loss_peak if whole.loss_peak >= 0 else acts
    backward = _with_margin(shard, 0, states, at_loss, root + -(-last // dp), margin)
    if acts > at_loss:  # the traced peak comes later: count the head gathered and its gradient
        later = _with_margin(shard, 0, states, acts, root + 2 * last, margin)
        backward = later if later.total > backward.total else backward
    for i, unit in enumerate(units[:-1]):  # deeper in: a reduce-scatter in flight
        after, before = units[i + 1], units[i - 1] if i > 0 else 0
        earlier = units[i + 2] if i + 2 < len(units) else 0  # gloo's copy, not yet freed
        buffers = root + 2 * after + -(-after // dp) + earlier + unit + 2 * before
        grads = sum(-(-u // dp) for u in units[i + 2 :])
        here = _with_margin(shard, grads, states, saved[i], buffers, margin)
        backward = here if here.total > backward.total else backward
    grads, optim = -(-whole.grads // dp), -(-whole.optim // dp)
    step = _with_margin(shard, grads, optim, 0, root, margin)
    return backward if backward.total >= step.total else step
