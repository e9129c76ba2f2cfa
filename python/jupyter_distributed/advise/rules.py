"""What the table says beside the numbers: where a layout agrees or disagrees with Megatron-LM's
rules of thumb, and which layouts are on the Pareto front of throughput against memory headroom.

Megatron-LM (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC 2021): tensor parallel inside a server, pipeline across servers, data
parallel for the rest; model parallelism only as far as the model needs to fit (takeaway #2);
a pipeline bubble of (p − 1)/m, small only when m ≫ p.
"""

from __future__ import annotations

import dataclasses

from .enumerate import Row, groups

BUBBLE_OK = 0.25  # (p − 1)/m above this: "m ≫ p" does not hold


def megatron(row: Row, data_parallel_fits: bool, nodes: int, procs_per_node: int) -> str:
    c = row.candidate
    if c.pp == 1:
        return "agrees: data parallel, as the model fits on one rank"
    said: list[str] = []
    if data_parallel_fits:
        said.append("disagrees: a pipeline although data parallel fits (takeaway #2)")
    _, pp_inter = groups(c, procs_per_node)
    if nodes > 1 and not pp_inter:
        said.append("disagrees: pipeline inside a server, not across servers")
    bubble = (c.pp - 1) / c.microbatches
    if bubble > BUBBLE_OK:
        said.append(f"disagrees: bubble (p−1)/m = {bubble:.0%}, wants m ≫ p")
    return "; ".join(said) or f"agrees: pipeline across servers, bubble (p−1)/m = {bubble:.0%}"


def pareto(rows: list[Row], budget: int) -> set[int]:
    """Indices of the fitting rows no other fitting row beats on both predicted samples/s and
    memory headroom (budget − predicted bytes)."""
    fit = [(i, r.samples_per_s, budget - r.memory.total) for i, r in enumerate(rows) if r.fits]
    return {
        i
        for i, s, h in fit
        if not any(s2 >= s and h2 >= h and (s2 > s or h2 > h) for _, s2, h2 in fit)
    }


def annotate(rows: list[Row], budget: int, nodes: int, procs_per_node: int) -> list[Row]:
    """``rows`` with their Megatron verdict and Pareto mark set."""
    dp_fits = any(r.fits and r.candidate.pp == 1 for r in rows)
    front = pareto(rows, budget)
    return [
        dataclasses.replace(
            r, megatron=megatron(r, dp_fits, nodes, procs_per_node), pareto=i in front
        )
        for i, r in enumerate(rows)
    ]
