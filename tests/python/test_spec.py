"""The spec: every rule checked once, with a message that says what to change."""

from __future__ import annotations

import pytest

from jupyter_distributed.errors import SpecError
from jupyter_distributed.layout import Framework, Layout, ModelParallel, Role, Strategy
from jupyter_distributed.spec import Spec, parse_env, parse_targets


def test_world_size_and_default_layout() -> None:
    layout = Layout(nodes=2, procs_per_node=4)
    assert layout.world_size == 8
    assert layout.coords(5).node_rank == 1 and layout.coords(5).local_rank == 1


def test_model_parallel_coordinates_tensor_fastest_then_pipeline_then_data() -> None:
    layout = Layout(1, 8, Strategy.MODEL_PARALLEL, ModelParallel(partitions=2, tensor_parallel=2))
    assert layout.data_parallel_degree == 2
    got = [
        (c.data_parallel, c.pipeline_stage, c.tensor_parallel) for c in map(layout.coords, range(8))
    ]
    assert got == [
        (0, 0, 0),
        (0, 0, 1),
        (0, 1, 0),
        (0, 1, 1),
        (1, 0, 0),
        (1, 0, 1),
        (1, 1, 0),
        (1, 1, 1),
    ]


def test_indivisible_world_size_names_both_numbers() -> None:
    with pytest.raises(
        SpecError,
        match=r"world size 6 is not divisible by partitions × "
        r"tensor-parallel = 4",
    ):
        Layout(1, 6, Strategy.MODEL_PARALLEL, ModelParallel(partitions=2, tensor_parallel=2))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"partitions": 0}, "--partitions must be a positive integer"),
        ({"microbatches": -1}, "--microbatches must be a positive integer"),
        ({"pipeline": "zigzag"}, "--pipeline must be one of simple, interleaved"),
        ({"placement": "far"}, "--placement must be one of spread, cluster"),
        ({"optimize": "size"}, "--optimize must be one of speed, memory"),
    ],
)
def test_model_parallel_settings_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        ModelParallel(**kwargs)  # type: ignore[arg-type]


def test_model_parallel_flags_need_the_strategy() -> None:
    with pytest.raises(SpecError, match="need --strategy model-parallel"):
        Layout(1, 2, Strategy.DDP, ModelParallel(partitions=2))


def test_unknown_strategy_lists_the_choices() -> None:
    with pytest.raises(SpecError, match="--strategy must be one of none, ddp, fsdp"):
        Layout(strategy="pipedream")  # type: ignore[arg-type]


def test_parameter_server_roles() -> None:
    layout = Layout(1, 4, Strategy.PARAMETER_SERVER, parameter_servers=1)
    assert [layout.coords(r).role for r in range(4)] == [Role.PARAMETER_SERVER] + [Role.WORKER] * 3
    assert layout.data_parallel_degree == 3
    with pytest.raises(SpecError, match="leaves no worker"):
        Layout(1, 2, Strategy.PARAMETER_SERVER, parameter_servers=2)


def test_accelerator_limit_names_both_numbers() -> None:
    with pytest.raises(SpecError, match=r"8 processes per node but ml\.g5\.xlarge has 1"):
        Layout(1, 8).check_accelerators(1, "ml.g5.xlarge")


def test_targets_env_and_names() -> None:
    assert parse_targets("0,2-3,2", 4) == (0, 2, 3)
    with pytest.raises(SpecError, match="rank 4 does not exist; ranks are 0-3"):
        Spec(Layout(1, 4), targets=(4,))
    with pytest.raises(SpecError, match="is set by jupyter-distributed"):
        Spec(env=parse_env(["RANK=3"]))
    with pytest.raises(SpecError, match="must look like KEY=VALUE"):
        parse_env(["NOEQUALS"])
    with pytest.raises(SpecError, match="not a valid Python variable name"):
        Spec(push=("1x",))
    with pytest.raises(SpecError, match="--timeout must be a positive"):
        Spec(timeout=0)


def test_cluster_key_ignores_per_cell_settings() -> None:
    a = Spec(Layout(1, 2), push=("x",), timeout=3)
    b = Spec(Layout(1, 2), pull=("y",), targets=(1,))
    assert a.cluster_key() == b.cluster_key()
    c = Spec(Layout(1, 3))
    assert c.cluster_key() != a.cluster_key()
    assert c.describe_change(a) == "procs_per_node"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "ddp", "framework": "tensorflow"}, "--framework tensorflow applies to"),
        ({"strategy": "multi-worker", "framework": "torch"}, "for torch use --strategy ddp"),
        ({"strategy": "horovod", "framework": "jax"}, "--framework must be one of"),
    ],
)
def test_framework_fits_its_strategy(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Layout(procs_per_node=2, **kwargs)  # type: ignore[arg-type]


def test_multi_worker_is_tensorflow_and_the_framework_survives_json() -> None:
    assert Layout(procs_per_node=2, strategy=Strategy.MULTI_WORKER).uses_tensorflow
    ps = Layout(
        procs_per_node=3, strategy=Strategy.PARAMETER_SERVER, framework=Framework.TENSORFLOW
    )
    assert Layout.from_json(ps.to_json()) == ps
    assert Layout(procs_per_node=3, strategy=Strategy.PARAMETER_SERVER).framework is None
