"""What the kernel's advisor and a rank agree on about a model: where pipeline stages are cut and
what a default batch looks like. Pure (torch only inside the functions), so both the advisor
(:mod:`.advise`) and the worker (:mod:`.worker.pipeline`, :mod:`.worker.measure`) import it.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any


def cut(sizes: list[int], parts: int) -> list[int]:
    """Bounds ``[0, b1, ..., len(sizes)]`` of ``parts`` consecutive pieces of layers whose
    sizes (parameter counts) are as even as the layer boundaries allow."""
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + max(1, size))
    bounds = [0]
    for k in range(1, parts):  # cut where the running total is nearest k/parts of the whole
        target = prefix[-1] * k / parts
        candidates = range(bounds[-1] + 1, len(sizes) - (parts - k) + 1)
        bounds.append(min(candidates, key=lambda i: abs(prefix[i] - target)))
    bounds.append(len(sizes))
    return bounds


def pieces(bounds: list[int]) -> list[tuple[int, int]]:
    return list(pairwise(bounds))


def sample_input(model: Any, batch: int, seq: int | None) -> Any:
    """A batch for ``model`` by its first layer: token ids ``(batch, seq)`` for an Embedding,
    ``(batch, in_features)`` (or ``(batch, seq, in_features)``) for a Linear; None otherwise."""
    import torch

    first = next((m for m in model.modules() if not list(m.children())), None)
    if isinstance(first, torch.nn.Embedding):
        return torch.randint(0, first.num_embeddings, (batch, seq or 1))
    if isinstance(first, torch.nn.Linear):
        shape = (batch, first.in_features) if seq is None else (batch, seq, first.in_features)
        return torch.randn(*shape)
    return None


def loss_of(output: Any) -> Any:
    """The stand-in loss the advisor traces and measures with: a scalar of the output."""
    return output.float().pow(2).mean()
