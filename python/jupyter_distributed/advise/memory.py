"""Memory per rank: the model's training step traced on fake tensors (:mod:`.memtrace`, whose
:func:`trace` this module gives too), then the layout's sharding and the pipeline's microbatches
in flight.

On CPU "memory" is the peak of live tensor bytes (torch's accounting); on a GPU the caching
allocator keeps more than that, which the allocator margin covers.
"""

from __future__ import annotations

import dataclasses

from .fsdp import fsdp_memory
from .intake import DTYPE_BYTES, AdviseError, ModelInfo
from .memtrace import trace as trace  # (the name its importers use)
from .parts import Memory, Parts, with_margin

OPTIMIZER_STATES = {"adamw": 2, "sgd": 1}


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
    collectives: str = "gloo",
) -> Memory:
    """Bytes on the fullest rank of a layout, from its stages' traced steps. ``collectives``:
    whose FSDP's ranks run (``advise.fsdp``: the launch line's on CPU, gloo's own, NCCL's)."""
    if strategy == "model-parallel":
        pp = len(stages)
        best: Memory | None = None
        for s, part in enumerate(stages):
            in_flight = min(microbatches, pp - s) if interleaved else microbatches
            # the schedule's buffers, one per microbatch and allocated once: the inputs received
            # from the stage before; the gradients of its own outputs received from the stage
            # after (the one in backward is in the traced backward's peak)
            received = stages[s - 1].boundary if s > 0 else 0
            last = s == pp - 1
            buffers = microbatches * received + (0 if last else (microbatches - 1) * part.boundary)
            # and the step's whole batch, which every stage's rank holds (the helper's step
            # takes it on every rank; the first stage splits it into microbatches)
            buffers += microbatches * stages[0].inputs
            states = optimizer_states
            m = _stage_memory(part, in_flight, microbatches, buffers, states, margin, last)
            best = m if best is None or m.total > best.total else best
        assert best is not None  # noqa: S101 (a layout has at least one stage)
        return best
    (whole,) = stages
    if strategy == "fsdp" and dp > 1:
        return fsdp_memory(
            whole, layer_params, parameters, dp, optimizer_states, margin, collectives
        )
    # DDP: the reducer's gradient buckets, the size of the parameters (measured on gloo ranks
    # with the allocator's own count; the second copy counted before, rank 0's broadcast at
    # wrap time, was a free on gloo's thread that the profiler missed)
    buckets = whole.params if strategy == "ddp" and dp > 1 else 0
    return with_margin(whole.params, whole.grads, whole.optim, whole.activations, buckets, margin)


def on_device(memory: Memory, device_bytes: int) -> Memory:
    """``memory`` with what the device's libraries keep besides the step's tensors (a GPU's
    cuBLAS workspaces, ``timing.device_workspace_bytes``), counted with the buffers."""
    return dataclasses.replace(memory, buffers=memory.buffers + device_bytes)


def _stage_memory(
    part: Parts,
    in_flight: int,
    microbatches: int,
    buffers: int,
    states: int,
    margin: float,
    last: bool,
) -> Memory:
    """A pipeline stage's worst moment: a microbatch's backward, with the others in flight
    keeping what their forwards saved and their outputs; its optimizer's step; on the last
    stage, the schedule's merge of every microbatch's output (which it keeps to the end)."""
    held = min(part.optim, states * part.params)  # the optimizer's state, no temporaries
    b = part.boundary
    # the first microbatch's backward: no gradient yet, the others in flight keeping their
    # saved activations and outputs; a later one's: the whole gradient, one fewer in flight (the
    # last stage keeps every output, the backwarded ones' too)
    waiting = (in_flight - 1) * (part.saved + b)
    later_n = min(in_flight, microbatches - 1) - 1
    later = later_n * part.saved + ((microbatches - 1) * b if last else later_n * b)
    merged = 2 * microbatches * b if last else 0  # every output and their concatenation
    worst = with_margin(part.params, part.params, held, merged, buffers, margin)
    # at the step's peak the optimizer holds temporaries the size of a parameter, more than its
    # 4-byte step counters
    if part.optim - held <= held // 100 or not part.unit_bw:  # the traced peak is in backward
        acts = part.activations
        worst = _worse(worst, with_margin(part.params, part.grads, part.optim, acts + waiting,
                                          buffers, margin))  # fmt: skip
        if microbatches > 1:
            rest = with_margin(part.params, part.params, part.optim, acts + later, buffers, margin)
            worst = _worse(worst, rest)
        return worst
    # the traced peak is the optimizer's step (its temporaries in part.optim); the backward's
    # worst moment is then a child's own peak (its gradients as computed included) or the loss's
    # (the traced step holds its one output: on a stage before the last, the last gradient
    # buffer's size; the last stage holds every microbatch's output)
    step = part.activations + ((microbatches - 1) * b if last else 0)
    worst = _worse(worst, with_margin(part.params, part.params, part.optim, step, buffers, margin))
    for c, bw in enumerate((*part.unit_bw, max(part.loss_peak, part.loss_bw))):
        after = sum(part.unit_bytes[c + 1 :])
        first = with_margin(part.params, after, held, bw + waiting, buffers, margin)
        worst = _worse(worst, first)
        if microbatches > 1:
            rest = with_margin(part.params, part.params, held, bw + later, buffers, margin)
            worst = _worse(worst, rest)
    return worst


def _worse(a: Memory, b: Memory) -> Memory:
    return b if b.total > a.total else a
