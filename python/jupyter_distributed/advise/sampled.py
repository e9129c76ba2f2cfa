"""Memory traces at fewer microbatch sizes: per pipeline depth, the smallest and the largest
microbatch the layouts need are traced (on fake tensors); the sizes between them are
interpolated linearly in the microbatch (activations and the stage's output grow with its
samples; parameters, gradients and optimizer state do not). When the two ends peak in
different phases of the step (their parameters, gradients or optimizer state at the peak
differ), every size between is traced instead (the peak is not one line then). Measured on
the suite's models: where the ends agree, the interpolated peak equals the traced one.

Compute is timed at every size (for real, on this machine): timing is a small part of the
time to answer, and one noisy end would carry its noise to every size between. The advice's
notes say which sizes were traced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .memtrace import trace
from .parts import Parts
from .timing import Compute, stage_compute


@dataclass
class Sampled:
    """Each pipeline depth's stages at each microbatch size, and which sizes were measured."""

    parts: dict[tuple[int, int], tuple[Parts, ...]] = field(default_factory=dict)
    computes: dict[tuple[int, int], tuple[Compute, ...]] = field(default_factory=dict)  # timed
    sizes: dict[int, list[int]] = field(default_factory=dict)  # what the layouts need
    traced: dict[int, list[int]] = field(default_factory=dict)  # memory traced at

    def note(self) -> str:
        said = []
        for pp in sorted(self.sizes):
            stages = f"{pp} stages" if pp > 1 else "whole model"
            said.append(f"{stages}: {_listed(self.traced[pp])} of {_listed(self.sizes[pp])}")
        return (
            "memory traced at some microbatch sizes, the others interpolated linearly between "
            "them; compute timed at every size (" + "; ".join(said) + ")"
        )


def _listed(sizes: list[int]) -> str:
    return "/".join(map(str, sizes))


def sample(
    factory: Callable[[], Any],
    needs: dict[int, set[int]],
    seq: int | None,
    optimizer: str,
    threads: int,
) -> Sampled:
    """``needs``: the microbatch sizes each pipeline depth's layouts run at."""
    out = Sampled()
    for pp, micros in needs.items():
        ordered = sorted(micros)
        low, high = ordered[0], ordered[-1]
        for m in ordered:
            out.computes[pp, m] = stage_compute(factory, pp, seq, threads, m)
        for m in {low, high}:
            out.parts[pp, m] = trace(factory, m, seq, optimizer, pp)
        ends = zip(out.parts[pp, low], out.parts[pp, high], strict=True)
        same = all(_fixed(a) == _fixed(b) for a, b in ends)
        for m in ordered[1:-1]:
            w = (m - low) / (high - low)
            out.parts[pp, m] = (
                tuple(
                    _between(a, b, w)
                    for a, b in zip(out.parts[pp, low], out.parts[pp, high], strict=True)
                )
                if same
                else trace(factory, m, seq, optimizer, pp)
            )
        out.traced[pp] = sorted({low, high}) if same else ordered
        out.sizes[pp] = ordered
    return out


def _fixed(p: Parts) -> tuple[int, int, int]:
    return p.params, p.grads, p.optim


def _line(a: float, b: float, w: float) -> float:
    return a + (b - a) * w


def _between(a: Parts, b: Parts, w: float) -> Parts:
    def at(x: int, y: int) -> int:
        return round(_line(x, y, w))

    return dataclasses.replace(
        a,
        activations=at(a.activations, b.activations),
        boundary=at(a.boundary, b.boundary),
        saved=at(a.saved, b.saved),
        loss_peak=at(a.loss_peak, b.loss_peak),
        loss_bw=at(a.loss_bw, b.loss_bw),
        inputs=at(a.inputs, b.inputs),
        unit_saved=tuple(at(x, y) for x, y in zip(a.unit_saved, b.unit_saved, strict=True)),
        unit_bw=tuple(at(x, y) for x, y in zip(a.unit_bw, b.unit_bw, strict=True)),
    )
