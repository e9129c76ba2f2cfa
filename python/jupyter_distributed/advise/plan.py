"""``advise(model_fn, ...)``: trace, time, enumerate and rank the layouts of one cluster."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .calibrate import apply, calibrated_note
from .comm import Links, fit_links
from .enumerate import Candidate, Row, candidates, dominant
from .framework import ddp_seconds, fsdp_seconds, pipeline_seconds
from .intake import DTYPE_BYTES, AdviseError, Analytic, ModelInfo, from_factory, from_numbers
from .memory import OPTIMIZER_STATES, analytic_parts, layout_memory, on_device
from .parts import Parts
from .report import Advice
from .rules import annotate
from .sampled import Sampled, sample
from .steptime import step_parts
from .timing import Compute, device_workspace_bytes, rank_threads

FIT_FRACTION = 0.95


@dataclass(frozen=True)
class Cluster:
    nodes: int
    procs_per_node: int
    memory_bytes: int  # per rank
    memory_source: str

    @property
    def world(self) -> int:
        return self.nodes * self.procs_per_node


def local_cluster(nodes: int, procs_per_node: int, memory_gib: float | None) -> Cluster:
    """The cluster from the flags; each rank's memory as given, else this machine's (a GPU's
    total, or the RAM shared by the node's ranks)."""
    if memory_gib is not None:
        if not memory_gib > 0:
            raise AdviseError(f"--memory-gib must be positive, got {memory_gib}")
        return Cluster(nodes, procs_per_node, int(memory_gib * 2**30), "given")
    import torch

    if torch.cuda.is_available():
        return Cluster(nodes, procs_per_node, torch.cuda.mem_get_info()[1], "measured: GPU total")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Cluster(nodes, procs_per_node, ram // procs_per_node, "measured: RAM ÷ ranks per node")


@functools.cache
def _on_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _collectives() -> str:
    """Whose collectives FSDP's ranks run (``advise.fsdp``): NCCL's on a GPU, else the launch
    line's on gloo, or gloo's own where this torch has no FSDP2 custom collectives."""
    if _on_gpu():
        return "nccl"
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return "gloo-late"
    return "gloo" if hasattr(FSDPModule, "set_custom_reduce_scatter") else "gloo-late"


def _check(global_batch: int, world: int, optimizer: str, seq: int | None) -> None:
    if global_batch < 1:
        raise AdviseError(f"--global-batch must be a positive integer, got {global_batch}")
    if optimizer not in OPTIMIZER_STATES:
        raise AdviseError(f"--optimizer must be one of {', '.join(OPTIMIZER_STATES)}")
    if seq is not None and seq < 1:
        raise AdviseError(f"--seq must be a positive integer, got {seq}")
    if global_batch % world:
        raise AdviseError(
            f"--global-batch {global_batch} is not divisible by the {world} ranks; give a "
            f"multiple of {world} (e.g. {global_batch + world - global_batch % world})"
        )


def advise(
    model_fn: Callable[[], Any] | None = None,
    *,
    global_batch: int,
    seq: int | None = None,
    nodes: int = 1,
    procs_per_node: int = 1,
    probe: dict[str, Any] | None = None,
    optimizer: str = "adamw",
    precision: str = "fp32",
    memory_gib: float | None = None,
    numbers: Analytic | None = None,
    margin: float = 0.0,
    calibration: dict[str, Any] | None = None,
) -> Advice:
    """Every launchable layout of ``nodes × procs_per_node`` ranks for ``model_fn`` (a
    zero-argument factory, built on fake tensors) or ``numbers`` (the analytic fallback), ranked
    by predicted samples/s; ``probe``: a ``%distributed probe`` result (its pairs) for the links;
    ``calibration``: corrections fitted by an earlier ``--verify`` on this cluster
    (:mod:`.calibrate`), applied to every row, which then says so."""
    began = time.perf_counter()
    cluster = local_cluster(nodes, procs_per_node, memory_gib)
    _check(global_batch, cluster.world, optimizer, seq)
    if model_fn is not None:
        info = from_factory(model_fn, seq)
    elif numbers is not None:
        if seq is None:
            raise AdviseError("the analytic fallback needs --seq")
        info = from_numbers(numbers)
    else:
        raise AdviseError("give a model: --model NAME (a factory) or its numbers")
    if cluster.world > 1 and probe is None:
        raise AdviseError(
            f"no probe of a {cluster.world}-rank cluster to time communication with; run "
            f"%distributed probe --quick --nodes {nodes} --procs-per-node {procs_per_node} "
            "first, or give --probe RUN"
        )
    links = fit_links(probe) if probe is not None else None
    layouts = candidates(info, cluster.world, global_batch)
    sampled = None
    if info.factory is not None:
        needs: dict[int, set[int]] = {}
        for c in layouts:
            needs.setdefault(c.pp, set()).add(c.micro(global_batch))
        threads = rank_threads(cluster.procs_per_node)[0]
        sampled = sample(info.factory, needs, seq, optimizer, threads)
    rows = [_row(info, c, cluster, links, global_batch, seq, optimizer, margin, calibration,
                 sampled) for c in layouts]  # fmt: skip
    if not rows:
        raise AdviseError(f"no layout our strategies can launch on {cluster.world} rank(s)")
    rows.sort(key=lambda r: (not r.fits, -r.samples_per_s))
    rows = annotate(rows, cluster.memory_bytes, nodes, procs_per_node)
    notes = _notes(info, precision, links, cluster, margin)
    if sampled is not None:
        notes.append(sampled.note())
        if any(
            "framework" not in (r.raw_parts_s or r.parts_s)
            for r in rows
            if r.candidate.dp > 1 or r.candidate.pp > 1
        ):
            notes.append(
                "NOT TIMED: what DDP/FSDP add to the block (hooks, copies, the sharded optimizer "
                "step) and the pipeline schedule's own work per microbatch, which need this "
                "process free of a process group (or torch's fake backend); their step times "
                "leave it out"
            )
    if calibration is not None:
        notes.insert(0, calibrated_note(calibration))
    if not any(r.fits for r in rows):
        best = min(rows, key=lambda r: r.memory.total)
        raise AdviseError(
            f"no layout fits: the smallest, {best.candidate.name}, needs "
            f"{best.memory.total / 2**30:.2f} GiB per rank (predicted) of "
            f"{cluster.memory_bytes / 2**30:.2f} GiB ({cluster.memory_source}); use more "
            "ranks, a smaller --global-batch or a smaller model"
        )
    inputs = {
        "model": info.name, "parameters": info.parameters, "traced": info.traced,
        "global_batch": global_batch, "seq": seq, "nodes": nodes,
        "procs_per_node": procs_per_node, "optimizer": optimizer, "precision": precision,
        "memory_budget_bytes": cluster.memory_bytes, "memory_source": cluster.memory_source,
        "probe_run": links.probe_run if links else "",
        "calibration": calibration,
    }  # fmt: skip
    return Advice(rows, inputs, notes, time.perf_counter() - began)


def _notes(
    info: ModelInfo, precision: str, links: Links | None, cluster: Cluster, margin: float
) -> list[str]:
    notes = [
        "every number is predicted unless labelled measured; communication is assumed not to "
        "overlap compute",
        f"memory budget {cluster.memory_bytes / 2**30:.2f} GiB per rank ({cluster.memory_source}); "
        f"layouts above {FIT_FRACTION:.0%} of it are marked as not fitting; allocator margin "
        f"{margin:.0%}",
        "not enumerated: tensor parallel (only through your own code on the mesh) and gradient "
        "accumulation (the launch line cannot set them)",
    ]
    if info.traced:
        notes.append(
            f"memory traced on fake tensors (MemTracker) for {info.name}(), in the dtype it "
            f"builds (--precision {precision} applies to the analytic fallback only)"
        )
    else:
        notes.append(
            "ANALYTIC FALLBACK: nothing was traced; activations from Korthikanti et al.'s "
            "formula (no temporaries), compute from 6 × parameters × tokens FLOPs at this "
            "machine's GEMM rate"
        )
    if not info.sequential:
        notes.append("no pipeline layouts: the pipeline helper cuts only an nn.Sequential")
    if links is not None:
        notes.append(f"links fitted from probe {links.probe_run}")
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores:
        notes.append(
            f"this machine is busy (load average {load:.1f} on {cores} cores): compute was "
            "timed as a median under this load, which moves from minute to minute, so the "
            "ranks may run much slower or faster than predicted; --verify measures and "
            "calibrates"
        )
    return notes


def _stage_parts(
    info: ModelInfo, pp: int, micro: int, seq: int | None, optimizer: str, sampled: Sampled | None
) -> tuple[Parts, ...]:
    if sampled is not None:
        return sampled.parts[pp, micro]
    return (analytic_parts(info, micro, seq or 1, optimizer),)


def _compute(
    info: ModelInfo, pp: int, seq: int | None, procs_per_node: int, micro: int,
    sampled: Sampled | None,
) -> tuple[Compute, ...]:  # fmt: skip
    threads, oversub = rank_threads(procs_per_node)
    if sampled is not None:
        timed = sampled.computes[pp, micro]
    else:
        from .timing import gemm_flops

        dtype = info.analytic.dtype if info.analytic else "fp32"
        seconds = 6 * info.parameters * (seq or 1) * micro / gemm_flops(threads, dtype)
        width = DTYPE_BYTES[dtype]
        tensors = tuple(p * width for p in info.layer_params)
        timed = (Compute(seconds, 0.0, tensors, 0),)
    return tuple(c.scaled(oversub) for c in timed)


def _wrapped(
    info: ModelInfo, c: Candidate, seq: int | None, procs_per_node: int, micro: int,
    plain: Compute,
) -> tuple[float, float] | None:  # fmt: skip
    """Forward+backward and optimizer seconds under the strategy's wrapper, timed here (a
    pipeline: its schedule's seconds per microbatch, :func:`.framework.pipeline_seconds`)."""
    if info.factory is None:
        return None
    threads, oversub = rank_threads(procs_per_node)
    if c.strategy == "model-parallel":
        per_micro = pipeline_seconds(info.factory, seq, threads, c.pp)
        return None if per_micro is None else (per_micro * oversub, 0.0)
    if c.strategy == "fsdp":
        timed = fsdp_seconds(info.factory, seq, threads, micro, c.dp)
        return (timed[0] * oversub, timed[1] * oversub) if timed else None
    ddp = ddp_seconds(info.factory, seq, threads, micro)
    return (ddp * oversub, plain.optimizer) if ddp else None


def _row(
    info: ModelInfo, c: Candidate, cluster: Cluster, links: Links | None,
    global_batch: int, seq: int | None, optimizer: str, margin: float,
    calibration: dict[str, Any] | None = None, sampled: Sampled | None = None,
) -> Row:  # fmt: skip
    micro = c.micro(global_batch)
    stages = _stage_parts(info, c.pp, micro, seq, optimizer, sampled)
    collectives, fixed = _collectives(), device_workspace_bytes()
    memory = on_device(layout_memory(
        stages, info.layer_params, info.parameters, c.strategy, c.dp, c.microbatches,
        c.interleaved, margin, OPTIMIZER_STATES[optimizer], collectives,
    ), fixed)  # fmt: skip
    computes = _compute(info, c.pp, seq, cluster.procs_per_node, micro, sampled)
    wrapped = _wrapped(info, c, seq, cluster.procs_per_node, micro, computes[0])
    parts, comm_name = step_parts(info, c, micro, computes, links, cluster.procs_per_node, wrapped)
    raw_parts, raw_memory = parts, memory
    if calibration is not None:
        parts = apply(parts, c.kind, calibration)
        memory = on_device(layout_memory(
            stages, info.layer_params, info.parameters, c.strategy, c.dp, c.microbatches,
            c.interleaved, max(margin, float(calibration["memory"]) - 1),
            OPTIMIZER_STATES[optimizer], collectives,
        ), fixed)  # fmt: skip
    step = sum(parts.values())
    return Row(
        candidate=c,
        launch=c.launch_line(cluster.nodes, cluster.procs_per_node),
        micro=micro,
        memory=memory,
        step_s=step,
        parts_s=parts,
        samples_per_s=global_batch / step if step > 0 else 0.0,
        dominant=dominant(parts, comm_name),
        fits=memory.total <= FIT_FRACTION * cluster.memory_bytes,
        raw_parts_s=raw_parts if calibration is not None else None,
        raw_memory=raw_memory if calibration is not None else None,
        calibrated=str(calibration.get("run", "yes")) if calibration is not None else "",
    )
