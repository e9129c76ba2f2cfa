"""The parallelism settings of a cell: one typed, immutable, validated spec for every backend.

Every rule lives here, checked once in ``__post_init__``; each failure is a :class:`SpecError`
whose one-line message says what to change. Backends receive a spec that is already valid.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any

from .errors import SpecError
from .redact import redact_env
from .sweeps import Combination, Sweep


class Strategy(StrEnum):
    NONE = "none"
    DDP = "ddp"
    FSDP = "fsdp"
    MODEL_PARALLEL = "model-parallel"
    PARAMETER_SERVER = "parameter-server"
    HOROVOD = "horovod"

    @property
    def uses_torch(self) -> bool:
        return self in (Strategy.DDP, Strategy.FSDP, Strategy.MODEL_PARALLEL)


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


# Variables that the runtime sets on every rank; a user's --env must not override them. (The
# rendezvous point, MASTER_ADDR and MASTER_PORT, may be chosen, as torchrun's --master-addr.)
RESERVED_ENV = frozenset(
    {
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
    }
)
RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT")
DIST_BACKENDS = ("auto", "nccl", "gloo")
MAX_TIMEOUT = 365 * 24 * 3600.0
MAX_DISPLAY_MB = 60.0  # largest cap of one rich display: it travels in one frame (protocol.frames)
MAX_TEXT = 10_000  # longest --targets/--push/--pull text
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{name} must be a positive integer, got {value!r}")


def enum_value(enum: type[Enum], flag: str, value: Any) -> Any:
    """Convert ``value`` to ``enum``, or fail naming the flag and the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(m.value) for m in enum)
        raise SpecError(f"{flag} must be one of {choices}; got {value!r}") from None


def identifier(flag: str, name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise SpecError(f"{flag}: {name!r} is not a valid Python variable name")
    return name


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
        _positive("--partitions", self.partitions)
        _positive("--microbatches", self.microbatches)
        _positive("--tensor-parallel", self.tensor_parallel)
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

    def __post_init__(self) -> None:
        _positive("--nodes", self.nodes)
        _positive("--procs-per-node", self.procs_per_node)
        object.__setattr__(self, "strategy", enum_value(Strategy, "--strategy", self.strategy))
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
        data: dict[str, Any] = _jsonable(self)
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
        )

    def check_accelerators(self, per_node: int | None, where: str) -> None:
        """Refuse more processes per node than ``where`` has accelerators (when known)."""
        if per_node and self.procs_per_node > per_node:
            raise SpecError(
                f"{self.procs_per_node} processes per node but {where} has {per_node} "
                f"accelerators; use --procs-per-node {per_node} or fewer"
            )


@dataclass(frozen=True)
class BackendOptions:
    """Settings that only one backend understands; each backend subclasses this."""

    backend: str = field(default="", init=False)

    @classmethod
    def from_flags(cls, given: Mapping[str, Any], defaults: Mapping[str, Any]) -> BackendOptions:
        """Build from the flags the cell gave (by field name) over the configured defaults.
        Repeatable flags arrive as lists; a backend overrides this to convert its own."""
        names = {f.name for f in fields(cls) if f.init}
        values = {k: v for k, v in {**defaults, **given}.items() if k in names}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


