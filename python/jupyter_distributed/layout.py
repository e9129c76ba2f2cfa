"""Where the ranks of a cell sit: nodes × processes, the strategy and the model-parallel split.

Kept apart from :mod:`.spec` because a rank needs it too: the worker runtime reads its
coordinates from a :class:`Layout` and ships to SageMaker with it, while the rest of the spec
(environment, backend options, sweeps) stays in the kernel. Every rule on the layout is checked
once in ``__post_init__`` and fails with a :class:`SpecError` that says what to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from typing import Any

from .errors import SpecError


class Strategy(StrEnum):
    NONE = "none"
    DDP = "ddp"
    FSDP = "fsdp"
    MODEL_PARALLEL = "model-parallel"
    PARAMETER_SERVER = "parameter-server"
    HOROVOD = "horovod"
    MULTI_WORKER = "multi-worker"  # TensorFlow's MultiWorkerMirroredStrategy

    @property
    def uses_torch(self) -> bool:
        return self in (Strategy.DDP, Strategy.FSDP, Strategy.MODEL_PARALLEL)


class Framework(StrEnum):
    """What a strategy is built with where it could be either (``--framework``)."""

    TORCH = "torch"
    TENSORFLOW = "tensorflow"


# the strategies that --framework tensorflow applies to
TENSORFLOW_STRATEGIES = ("parameter-server", "multi-worker", "horovod")
# --framework tensorflow --strategy parameter-server: the kernel's opt-in ("1") to servers on
# several hosts, and the kernel's host as the ranks reach it (the chief in TF_CONFIG)
TF_ACROSS_HOSTS_ENV = "JD_TF_ACROSS_HOSTS"
TF_CHIEF_HOST_ENV = "JD_TF_CHIEF_HOST"


class Pipeline(StrEnum):
    SIMPLE = "simple"
    INTERLEAVED = "interleaved"


class Placement(StrEnum):
    SPREAD = "spread"
    CLUSTER = "cluster"


class Optimize(StrEnum):
    SPEED = "speed"
    MEMORY = "memory"


class Role(StrEnum):
    WORKER = "worker"
    PARAMETER_SERVER = "ps"


DIST_BACKENDS = ("auto", "nccl", "gloo")


def positive(name: str, value: int) -> None:
    """Refuse anything but a positive ``int`` (``True`` included) for ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{name} must be a positive integer, got {value!r}")


def enum_value(enum: type[Enum], flag: str, value: Any) -> Any:
    """Convert ``value`` to ``enum``, or fail naming the flag and the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(m.value) for m in enum)
        raise SpecError(f"{flag} must be one of {choices}; got {value!r}") from None


@dataclass(frozen=True)
class ModelParallel:
    """Model-parallel settings, named as SageMaker's ``smdistributed.modelparallel`` names them."""

    partitions: int = 1
    microbatches: int = 1
    pipeline: Pipeline = Pipeline.INTERLEAVED
    placement: Placement = Placement.CLUSTER
    optimize: Optimize = Optimize.SPEED
    tensor_parallel: int = 1

    def __post_init__(self) -> None:
        positive("--partitions", self.partitions)
        positive("--microbatches", self.microbatches)
        positive("--tensor-parallel", self.tensor_parallel)
        object.__setattr__(self, "pipeline", enum_value(Pipeline, "--pipeline", self.pipeline))
        object.__setattr__(self, "placement", enum_value(Placement, "--placement", self.placement))
        object.__setattr__(self, "optimize", enum_value(Optimize, "--optimize", self.optimize))

    @property
    def model_degree(self) -> int:
        return self.partitions * self.tensor_parallel


@dataclass(frozen=True)
class RankCoords:
    """Where a rank sits in the parallel layout."""

    rank: int
    local_rank: int
    node_rank: int
    data_parallel: int
    pipeline_stage: int
    tensor_parallel: int
    role: Role = Role.WORKER

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node_rank": self.node_rank,
            "data_parallel": self.data_parallel,
            "pipeline_stage": self.pipeline_stage,
            "tensor_parallel": self.tensor_parallel,
            "role": self.role.value,
        }


