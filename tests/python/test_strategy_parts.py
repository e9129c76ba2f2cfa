"""The pure parts of the strategies (stage splitting, TF_CONFIG) and ``hvd`` under real mpirun."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.errors import LaunchError
from jupyter_distributed.layout import Layout, Strategy
from jupyter_distributed.worker.errors import StrategyError
from jupyter_distributed.worker.multi_worker import workers_config
from jupyter_distributed.worker.param_server import tf_config

from .core_helpers import without_package


def test_tf_config_for_two_servers_and_two_workers() -> None:
    layout = Layout(procs_per_node=4, strategy=Strategy.PARAMETER_SERVER, parameter_servers=2)
    hosts = ["a", "a", "b", "b"]
    config = tf_config(layout, 3, hosts, 29500)
    assert config == {
        "cluster": {"ps": ["a:29501", "a:29502"], "worker": ["b:29503", "b:29504"]},
        "task": {"type": "worker", "index": 1},
    }
    assert tf_config(layout, 1, hosts, 29500)["task"] == {"type": "ps", "index": 1}


def test_multi_worker_config_lists_every_rank_as_a_worker_at_its_host() -> None:
    assert workers_config(2, ["a", "a", "b"], 29500) == {
        "cluster": {"worker": ["a:29501", "a:29502", "b:29503"]},
        "task": {"type": "worker", "index": 2},
    }


def test_multi_worker_without_tensorflow_is_one_clear_line(shell: Any, tmp_path: Path) -> None:
    path = without_package(tmp_path, "tensorflow")
    line = f"-n 2 --strategy multi-worker --env PYTHONPATH={path}"
    message = r"multi-worker needs TensorFlow in the ranks' Python \(no tensorflow here\): pip"
    with pytest.raises(LaunchError, match=message):
        shell.run_cell_magic("distributed", line, "pass")


def test_multi_worker_port_in_use_is_one_clear_line(shell: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = f"-n 2 --strategy multi-worker --env MASTER_PORT={port - 2}"  # rank 1's port
        message = (
            f"rank 1 could not start: --strategy multi-worker: port {port} for worker "
            f"127.0.0.1:{port} is in use .*choose another with --env MASTER_PORT="
        )
        with pytest.raises(LaunchError, match=message):
            shell.run_cell_magic("distributed", line, "pass")


def test_split_sequential_balances_parameters() -> None:
    torch = pytest.importorskip("torch")
    from jupyter_distributed.worker.pipeline import split_sequential

    nn = torch.nn
    model = nn.Sequential(
        nn.Linear(10, 100),
        nn.ReLU(),
        nn.Linear(100, 10),
        nn.ReLU(),
        nn.Linear(10, 10),
        nn.Linear(10, 10),
    )
    parts = split_sequential(model, 2)
    assert [len(p) for p in parts] == [2, 4]
    assert sum(len(p) for p in split_sequential(model, 6)) == 6
    assert all(len(p) == 1 for p in split_sequential(model, 6))
    with pytest.raises(StrategyError, match="has 6 layers for 7 pipeline stages"):
        split_sequential(model, 7)
    with pytest.raises(StrategyError, match=r"torch\.nn\.Sequential, got Linear"):
        split_sequential(nn.Linear(2, 2), 2)


HVD_SCRIPT = """
import os
os.environ.update(RANK=os.environ["OMPI_COMM_WORLD_RANK"],
                  WORLD_SIZE=os.environ["OMPI_COMM_WORLD_SIZE"],
                  LOCAL_RANK=os.environ["OMPI_COMM_WORLD_LOCAL_RANK"],
                  LOCAL_WORLD_SIZE=os.environ["OMPI_COMM_WORLD_LOCAL_SIZE"])
import numpy as np
from jupyter_distributed.worker.horovod import make_hvd
hvd = make_hvd()
r = hvd.rank()
parts = [r, hvd.size(), hvd.transport, hvd.allreduce(float(r)),
         hvd.allreduce(np.array([1.0, r]), op=hvd.Sum).tolist(),
         hvd.broadcast(np.array([r, r]), root_rank=1).tolist(), hvd.allgather(r)]
os.write(1, (" ".join(map(str, parts)) + "\\n").encode())  # one write: ranks never interleave
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun is not installed")
def test_hvd_over_mpi4py_under_mpirun(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    pytest.importorskip("numpy")
    script = tmp_path / "hvd.py"
    script.write_text(textwrap.dedent(HVD_SCRIPT))
    env = {
        **os.environ,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    out = subprocess.run(
        ["mpirun", "-np", "2", sys.executable, str(script)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = sorted(out.stdout.strip().splitlines())
    assert lines == [
        "0 2 mpi4py 0.5 [2.0, 1.0] [1, 1] [0, 1]",
        "1 2 mpi4py 0.5 [2.0, 1.0] [1, 1] [0, 1]",
    ]
