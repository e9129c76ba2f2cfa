"""The cost model fed given hardware numbers instead of measured ones: a peak FLOP/s and a
fraction of it the GEMMs attain (for the GEMM this machine would time), and a latency and a
bandwidth per link class (for the probe's fit). For replaying published layouts
(``benchmarks/bench_replay.py``), whose papers state their hardware but whose machines we do
not have.

The model is a GPT-style transformer by its numbers, as the papers give it; its compute is
their FLOP count at the given rate, stage by stage; tensor parallelism (Megatron-LM's, which
the launch line cannot set, so the advisor never enumerates it) is costed here as its
all-reduces per layer, on the critical path of each microbatch. Everything else (the DDP
buckets, FSDP's calls, the pipeline's sends, per-tensor all-reduces and bubble) is
:func:`.steptime.step_parts`, unchanged: the advisor's own model, its ranks being whole
tensor-parallel groups. Not modelled: the optimizer's step (no memory bandwidth is given),
overlap of communication with compute, virtual stages of an interleaved schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .comm import Links
from .enumerate import Candidate
from .intake import AdviseError, ModelInfo
from .steptime import step_parts
from .timing import Compute

RECOMPUTE = ("none", "selective", "full")
STRATEGIES = ("megatron", "zero3")


@dataclass(frozen=True)
class Hardware:
    peak_flops: float  # per device
    procs_per_node: int
    latency: dict[str, float]  # seconds per link class ("intra", "inter")
    bandwidth: dict[str, float]  # bytes/s per link class, per device
    efficiency: float = 1.0  # fraction of peak the GEMMs attain
    name: str = "given"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Hardware:
        try:
            hw = cls(
                float(d["peak_flops"]),
                int(d["procs_per_node"]),
                {k: float(d[k]["latency_s"]) for k in ("intra", "inter")},
                {k: float(d[k]["bandwidth_Bps"]) for k in ("intra", "inter")},
                float(d.get("efficiency", 1.0)),
                str(d.get("name", "given")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AdviseError(f"hardware: missing or bad field {exc}") from None
        numbers = [hw.peak_flops, hw.procs_per_node, hw.efficiency, *hw.bandwidth.values()]
        if min(numbers) <= 0 or min(hw.latency.values()) < 0 or hw.efficiency > 1:
            raise AdviseError(
                "hardware: peak, procs per node and bandwidths must be positive, latencies "
                "not negative, efficiency in (0, 1]"
            )
        return hw

    def links(self) -> Links:
        """The links as :mod:`.comm` costs them: latency + bytes/bandwidth per call, no curve."""
        return Links(dict(self.latency), dict(self.bandwidth), f"given: {self.name}")


@dataclass(frozen=True)
class Transformer:
    hidden: int
    heads: int
    layers: int
    seq: int
    vocab: int = 0  # 0: no logit layer
    width: int = 2  # bytes per value (16-bit)

    @property
    def layer_params(self) -> int:
        return 12 * self.hidden**2 + 13 * self.hidden

    @property
    def parameters(self) -> int:
        """Narayanan et al.'s Eq. 2: 12lh²(1 + 13/12h + (V + s)/12lh)."""
        return self.layers * self.layer_params + (self.vocab + self.seq) * self.hidden


@dataclass(frozen=True)
class Layout:
    strategy: str  # megatron (tp × pp × dp) or zero3 (FSDP over every device)
    dp: int
    tp: int
    pp: int
    micro: int
    global_batch: int
    recompute: str = "full"

    @property
    def microbatches(self) -> int:
        return self.global_batch // (self.dp * self.micro)


