"""What a layout's memory is made of: one module's traced training step (:class:`Parts`) and the
bytes a rank holds, by component (:class:`Memory`)."""

from __future__ import annotations

from dataclasses import dataclass


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
    # each top-level child's backward at its peak: everything live but the parameters, the
    # optimizer's state and the gradients of the children after it (its own gradients as they
    # are computed, the saved activations, the temporaries)
    unit_bw: tuple[int, ...] = ()
    # the loss's own backward at its peak, not capped at the step's traced peak (which may be the
    # optimizer's step, with fewer activations): its temporaries the size of the output
    loss_bw: int = -1
    inputs: int = 0  # bytes of the batch it was traced on

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optim + self.activations


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


def with_margin(p: int, g: int, o: int, a: int, b: int, margin: float) -> Memory:
    return Memory(p, g, o, a, b, int((p + g + o + a + b) * margin))
