"""Backends by name, imported lazily (boto3 or mpi4py load only when their backend is used)."""

from __future__ import annotations

import importlib

from ..errors import SpecError
from .base import Backend

_REGISTRY: dict[str, str] = {
    "local": "jupyter_distributed.backends.local:LocalBackend",
    "mpi": "jupyter_distributed.backends.mpi:MpiBackend",
    "sagemaker": "jupyter_distributed.backends.sagemaker.backend:SageMakerBackend",
}


def names() -> list[str]:
    return sorted(_REGISTRY)


def get_backend(name: str) -> Backend:
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise SpecError(f"unknown --backend {name!r}; choose one of {', '.join(names())}") from None
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    backend: Backend = cls()
    return backend