def _check(m: Transformer, lay: Layout) -> None:
    if lay.strategy not in STRATEGIES or lay.recompute not in RECOMPUTE:
        raise AdviseError(
            f"layout: strategy one of {', '.join(STRATEGIES)}, recompute one of "
            f"{', '.join(RECOMPUTE)}; got {lay.strategy!r}, {lay.recompute!r}"
        )
    if min(lay.dp, lay.tp, lay.pp, lay.micro) < 1 or lay.global_batch % (lay.dp * lay.micro):
        raise AdviseError(
            f"layout: global batch {lay.global_batch} is not a whole number of microbatches of "
            f"{lay.micro} on {lay.dp} data-parallel replicas"
        )
    if m.layers % lay.pp:
        raise AdviseError(f"layout: {m.layers} layers do not split into {lay.pp} equal stages")
    if lay.strategy == "zero3" and (lay.tp, lay.pp, lay.microbatches) != (1, 1, 1):
        raise AdviseError("layout: zero3 is modelled without model parallelism or accumulation")


def stages(m: Transformer, lay: Layout, hw: Hardware) -> tuple[tuple[Compute, ...], float]:
    """Each pipeline stage's compute at one microbatch (its FLOPs at the given rate, plus its
    tensor-parallel all-reduces), and the seconds of those all-reduces per microbatch."""
    b, s, h, t = lay.micro, m.seq, m.hidden, lay.tp
    extra = {"none": (0, 0), "selective": (0, 1), "full": (1, 1)}[lay.recompute]
    # one layer's forward: 24bsh² in its GEMMs and 4bs²h in attention scores (Narayanan et al.,
    # appendix); backward twice that; recomputation one more forward (selective: scores only)
    layer = ((3 + extra[0]) * 24 * b * s * h * h + (3 + extra[1]) * 4 * b * s * s * h) / t
    rate = hw.peak_flops * hw.efficiency
    per_stage = m.layers // lay.pp
    links = hw.links()
    tp_calls = per_stage * (4 + 2 * extra[0])  # 2 forward, 2 backward, 2 per recomputed forward
    tp_s = tp_calls * links.allreduce(b * s * h * m.width, t, t > hw.procs_per_node)
    weights = (3 * h * h, h * h, 4 * h * h, 4 * h * h)
    out = []
    for i in range(lay.pp):
        flops = per_stage * layer + (6 * b * s * h * m.vocab / t if i == lay.pp - 1 else 0)
        tensors = tuple(w * m.width // t for _ in range(per_stage) for w in weights)
        out.append(Compute(flops / rate + tp_s, 0.0, tensors, b * s * h * m.width))
    return tuple(out), tp_s


def step(m: Transformer, lay: Layout, hw: Hardware) -> tuple[dict[str, float], str, float]:
    """Predicted seconds of each part of one step, the communication named, and the seconds of
    tensor-parallel all-reduce within them (on the critical path of every microbatch)."""
    _check(m, lay)
    computes, tp_s = stages(m, lay, hw)
    groups_per_node = max(1, hw.procs_per_node // lay.tp)  # the advisor's ranks: TP groups
    layer = m.layer_params * m.width
    info = ModelInfo(
        name=f"given {m.parameters / 1e9:.1f}B",
        parameters=m.parameters,
        layer_params=(m.layer_params,) * m.layers,
        sequential=True,
        units=(m.layer_params,) * m.layers,
    )
    m_b = lay.microbatches
    if lay.strategy == "zero3":
        one = computes[0]
        fsdp = Compute(one.fwd_bwd, 0.0, tuple(layer for _ in range(m.layers)), one.boundary)
        parts, name = step_parts(info, Candidate("fsdp", lay.dp), lay.micro, (fsdp,), hw.links(),
                                 groups_per_node)  # fmt: skip
        return parts, name, 0.0
    if lay.pp == 1:  # accumulation: m microbatches, then DDP's bucketed all-reduce
        (one,) = computes
        acc = Compute(one.fwd_bwd * m_b, 0.0, one.tensors, one.boundary)
        parts, name = step_parts(info, Candidate("ddp", lay.dp), lay.micro, (acc,), hw.links(),
                                 groups_per_node)  # fmt: skip
        return parts, name, tp_s * m_b
    cand = Candidate("model-parallel", lay.dp, lay.pp, m_b, interleaved=True)
    parts, name = step_parts(info, cand, lay.micro, computes, hw.links(), groups_per_node)
    return parts, name, tp_s * (m_b + lay.pp - 1)
