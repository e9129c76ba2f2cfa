"""``--strategy horovod``: an ``hvd`` object with Horovod's everyday API.

Real Horovod when it is installed; otherwise the same calls over mpi4py when the rank runs under
MPI, or over torch.distributed (gloo) on the local backend. Tensors may be torch tensors, NumPy
arrays or plain numbers; results have the type of the input. ``--framework tensorflow`` gives
``horovod.tensorflow``'s API over the same transports (:mod:`.horovod_tf`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Protocol

from .errors import StrategyError

MPI_ENV = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def under_mpi() -> bool:
    return any(name in os.environ for name in MPI_ENV)


class _Ops(Protocol):
    """Collectives on NumPy arrays (MPI) or torch tensors (gloo)."""

    name: str

    def allreduce(self, value: Any) -> Any: ...

    def allgather(self, value: Any) -> list[Any]: ...

    def broadcast(self, value: Any, root: int) -> Any: ...

    def broadcast_object(self, obj: Any, root: int) -> Any: ...


class _MpiOps:
    name = "mpi4py"

    def __init__(self) -> None:
        from mpi4py import MPI

        self.comm = MPI.COMM_WORLD

    def allreduce(self, value: Any) -> Any:
        import numpy as np

        array = np.ascontiguousarray(value)
        out = np.empty_like(array)
        self.comm.Allreduce(array, out)
        return out.reshape(np.shape(value))  # a scalar stays one (ascontiguousarray made it 1-d)

    def allgather(self, value: Any) -> list[Any]:
        return list(self.comm.allgather(value))

    def broadcast(self, value: Any, root: int) -> Any:
        import numpy as np

        array = np.ascontiguousarray(value)
        self.comm.Bcast(array, root=root)
        return array.reshape(np.shape(value))

    def broadcast_object(self, obj: Any, root: int) -> Any:
        return self.comm.bcast(obj, root=root)


class _TorchOps:
    name = "torch.distributed (gloo)"

    def __init__(self) -> None:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("gloo", init_method="env://")
        self.dist = dist

    def allreduce(self, value: Any) -> Any:
        import torch

        tensor = torch.as_tensor(value).clone()
        self.dist.all_reduce(tensor)
        return tensor

    def allgather(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.dist.get_world_size()
        self.dist.all_gather_object(out, value)
        return out

    def broadcast(self, value: Any, root: int) -> Any:
        import torch

        tensor = torch.as_tensor(value).clone()
        self.dist.broadcast(tensor, src=root)
        return tensor

    def broadcast_object(self, obj: Any, root: int) -> Any:
        box = [obj]
        self.dist.broadcast_object_list(box, src=root)
        return box[0]


def _like(result: Any, original: Any) -> Any:
    """Give ``result`` the type (and device) of ``original``."""
    torch = sys.modules.get("torch")  # a torch tensor implies torch is imported
    if torch is not None and isinstance(original, torch.Tensor):
        return torch.as_tensor(result, dtype=original.dtype).to(original.device)
    if isinstance(original, int | float):
        return type(original)(result.item() if hasattr(result, "item") else result)
    if type(result).__module__.startswith("torch"):
        return result.numpy()
    return result


def _host(value: Any) -> Any:
    """A torch tensor as a NumPy array for MPI; anything else unchanged."""
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().numpy()
    return value


class Hvd:
    """What ``import horovod.torch as hvd`` gives, over MPI or gloo."""

    Average, Sum = "average", "sum"

    def __init__(self, ops: _Ops) -> None:
        self._ops = ops
        self.transport = ops.name

    def init(self) -> None:
        """Nothing to do: the rank is ready before the cell runs (kept for Horovod code)."""

    def rank(self) -> int:
        return int(os.environ["RANK"])

    def size(self) -> int:
        return int(os.environ["WORLD_SIZE"])

    def local_rank(self) -> int:
        return int(os.environ["LOCAL_RANK"])

    def local_size(self) -> int:
        return int(os.environ["LOCAL_WORLD_SIZE"])

    def allreduce(
        self,
        value: Any,
        average: bool | None = None,
        op: str | None = None,
        name: str | None = None,
        **_: Any,  # Horovod's compression, prescale_factor, ...: accepted and ignored
    ) -> Any:
        """Sum over ranks, divided by the world size unless ``op=hvd.Sum``/``average=False``."""
        return self._allreduce(value, self._mean(average, op))

    def _allreduce(self, value: Any, mean: bool) -> Any:
        total = self._ops.allreduce(self._send(value))
        if mean:
            total = total / self.size()
        return self._back(total, value)

    def _mean(self, average: bool | None, op: str | None) -> bool:
        return op != self.Sum if average is None else average

    def _send(self, value: Any) -> Any:
        """``value`` as the transport takes it."""
        return _host(value) if isinstance(self._ops, _MpiOps) else value

    def _back(self, result: Any, original: Any) -> Any:
        """The transport's ``result`` with the type of ``original``."""
        return _like(result, original)

    def allgather(self, value: Any, name: str | None = None) -> list[Any]:
        """Every rank's ``value``, in rank order (Horovod concatenates; lists are clearer)."""
        return self._ops.allgather(value)

    def allgather_object(self, obj: Any) -> list[Any]:
        return self._ops.allgather(obj)

    def broadcast(self, value: Any, root_rank: int, name: str | None = None) -> Any:
        return self._back(self._ops.broadcast(self._send(value), root_rank), value)

    def broadcast_object(self, obj: Any, root_rank: int = 0) -> Any:
        return self._ops.broadcast_object(obj, root_rank)

    def broadcast_parameters(self, params: Any, root_rank: int = 0) -> None:
        """Copy ``root_rank``'s parameters (a state_dict or named_parameters) into every rank."""
        import torch

        items = params.items() if hasattr(params, "items") else params
        with torch.no_grad():
            for _, tensor in items:
                tensor.copy_(self.broadcast(tensor, root_rank))

    def DistributedOptimizer(self, optimizer: Any, named_parameters: Any = None) -> Any:
        """Wrap ``optimizer`` so that ``step()`` first averages gradients over all ranks."""
        return _AveragingOptimizer(optimizer, self)


class _AveragingOptimizer:
    def __init__(self, optimizer: Any, hvd: Hvd) -> None:
        self._optimizer, self._hvd = optimizer, hvd

    def step(self, closure: Any = None) -> Any:
        import torch

        with torch.no_grad():
            for group in self._optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.copy_(self._hvd.allreduce(p.grad))
        return self._optimizer.step(closure)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._optimizer, name)


def make_hvd() -> Any:
    """Real Horovod if importable, else MPI under mpirun, else gloo on the local backend."""
    return real_horovod("horovod.torch") or Hvd(transport("--strategy horovod"))


def real_horovod(module: str) -> Any:
    """Horovod's ``module``, initialised, if Horovod is installed; else None."""
    try:
        real_hvd = importlib.import_module(module)
    except ImportError:
        return None
    real_hvd.init()
    return real_hvd


def transport(what: str) -> _Ops:
    """mpi4py under MPI, else torch.distributed's gloo; one line naming what to install."""
    if under_mpi():
        try:
            return _MpiOps()
        except ImportError:
            raise StrategyError(f"{what} under MPI needs mpi4py: pip install mpi4py") from None
    try:
        return _TorchOps()
    except ImportError:
        raise StrategyError(
            f"{what} on the local backend needs torch for its gloo transport "
            "(pip install torch); or use --backend mpi with mpi4py"
        ) from None