@dataclass(frozen=True)
class Spec:
    """Everything a ``%%distributed`` cell asked for. Immutable and valid once built."""

    layout: Layout = field(default_factory=Layout)
    backend: str = "local"
    env: tuple[tuple[str, str], ...] = ()
    options: BackendOptions | None = None
    push: tuple[str, ...] = ()
    pull: tuple[str, ...] = ()
    targets: tuple[int, ...] | None = None
    timeout: float | None = None
    display: tuple[int, ...] | None = None  # ranks whose rich displays show (None: all)
    display_max_mb: float = 10.0
    sweep: Sweep | None = None  # the cell's sweep axes (the session runs each combination)
    params: Combination = ()  # one combination's values: variables in the ranks' namespace

    def __post_init__(self) -> None:
        if not self.backend:
            raise SpecError("--backend must not be empty")
        seen: set[str] = set()
        for key, _ in self.env:
            if not _ENV_KEY.match(key):
                raise SpecError(f"--env: {key!r} is not a valid variable name (use K=V)")
            if key in RESERVED_ENV:
                raise SpecError(
                    f"--env {key} is set by jupyter-distributed on every rank; "
                    "change the settings instead"
                )
            if key in seen:
                raise SpecError(f"--env {key} is given twice; keep one")
            seen.add(key)
        for name in self.push:
            identifier("--push", name)
        for name in self.pull:
            identifier("--pull", name)
        if self.options is not None and self.options.backend != self.backend:
            raise SpecError(
                f"options for backend {self.options.backend!r} given with --backend {self.backend}"
            )
        if self.targets is not None:
            if not self.targets:
                raise SpecError("--targets selects no rank")
            bad = [t for t in self.targets if not 0 <= t < self.layout.world_size]
            if bad:
                raise SpecError(
                    f"--targets: rank {bad[0]} does not exist; ranks are "
                    f"0-{self.layout.world_size - 1}"
                )
        if not 0 < self.display_max_mb <= MAX_DISPLAY_MB:
            raise SpecError(
                f"--display-max-mb must be a positive number up to {MAX_DISPLAY_MB:.0f}, "
                f"got {self.display_max_mb}"
            )
        swept = {n for n, _ in self.params} | set(self.sweep.names if self.sweep else ())
        both = sorted(swept & set(self.push))
        if both:
            raise SpecError(f"--push {both[0]} is also swept; push it or sweep it, not both")
        if self.timeout is not None and not 0 < self.timeout <= MAX_TIMEOUT:
            raise SpecError(
                f"--timeout must be a positive number of seconds up to {MAX_TIMEOUT:.0f}, "
                f"got {self.timeout}"
            )

    @property
    def world_size(self) -> int:
        return self.layout.world_size

    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks this cell runs on."""
        return self.targets if self.targets is not None else tuple(range(self.world_size))

    def cluster_key(self) -> tuple[Any, ...]:
        """Settings that define the cluster: cells with the same key reuse its ranks."""
        return (self.backend, self.layout, self.env, self.options)

    def describe_change(self, other: Spec) -> str:
        """Name the cluster settings that differ between ``other`` (old) and ``self`` (new)."""
        changed = [
            f.name
            for f in fields(Layout)
            if getattr(self.layout, f.name) != getattr(other.layout, f.name)
        ]
        if self.backend != other.backend:
            changed.append("backend")
        if self.env != other.env:
            changed.append("env")
        if self.options != other.options:
            changed.append("backend options")
        return ", ".join(changed) or "nothing"

    def to_json(self) -> dict[str, Any]:
        """The spec as stored and served; secret-looking ``--env`` values are masked."""
        data: dict[str, Any] = _jsonable(self)
        data["env"] = [list(pair) for pair in redact_env(self.env)]
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def parse_targets(text: str, world_size: int) -> tuple[int, ...]:
    """``"0,2-3"`` → ``(0, 2, 3)``; every rank is checked against ``world_size`` before a
    range is expanded, so a huge range costs nothing."""
    out: list[int] = []
    if len(text) > MAX_TEXT:
        raise SpecError(f"--targets is {len(text)} characters long; give ranges like 0-7")
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, dash, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if dash else first
        except ValueError:
            raise SpecError(f"--targets: {part!r} is not a rank or a range like 2-3") from None
        if last < first:
            raise SpecError(f"--targets: range {part!r} is empty; write it low-high")
        if first < 0 or last >= world_size:
            raise SpecError(
                f"--targets: rank {last if first >= 0 else first} does not exist; ranks are "
                f"0-{world_size - 1}"
            )
        out.extend(range(first, last + 1))
    return tuple(dict.fromkeys(out))


def parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``["A=1", "B=x=y"]`` → ``(("A", "1"), ("B", "x=y"))``."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise SpecError(f"--env {item!r} must look like KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)


def parse_names(flag: str, text: str) -> tuple[str, ...]:
    return tuple(identifier(flag, n.strip()) for n in text.split(",") if n.strip())