@dataclass(frozen=True)
class Layout:
    """How many processes, where, and how they split the work."""

    nodes: int = 1
    procs_per_node: int = 1
    strategy: Strategy = Strategy.NONE
    model_parallel: ModelParallel | None = None
    parameter_servers: int = 0
    dist_backend: str = "auto"  # torch's process group: auto (decided once per cluster), nccl, gloo
    framework: Framework | None = None  # None: as each strategy always was

    def __post_init__(self) -> None:
        positive("--nodes", self.nodes)
        positive("--procs-per-node", self.procs_per_node)
        object.__setattr__(self, "strategy", enum_value(Strategy, "--strategy", self.strategy))
        self._check_framework()
        if self.dist_backend not in DIST_BACKENDS:
            raise SpecError(
                f"--dist-backend must be one of {', '.join(DIST_BACKENDS)}, "
                f"got {self.dist_backend!r}"
            )
        if self.dist_backend != "auto" and not self.strategy.uses_torch:
            raise SpecError("--dist-backend needs a torch strategy (ddp, fsdp, model-parallel)")
        mp = self.model_parallel
        if mp is not None and self.strategy is not Strategy.MODEL_PARALLEL:
            raise SpecError(
                "--partitions, --microbatches, --pipeline, --placement, --optimize and "
                "--tensor-parallel need --strategy model-parallel"
            )
        if self.strategy is Strategy.MODEL_PARALLEL:
            if mp is None:
                mp = ModelParallel()
                object.__setattr__(self, "model_parallel", mp)
            if self.world_size % mp.model_degree:
                raise SpecError(
                    f"world size {self.world_size} is not divisible by partitions × "
                    f"tensor-parallel = {mp.model_degree}; change --partitions, "
                    "--tensor-parallel or the number of processes"
                )
        if self.parameter_servers and self.strategy is not Strategy.PARAMETER_SERVER:
            raise SpecError("--parameter-servers needs --strategy parameter-server")
        if self.strategy is Strategy.PARAMETER_SERVER:
            if self.parameter_servers == 0:
                object.__setattr__(self, "parameter_servers", 1)
            if self.parameter_servers < 0 or self.parameter_servers >= self.world_size:
                raise SpecError(
                    f"--parameter-servers {self.parameter_servers} leaves no worker among "
                    f"{self.world_size} ranks; use fewer servers or more processes"
                )

    def _check_framework(self) -> None:
        if self.framework is not None:
            framework = enum_value(Framework, "--framework", self.framework)
            object.__setattr__(self, "framework", framework)
        if self.strategy is Strategy.MULTI_WORKER:
            if self.framework is Framework.TORCH:
                raise SpecError(
                    "--strategy multi-worker is TensorFlow's; for torch use --strategy ddp"
                )
            object.__setattr__(self, "framework", Framework.TENSORFLOW)
        if self.framework is Framework.TENSORFLOW and self.strategy not in TENSORFLOW_STRATEGIES:
            raise SpecError(
                f"--framework tensorflow applies to --strategy {', '.join(TENSORFLOW_STRATEGIES)}"
                f"; got --strategy {self.strategy.value}"
            )

    @property
    def uses_tensorflow(self) -> bool:
        return self.framework is Framework.TENSORFLOW

    @property
    def ports(self) -> int:
        """Ports in a row from ``MASTER_PORT`` the ranks listen on: TensorFlow's tasks take
        ``MASTER_PORT + 1 + rank`` and its chief the one after; torch only ``MASTER_PORT``."""
        if self.strategy in (Strategy.PARAMETER_SERVER, Strategy.MULTI_WORKER):
            return self.world_size + 2
        return 1

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node

    @property
    def data_parallel_degree(self) -> int:
        if self.model_parallel is not None:
            return self.world_size // self.model_parallel.model_degree
        if self.strategy is Strategy.PARAMETER_SERVER:
            return self.world_size - self.parameter_servers
        return self.world_size

    def coords(self, rank: int) -> RankCoords:
        """Coordinates of ``rank``: tensor-parallel varies fastest, then pipeline, then data."""
        node, local = divmod(rank, self.procs_per_node)
        tp = pp = 0
        dp = rank
        role = Role.WORKER
        if self.model_parallel is not None:
            t, p = self.model_parallel.tensor_parallel, self.model_parallel.partitions
            dp, rest = divmod(rank, t * p)
            pp, tp = divmod(rest, t)
        elif self.strategy is Strategy.PARAMETER_SERVER:
            if rank < self.parameter_servers:
                role, dp = Role.PARAMETER_SERVER, 0
            else:
                dp = rank - self.parameter_servers
        return RankCoords(rank, local, node, dp, pp, tp, role)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = jsonable(self)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        mp = data.get("model_parallel")
        return cls(
            nodes=int(data["nodes"]),
            procs_per_node=int(data["procs_per_node"]),
            strategy=Strategy(data["strategy"]),
            model_parallel=ModelParallel(**mp) if mp else None,
            parameter_servers=int(data.get("parameter_servers", 0)),
            dist_backend=str(data.get("dist_backend", "auto")),
            framework=Framework(data["framework"]) if data.get("framework") else None,
        )

    def check_accelerators(self, per_node: int | None, where: str) -> None:
        """Refuse more processes per node than ``where`` has accelerators (when known)."""
        if per_node and self.procs_per_node > per_node:
            raise SpecError(
                f"{self.procs_per_node} processes per node but {where} has {per_node} "
                f"accelerators; use --procs-per-node {per_node} or fewer"
            )


def jsonable(value: Any) -> Any:
    """Dataclasses, enums and tuples as plain JSON values, for storing and serving."""
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    return value
