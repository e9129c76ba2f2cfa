"""The parts of ``--strategy parameter-server --framework tensorflow`` that need no TensorFlow:
task addresses, the chief, the cross-host opt-in, naming dead tasks, free names."""

from __future__ import annotations

import pytest

from jupyter_distributed.cell_spec import spec_from_args
from jupyter_distributed.errors import SpecError
from jupyter_distributed.layout import TF_ACROSS_HOSTS_ENV, Framework, Layout, Strategy
from jupyter_distributed.magics import _parsed
from jupyter_distributed.settings import Distributed
from jupyter_distributed.tf_coordinator import free_name, tasks_lost
from jupyter_distributed.worker.errors import StrategyError
from jupyter_distributed.worker.param_server import rank_hosts, setup_parameter_server

TF_PS = Layout(procs_per_node=3, strategy=Strategy.PARAMETER_SERVER, framework=Framework.TENSORFLOW)


def _set_up(
    monkeypatch: pytest.MonkeyPatch, layout: Layout, rank: int, port: int
) -> dict[str, object]:
    """A rank's set-up; the cluster spec it would start its server with, in ``tf_cluster``."""
    monkeypatch.setenv("TF_CONFIG", "")  # (set by the set-up; restored after the test)
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setattr(
        "jupyter_distributed.worker.param_server.start_server", lambda config: config
    )
    namespace: dict[str, object] = {}
    setup_parameter_server(layout, namespace)
    return namespace


def test_tf_config_names_the_kernel_as_chief_each_task_at_its_own_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Ray (and anywhere JD_RANK_HOSTS is given) each rank's task is at its own host;
    several hosts are refused without the opt-in, allowed with it, the chief at the kernel."""
    layout = Layout(nodes=3, strategy=Strategy.PARAMETER_SERVER, framework=Framework.TENSORFLOW)
    monkeypatch.setenv("JD_RANK_HOSTS", "10.0.0.1,10.0.0.2,10.0.0.3")
    monkeypatch.setenv("JD_TF_CHIEF_HOST", "kernel-host")
    monkeypatch.delenv(TF_ACROSS_HOSTS_ENV, raising=False)
    assert rank_hosts(layout) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    with pytest.raises(StrategyError) as refused:
        _set_up(monkeypatch, layout, 2, 29500)
    assert "3 hosts" in str(refused.value) and "tensorflow_across_hosts" in str(refused.value)
    assert "\n" not in str(refused.value)
    monkeypatch.setenv(TF_ACROSS_HOSTS_ENV, "1")
    assert _set_up(monkeypatch, layout, 2, 29500)["tf_cluster"] == {
        "ps": ["10.0.0.1:29501"],
        "worker": ["10.0.0.2:29502", "10.0.0.3:29503"],
        "chief": ["kernel-host:29504"],
    }


def test_one_machine_is_loopback_whatever_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JD_RANK_HOSTS", "node7,node7,node7")
    monkeypatch.delenv(TF_ACROSS_HOSTS_ENV, raising=False)
    assert _set_up(monkeypatch, TF_PS, 0, 40000)["tf_cluster"] == {
        "ps": ["127.0.0.1:40001"],
        "worker": ["127.0.0.1:40002", "127.0.0.1:40003"],
        "chief": ["127.0.0.1:40004"],
    }


def test_without_the_framework_nothing_starts_and_there_is_no_chief(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JD_RANK_HOSTS", raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    layout = Layout(procs_per_node=3, strategy=Strategy.PARAMETER_SERVER)
    namespace = _set_up(monkeypatch, layout, 1, 29500)
    assert "tf_cluster" not in namespace and "tf_server" not in namespace
    assert namespace["workers"] == [1, 2]


def test_the_opt_in_reaches_the_ranks_and_sagemaker_is_refused() -> None:
    line = "-n 3 --strategy parameter-server --framework tensorflow"
    env = dict(spec_from_args(_parsed(line)).env)
    assert TF_ACROSS_HOSTS_ENV not in env and env["JD_TF_CHIEF_HOST"]
    env = dict(spec_from_args(_parsed(line), Distributed(tensorflow_across_hosts=True)).env)
    assert env[TF_ACROSS_HOSTS_ENV] == "1"
    assert "JD_TF_CHIEF_HOST" not in dict(spec_from_args(_parsed("-n 3")).env)
    with pytest.raises(SpecError, match="SageMaker runs its own parameter-server distribution"):
        spec_from_args(_parsed(f"{line} --backend sagemaker"))


def test_dead_tasks_are_named_by_role() -> None:
    states = [(0, "idle"), (1, "idle"), (2, "failed")]
    assert tasks_lost(TF_PS, states) == "; TensorFlow's worker 1 (rank 2) is gone"
    assert tasks_lost(TF_PS, [(0, "exited"), (1, "idle")]) == "; TensorFlow's ps 0 (rank 0) is gone"
    assert tasks_lost(TF_PS, [(0, "idle")]) == ""


def test_a_held_name_gets_the_next_free_one() -> None:
    assert free_name("strategy", {"strategy": 1, "strategy_2": 2}) == "strategy_3"
    assert free_name("coordinator", {}) == "coordinator"


def test_the_port_block_for_tensorflow_tasks_is_free_and_skips_a_taken_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every task and the chief listen on MASTER_PORT + 1 + r: the launcher picks MASTER_PORT
    so that the whole block is free, below the ephemeral range, past a port someone holds."""
    import socket

    from jupyter_distributed.cluster import launch

    assert TF_PS.ports == 3 + 2
    assert Layout(procs_per_node=3, strategy=Strategy.DDP).ports == 1
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        bases = iter([taken - 2, taken + 1])  # the first block holds the taken port
        monkeypatch.setattr(launch._RNG, "randrange", lambda low, high: next(bases))
        assert launch.free_port(count=TF_PS.ports) == taken + 1
    monkeypatch.undo()
    base = launch.free_port(count=TF_PS.ports)
    assert launch.BLOCK_LOW <= base < launch._ephemeral_low()
    for port in range(base, base + TF_PS.ports):
        assert launch._bindable("127.0.0.1", port)
