"""Time per step of one layout: compute per stage (timed here at its real shape), plus the
communication it exposes (each call costed on its own, see :mod:`.comm`), plus the pipeline's
bubble, plus the optimizer, plus what the framework adds (DDP, FSDP: timed here with no-op
collectives; the pipeline: its schedule's own work per microbatch, see :mod:`.framework`).
Communication is assumed not to overlap compute.

The calls are the ones our strategies make: DDP all-reduces its gradient buckets (the first
1 MiB, then 25 MiB each); FSDP2 all-gathers each unit forward and again backward and
reduce-scatters its gradient; the pipeline helper sends each microbatch's activation forward and
its gradient back across each stage boundary, and all-reduces each parameter's gradient over
the data-parallel replicas, one call per tensor.

A pipeline of ``p`` stages and ``m`` microbatches takes ``m + p - 1`` slots of its slowest
stage; each slot is the stage's block, the schedule's own work for one microbatch and a
message each way across a boundary (:meth:`.comm.Links.p2p`).
"""

from __future__ import annotations

from .comm import Links
from .enumerate import Candidate, groups
from .intake import ModelInfo
from .timing import Compute

FIRST_BUCKET = 1 << 20  # torch.distributed's first DDP bucket
BUCKET = 25 << 20  # DDP's bucket_cap_mb default


def ddp_buckets(tensors: tuple[int, ...]) -> list[int]:
    """Bytes of each DDP gradient bucket (filled in reverse order of the parameters)."""
    out: list[int] = []
    filling, cap = 0, FIRST_BUCKET
    for size in reversed(tensors):
        filling += size
        if filling >= cap:
            out.append(filling)
            filling, cap = 0, BUCKET
    return [*out, filling] if filling else out


def step_parts(
    info: ModelInfo,
    c: Candidate,
    micro: int,
    computes: tuple[Compute, ...],
    links: Links | None,
    procs_per_node: int,
    wrapped: tuple[float, float] | None = None,
) -> tuple[dict[str, float], str]:
    """The predicted seconds of each part of one step, and what its communication is.
    ``wrapped``: forward+backward and optimizer seconds timed under the strategy's wrapper
    (:mod:`.framework`: FSDP2 with no-op collectives, DDP on one rank); its excess over the
    plain block is the part ``framework``. For a pipeline, ``wrapped[0]`` is the seconds its
    schedule adds per microbatch on the slowest stage; each slot pays it."""
    dp_inter, pp_inter = groups(c, procs_per_node)
    where = "inter-node" if dp_inter else "intra-node"
    if c.strategy == "model-parallel":
        slowest = max(computes, key=lambda k: k.fwd_bwd)
        sends = max((s.boundary for s in computes[:-1]), default=0)
        p2p = 2 * (c.microbatches + c.pp - 1) * links.p2p(sends, pp_inter) if links else 0.0
        reduce_ = 0.0
        if links and c.dp > 1:
            reduce_ = max(sum(links.allreduce(t, c.dp, dp_inter) for t in s.tensors)
                          for s in computes)  # fmt: skip
        parts = {
            "compute": c.microbatches * slowest.fwd_bwd,
            "bubble": (c.pp - 1) * slowest.fwd_bwd,
            "communication": p2p + reduce_,
            "optimizer": max(s.optimizer for s in computes),
        }
        if wrapped is not None:
            parts["framework"] = (c.microbatches + c.pp - 1) * wrapped[0]
        kind = "point-to-point" if p2p >= reduce_ else "all-reduce"
        inter = pp_inter if p2p >= reduce_ else dp_inter
        return parts, f"{'inter' if inter else 'intra'}-node {kind}"
    (one,) = computes
    per_param = sum(one.tensors) / max(1, info.parameters)
    if c.strategy == "fsdp":
        comm = 0.0
        if links:
            for unit in info.units or (info.parameters,):
                comm += 3 * links.gather(unit * per_param, c.dp, dp_inter)
        parts = {"compute": one.fwd_bwd, "communication": comm,
                 "optimizer": one.optimizer / c.dp}  # fmt: skip
        if wrapped is not None:
            parts["framework"] = max(0.0, wrapped[0] - one.fwd_bwd)
            parts["optimizer"] = wrapped[1]
        return parts, f"{where} all-gather/reduce-scatter"
    buckets = ddp_buckets(one.tensors)
    comm = sum(links.allreduce(b, c.dp, dp_inter) for b in buckets) if links else 0.0
    parts = {"compute": one.fwd_bwd, "communication": comm, "optimizer": one.optimizer}
    if wrapped is not None:
        parts["framework"] = max(0.0, wrapped[0] - one.fwd_bwd)
    return parts, f"{where} all-reduce"
