"""FSDP2's memory per rank, moment by moment through its backward, as gloo ranks hold it.

Measured with the CPU allocator's own count on gloo ranks (``benchmarks/bench_fsdp_memory.py
--why``: every tensor live at a rank's peak, by the op that made it). FSDP2 makes each child
with parameters a unit (then the root). In the backward, unit ``k``'s pre-backward waits for
its all-gather and copies its parameters out of the collective's output (both live), then
prefetches unit ``k-1`` (the all-gather's output, and gloo's own buffer until the collective
completes). Its post-backward frees the gathered parameters and the input of the reduce-scatter
before it (FSDP keeps one), copies the gradients into a new input, and reduce-scatters it
(gloo's own reduce-scatter copies that input), and the shard out is the unit's gradient from
then on. Between the two, the unit's backward frees what its forward saved as it computes its
gradients: its worst moment there is its traced backward peak (``Parts.unit_bw``: its gradients
as computed, what is still saved, the temporaries) with the unit gathered and the prefetch's
output (taking every saved activation and every gradient at once was 5-10 % over small models,
measured on one rank of torch's fake process group, and 7 % under where a unit's backward makes a
temporary larger than its parameters).

gloo frees a collective's buffers when the last of the caller and its own worker thread drops
the work. After a collective the caller waited for at once (every reduce-scatter; the forward's
all-gathers), that is usually the worker thread, and on cores busier than the ranks' threads it
may run only after the rank has gone on: the copy of the reduce-scatter's input (or the last
forward all-gather's output) was then still live at the next moment in some runs and not in
others (``mlp`` × 4: 1 run of 7, ``temp`` × 2: 2 of 7, ``wide`` × 4: 4 of 9, ``tfm`` × 2: 2 of 5).
So the launch line's ``shard_model`` gives FSDP2 its own collectives on CPU
(``worker/gloo_comms.py``): the reduce-scatter is an in-place all-reduce of FSDP's input (no
copy at all) and the all-gather returns only after gloo's thread has dropped its buffers. Then
the peak is the same in every run, and ``collectives`` says which ranks are predicted:

- ``"gloo"``: the launch line's collectives on CPU, as above;
- ``"gloo-late"``: gloo's own (a torch without FSDP2's custom collectives): the reduce-scatter
  copies its input, and one such copy is counted as still live at every later moment;
- ``"nccl"``: a GPU's: NCCL's collectives allocate nothing through torch's allocator (its own
  buffers are outside it), so FSDP2's own tensors only: no all-gather buffer while a prefetch
  runs, no copy of the reduce-scatter's input, nothing late (what torch's fake process group
  does too; ``benchmarks/bench_advise_gpu.py`` measures a rank on it).
"""

from __future__ import annotations

from .parts import Memory, Parts, with_margin

COLLECTIVES = ("gloo", "gloo-late", "nccl")


def fsdp_memory(
    whole: Parts,
    layer_params: tuple[int, ...],
    parameters: int,
    dp: int,
    optimizer_states: int,
    margin: float,
    collectives: str = "gloo",
) -> Memory:
    """The worst moment of FSDP2 on ``dp`` ranks: the loss's backward, a moment of a unit's
    backward, or the optimizer's step; ``collectives``: whose (``"gloo"``, ``"gloo-late"``,
    ``"nccl"``, above)."""
    if collectives not in COLLECTIVES:
        raise ValueError(f"collectives {collectives!r}: one of {', '.join(COLLECTIVES)}")
    late_free = collectives == "gloo-late"
    copied = late_free  # the reduce-scatter's input copied by the collective (gloo's own)
    own = 0 if collectives == "nccl" else 1  # an all-gather's own buffer (gloo's) while it runs
    units, saved, peaks, computing = _children(whole, layer_params, parameters)
    shard = -(-whole.params // dp)
    states = optimizer_states * shard
    root = max(0, whole.params - sum(units))  # the root's own parameters stay gathered
    heads = [n for n in units if n > 0]
    # the loss's backward, before the last unit's pre-backward gathers it: no unit gathered;
    # the last forward all-gather's output, if gloo has not dropped it yet
    at_loss = whole.loss_peak if whole.loss_peak >= 0 else max(whole.activations, whole.saved)
    late = heads[-1] if late_free and heads else 0
    worst = with_margin(shard, 0, states, at_loss, root + late, margin)
    done = kept = late = prefetched = 0  # gradient shards; the last reduce-scatter's input, copy
    for c in reversed(range(len(units))):
        unit, before = units[c], next((n for n in reversed(units[:c]) if n > 0), 0)
        held = root + kept + late
        if unit == 0:  # a child without parameters, between two units
            acts = max(saved[c], peaks[c])
            worst = _worse(worst, with_margin(shard, done, states, acts, held + prefetched, margin))
            continue
        moments = (
            (saved[c], 2 * unit),  # the copy-out: the all-gather's output and the parameters
            (saved[c], unit + (1 + own) * before),  # the prefetch before (and gloo's buffer)
            # its backward at its traced peak (its gradients as computed, what is still saved,
            # the temporaries), the unit gathered, the prefetch's output kept
            (computing[c], unit + before),
        )
        for acts, buffers in moments:
            worst = _worse(worst, with_margin(shard, done, states, acts, held + buffers, margin))
        # its reduce-scatter: the input (and its copy), the shard out; the prefetched unit
        lower = saved[c - 1] if c > 0 else 0
        buffers = root + (2 if copied else 1) * unit + -(-unit // dp) + before
        worst = _worse(worst, with_margin(shard, done, states, lower, buffers, margin))
        done += -(-unit // dp)
        kept, late, prefetched = unit, unit if late_free else 0, before
    step = with_margin(shard, shard, max(states, -(-whole.optim // dp)), 0, root, margin)
    return _worse(worst, step)


def _worse(a: Memory, b: Memory) -> Memory:
    return b if b.total > a.total else a


def _children(
    whole: Parts, layer_params: tuple[int, ...], parameters: int
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Per top-level child: its parameter bytes, the activations live when its backward begins
    (what its forward and those before it saved), at its backward's traced peak, and that
    peak with the child's gradients as computed by then (the traced peak itself, which holds
    them; where not traced, every saved activation and every gradient at once)."""
    if whole.unit_bytes:  # traced
        units = list(whole.unit_bytes)
        saved = [sum(whole.unit_saved[: c + 1]) for c in range(len(units))]
        if whole.unit_bw:
            return units, saved, list(whole.unit_bw), list(whole.unit_bw)
        return units, saved, saved, [a + n for a, n in zip(saved, units, strict=True)]
    # the analytic fallback: one unit per layer, every activation live
    units = [int(n * whole.params / max(1, parameters)) for n in layer_params]
    acts = [max(whole.activations, whole.saved)] * len(units)
    return units, acts, acts, [a + n for a, n in zip(acts, units, strict=True)]
