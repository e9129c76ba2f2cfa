"""The model the advisor plans for: a zero-argument factory built on fake tensors (nothing is
allocated), or bare numbers for an analytic fallback that says what it did not trace.

A Hugging Face config is not taken here: transformers is not a dependency, and the advisor
says so rather than guessing (see :func:`from_hf_config`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..modelshapes import sample_input

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


class AdviseError(SpecError):
    """Bad input to the advisor: one line that says what to change."""


@dataclass(frozen=True)
class Analytic:
    """A transformer by its numbers (the fallback: activations from a formula, not a trace)."""

    parameters: int
    layers: int
    hidden: int
    heads: int
    vocab: int
    dtype: str = "bf16"

    def __post_init__(self) -> None:
        for name in ("parameters", "layers", "hidden", "heads", "vocab"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AdviseError(
                    f"analytic model: {name} must be a positive integer, got {value!r}"
                )
        if self.dtype not in DTYPE_BYTES:
            raise AdviseError(f"analytic model: dtype must be one of {', '.join(DTYPE_BYTES)}")


@dataclass(frozen=True)
class ModelInfo:
    name: str
    parameters: int  # count
    layer_params: tuple[int, ...]  # per top-level layer (stages are cut between them)
    sequential: bool  # can the pipeline helper cut it (an nn.Sequential)
    units: tuple[int, ...] = ()  # parameters per FSDP unit (each child with any, then the root)
    factory: Callable[[], Any] | None = None
    analytic: Analytic | None = None

    @property
    def traced(self) -> bool:
        return self.factory is not None


def from_factory(factory: Callable[[], Any], seq: int | None) -> ModelInfo:
    """Call ``factory()`` under FakeTensorMode; a factory that raises or returns no module is
    one line naming it."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    name = getattr(factory, "__name__", type(factory).__name__)
    if not callable(factory):
        raise AdviseError(f"--model {name}: not a function; give a zero-argument model factory")
    try:
        with FakeTensorMode():
            model = factory()
            batch = sample_input(model, 1, seq) if isinstance(model, torch.nn.Module) else None
    except Exception as exc:  # noqa: BLE001 (the user's code: any error is theirs, said in one line)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise AdviseError(
            f"--model {name}: {name}() raised {type(exc).__name__}: {first} "
            "(the advisor calls it with no arguments, on fake tensors)"
        ) from None
    if not isinstance(model, torch.nn.Module):
        raise AdviseError(
            f"--model {name}: {name}() returned {type(model).__name__}, not a torch.nn.Module"
        )
    if batch is None:
        raise AdviseError(
            f"--model {name}: its first layer is neither nn.Embedding nor nn.Linear, so the "
            "advisor cannot make a batch for it"
        )
    children = list(model.children()) if isinstance(model, torch.nn.Sequential) else [model]
    sizes = tuple(sum(p.numel() for p in c.parameters()) for c in children)
    total = sum(p.numel() for p in model.parameters())
    units = [sum(p.numel() for p in c.parameters()) for c in model.children()]
    units = [u for u in units if u] + [total - sum(units)]  # the root keeps what is left
    return ModelInfo(
        name=name,
        parameters=total,
        layer_params=sizes,
        sequential=isinstance(model, torch.nn.Sequential),
        factory=factory,
        units=tuple(u for u in units if u),
    )


def from_numbers(analytic: Analytic) -> ModelInfo:
    per_layer = max(1, analytic.parameters // analytic.layers)
    return ModelInfo(
        name=f"analytic {_millions(analytic.parameters)}",
        parameters=analytic.parameters,
        layer_params=(per_layer,) * analytic.layers,
        sequential=False,  # (a model given by numbers has no module to cut into stages)
        analytic=analytic,
    )


def from_hf_config(config: Any) -> ModelInfo:
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise AdviseError(
            "a Hugging Face config needs transformers, which is not installed here; give a "
            "model factory (--model NAME) or the model's numbers instead"
        ) from None
    raise AdviseError(  # pragma: no cover (transformers is not installed where this is tested)
        "Hugging Face configs are not read yet; give a model factory that builds the model"
    )


def _millions(parameters: int) -> str:
    """125M, 1300M, 0.1M: a model's size as people say it, never "0M"."""
    m = parameters / 1e6
    return f"{m:.0f}M" if m >= 10 else f"{m:.2g}M"
