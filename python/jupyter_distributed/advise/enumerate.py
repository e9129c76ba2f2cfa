"""Every layout our strategies can launch for a cluster and a global batch, with its predicted
memory and step time.

Launchable today: ``ddp`` and ``fsdp`` over every rank, and ``model-parallel`` (dp × pp with the
``pipeline`` helper, ``--pipeline simple`` = GPipe or ``interleaved`` = 1F1B) for a model that
is an ``nn.Sequential``. Tensor parallel runs only through the user's own code on the mesh, so
it is never enumerated; neither is gradient accumulation (the launch line cannot set it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..modelshapes import cut, pieces
from .intake import ModelInfo
from .parts import Memory

MAX_MICROBATCHES = 32
ONE_MICRO = "model-parallel m=1"  # a pipeline of one microbatch (:attr:`Candidate.kind`)


@dataclass(frozen=True)
class Candidate:
    strategy: str  # ddp, fsdp, model-parallel
    dp: int
    pp: int = 1
    microbatches: int = 1
    interleaved: bool = True  # 1F1B (the pipeline's --pipeline interleaved)

    def micro(self, global_batch: int) -> int:
        return global_batch // (self.dp * self.microbatches)

    def launch_line(self, nodes: int, procs_per_node: int) -> str:
        where = (
            f"--nodes {nodes} --procs-per-node {procs_per_node}"
            if nodes > 1
            else (f"-n {procs_per_node}")
        )
        line = f"%%distributed {where} --strategy {self.strategy}"
        if self.strategy == "model-parallel":
            kind = "interleaved" if self.interleaved else "simple"
            line += f" --partitions {self.pp} --microbatches {self.microbatches} --pipeline {kind}"
        return line

    @property
    def kind(self) -> str:
        """What calibration corrects alike (:func:`.calibrate.kind_of`): the strategy, and a
        pipeline's schedule; a pipeline of one microbatch is a kind of its own (``ONE_MICRO``):
        its stages run one after another, never two ranks' compute and their messages on the
        cores at once, so what a pipelined schedule measured does not carry to it (nor back)."""
        if self.strategy == "model-parallel":
            if self.microbatches == 1:
                return ONE_MICRO
            return f"model-parallel {'1F1B' if self.interleaved else 'GPipe'}"
        return self.strategy

    @property
    def name(self) -> str:
        if self.strategy == "model-parallel":
            kind = "1F1B" if self.interleaved else "GPipe"
            return f"dp{self.dp}×pp{self.pp} m={self.microbatches} {kind}"
        return f"{self.strategy} dp{self.dp}"


def candidates(info: ModelInfo, world: int, global_batch: int) -> list[Candidate]:
    out = [Candidate(s, world) for s in ("ddp", "fsdp") if global_batch % world == 0]
    if not info.sequential:
        return out
    layers = len(info.layer_params)
    for pp in range(2, min(world, layers) + 1):
        if world % pp or not _every_stage_trains(info.layer_params, pp):
            continue
        dp = world // pp
        if global_batch % dp:
            continue
        for m in range(1, min(global_batch // dp, MAX_MICROBATCHES) + 1):
            if (global_batch // dp) % m:
                continue
            out.append(Candidate("model-parallel", dp, pp, m, interleaved=m >= pp))
            if m >= pp:  # GPipe is also launchable there; below it 1F1B runs as GPipe
                out.append(Candidate("model-parallel", dp, pp, m, interleaved=False))
    return out


def _every_stage_trains(layer_params: tuple[int, ...], pp: int) -> bool:
    """Whether each of the pipeline helper's ``pp`` stages holds parameters: a stage without
    (a lone activation between two linear layers) has nothing for its optimizer, which torch
    refuses ("optimizer got an empty parameter list"), so the layout's ranks cannot train."""
    return all(sum(layer_params[a:b]) > 0 for a, b in pieces(cut(list(layer_params), pp)))


def spans_nodes(ranks: list[int], procs_per_node: int) -> bool:
    return len({r // procs_per_node for r in ranks}) > 1


def groups(c: Candidate, procs_per_node: int) -> tuple[bool, bool]:
    """Whether the data-parallel group and the pipeline group of rank 0 span nodes (ranks are
    numbered tensor-parallel fastest, then pipeline stage, then data-parallel replica)."""
    dp_ranks = [d * c.pp for d in range(c.dp)]
    pp_ranks = list(range(c.pp))
    return spans_nodes(dp_ranks, procs_per_node), spans_nodes(pp_ranks, procs_per_node)


@dataclass(frozen=True)
class Row:
    """One layout's advice. Every number is predicted unless its name says measured."""

    candidate: Candidate
    launch: str
    micro: int
    memory: Memory
    step_s: float
    parts_s: dict[str, float]  # compute, communication, bubble, optimizer
    samples_per_s: float
    dominant: str
    fits: bool
    measured: dict[str, Any] | None = None
    raw_parts_s: dict[str, float] | None = None  # before a cluster's corrections (if applied)
    raw_memory: Memory | None = None
    calibrated: str = ""  # the advice run whose corrections were applied
    pareto: bool = False  # on the front of throughput against memory headroom
    megatron: str = ""  # agrees / disagrees with Megatron-LM's rules, and why

    def to_json(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "layout": c.name,
            "launch": self.launch,
            "strategy": c.strategy,
            "kind": c.kind,
            "dp": c.dp,
            "pp": c.pp,
            "microbatches": c.microbatches,
            "micro_batch": self.micro,
            "predicted_gib": self.memory.total / 2**30,
            "predicted_bytes": self.memory.breakdown(),
            "predicted_step_s": self.step_s,
            "predicted_parts_s": self.parts_s,
            "predicted_samples_per_s": self.samples_per_s,
            "dominant": self.dominant,
            "fits": self.fits,
            "measured": self.measured,
            "raw_parts_s": self.raw_parts_s or self.parts_s,
            "raw_bytes": (self.raw_memory or self.memory).breakdown(),
            "calibrated": self.calibrated,
            "pareto": self.pareto,
            "megatron": self.megatron,
        }


def dominant(parts: dict[str, float], comm_name: str) -> str:
    total = sum(parts.values()) or 1.0
    key = max(parts, key=lambda k: parts[k])
    label = comm_name if key == "communication" else key
    return f"{label} {100 * parts[key] / total:.0f} %"
