"""Torch strategies on real local ranks, through a real IPython shell (skipped without torch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.errors import LaunchError

from .core_helpers import without_package

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(180)


def run(shell: Any, line: str, cell: str) -> Any:
    result = shell.run_cell(f"%%distributed {line}\n{cell}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result


TRAIN = """
import torch
torch.manual_seed(rank)              # different initial weights: DDP must make them equal
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
{wrap}
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 4)
    opt.zero_grad(); loss = net(x).pow(2).mean(); loss.backward(); opt.step()
    report(samples=8, loss=loss.item())
"""


def test_ddp_process_group_and_wrap(shell: Any) -> None:
    run(
        shell,
        "-n 2 --strategy ddp --pull kind,backend,params,dev",
        TRAIN.format(wrap="net = wrap_ddp(net)")
        + """
kind = type(net).__name__
backend = dist.get_backend()
dev = str(device)
params = [p.detach().clone() for p in net.parameters()]
""",
    )
    assert shell.user_ns["kind"] == ["DistributedDataParallel"] * 2
    assert shell.user_ns["backend"] == ["gloo"] * 2
    assert shell.user_ns["dev"] == ["cpu"] * 2
    p0, p1 = shell.user_ns["params"]
    assert all(torch.equal(a, b) for a, b in zip(p0, p1, strict=True))


def test_fsdp_shards_parameters(shell: Any) -> None:
    run(
        shell,
        "-n 2 --strategy fsdp --pull kind,local,full",
        TRAIN.format(wrap="net = shard_model(net)")
        + """
kind = type(net[0].weight).__name__
local = tuple(net[0].weight.to_local().shape)
full = [p.full_tensor() for p in net.parameters()]
""",
    )
    assert shell.user_ns["kind"] == ["DTensor"] * 2
    assert shell.user_ns["local"] == [(4, 4), (4, 4)]  # 8 rows sharded over 2 ranks
    f0, f1 = shell.user_ns["full"]
    assert all(torch.equal(a, b) for a, b in zip(f0, f1, strict=True))


PIPELINE = """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                            torch.nn.ReLU(), torch.nn.Linear(16, 1))
pipe = pipeline(model, loss_fn=torch.nn.MSELoss())
opt = torch.optim.SGD(pipe.parameters(), lr=0.05)
g = torch.Generator().manual_seed(data_parallel_rank)
losses = []
for _ in range(4):
    x = torch.randn(8, 4, generator=g)
    opt.zero_grad(); loss = pipe.step(x, target=x.sum(1, keepdim=True)); opt.step()
    losses.append(None if loss is None else float(loss))
params = [p.detach().clone() for p in pipe.parameters()]
shape = tuple(mesh.mesh.shape)
name = pipe.schedule_name
"""


def test_model_parallel_pipeline_with_data_parallel_replicas(shell: Any) -> None:
    run(
        shell,
        "-n 4 --strategy model-parallel --partitions 2 --microbatches 4 "
        "--pipeline interleaved --pull losses,params,shape,name,coords,parallel",
        PIPELINE,
    )
    ns = shell.user_ns
    assert ns["shape"] == [(2, 2, 1)] * 4
    assert ns["name"] == ["Schedule1F1B"] * 4
    assert [(c.data_parallel, c.pipeline_stage) for c in ns["coords"]] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert ns["parallel"][0]["microbatches"] == 4
    losses = ns["losses"]
    assert losses[0] == losses[2] == [None] * 4  # first stages return no loss
    assert all(isinstance(v, float) for v in losses[1] + losses[3])
    assert losses[1] != losses[3]  # each replica saw its own data
    for first, second in ((0, 2), (1, 3)):  # replicas of a stage stay identical
        assert all(
            torch.equal(a, b)
            for a, b in zip(ns["params"][first], ns["params"][second], strict=True)
        )
    assert ns["params"][0][0].shape != ns["params"][1][0].shape  # different stages


def test_tensor_parallel_mesh_and_schedule_fallback(shell: Any, capsys: Any) -> None:
    run(
        shell,
        "-n 4 --strategy model-parallel --partitions 2 --tensor-parallel 2 "
        "--pipeline interleaved --microbatches 1 --pull tp,pp,dp,name,loss",
        """
import torch
tp = mesh['tp'].get_local_rank(), mesh['tp'].size()
pp = mesh['pp'].get_local_rank()
dp = mesh['dp'].size()
torch.manual_seed(0)
pipe = pipeline(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)),
                loss_fn=torch.nn.MSELoss())
x = torch.ones(2, 4)
loss = pipe.step(x, target=torch.zeros(2, 1))
loss = None if loss is None else float(loss)
name = pipe.schedule_name
""",
    )
    ns = shell.user_ns
    assert ns["tp"] == [(0, 2), (1, 2), (0, 2), (1, 2)]
    assert ns["pp"] == [0, 0, 1, 1]
    assert ns["dp"] == [1] * 4
    assert ns["name"] == ["ScheduleGPipe"] * 4
    assert ns["loss"][:2] == [None, None] and ns["loss"][2] == ns["loss"][3] is not None
    err = capsys.readouterr().err
    assert "--pipeline interleaved needs --microbatches >= --partitions (2)" in err


def test_fsdp_missing_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from jupyter_distributed.worker.errors import StrategyError
    from jupyter_distributed.worker.torch_helpers import fsdp_support, shard_model

    monkeypatch.setitem(
        sys.modules, "torch.distributed.fsdp", types.ModuleType("torch.distributed.fsdp")
    )
    assert fsdp_support() == (
        f"torch {torch.__version__} has no FSDP2 fully_shard; "
        "install torch>=2.6 or use --strategy ddp"
    )
    with pytest.raises(StrategyError, match="has no FSDP2 fully_shard"):
        shard_model(torch.nn.Linear(2, 2))


def test_horovod_over_gloo_on_local_backend(shell: Any) -> None:
    run(
        shell,
        "-n 2 --strategy horovod --pull info,params,mean,total,obj",
        """
import torch
info = (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.transport)
mean = hvd.allreduce(float(rank))
total = hvd.allreduce(torch.tensor([1.0, rank]), op=hvd.Sum)
obj = hvd.broadcast_object({'from': rank}, root_rank=1)
torch.manual_seed(rank)
net = torch.nn.Linear(3, 1)
hvd.broadcast_parameters(net.state_dict(), root_rank=0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1))
for _ in range(2):
    opt.zero_grad(); net(torch.randn(4, 3) * (rank + 1)).sum().backward(); opt.step()
params = [p.detach().clone() for p in net.parameters()]
""",
    )
    ns = shell.user_ns
    assert ns["info"] == [
        (0, 2, 0, "torch.distributed (gloo)"),
        (1, 2, 1, "torch.distributed (gloo)"),
    ]
    assert ns["mean"] == [0.5, 0.5]
    assert all(torch.equal(t, torch.tensor([2.0, 1.0])) for t in ns["total"])
    assert ns["obj"] == [{"from": 1}] * 2
    assert all(torch.equal(a, b) for a, b in zip(*ns["params"], strict=True))


def test_parameter_server_roles_and_tf_config(shell: Any) -> None:
    import json

    run(
        shell,
        "-n 3 --strategy parameter-server --pull role,config,is_parameter_server",
        "import os, json\nconfig = json.loads(os.environ['TF_CONFIG'])",
    )
    ns = shell.user_ns
    assert ns["role"] == ["ps", "worker", "worker"]
    assert ns["is_parameter_server"] == [True, False, False]
    cluster = ns["config"][0]["cluster"]
    assert len(cluster["ps"]) == 1 and len(cluster["worker"]) == 2
    assert all(a.startswith("127.0.0.1:") for a in cluster["ps"] + cluster["worker"])
    assert len(set(cluster["ps"] + cluster["worker"])) == 3
    assert [c["task"] for c in ns["config"]] == [
        {"type": "ps", "index": 0},
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
    ]
    assert all(json.dumps(c["cluster"]) == json.dumps(cluster) for c in ns["config"])
    status = shell.run_line_magic("distributed", "status") or ""
    del status  # printed; the role column is checked through the store below
    store = shell.user_ns["_jd_session"].store
    roles = {r.rank: r.coords["role"] for r in store.ranks(store.runs(limit=1)[0].id)}
    assert roles == {0: "ps", 1: "worker", 2: "worker"}


def test_global_batch_recorded_and_change_warned(shell: Any, capsys: Any) -> None:
    cell = "for _ in range(3):\n    report(samples=16, loss=0.5)"
    run(shell, "-n 2", cell)
    run(shell, "-n 3", cell)
    err = capsys.readouterr().err
    assert "global batch changed from 32" in err and "to 48" in err
    store = shell.user_ns["_jd_session"].store
    latest, previous = store.runs(limit=2)
    assert previous.summary["global_batch"] == 32
    assert latest.summary == {
        **latest.summary,
        "global_batch": 48,
        "per_rank_batch": 16,
        "data_parallel_degree": 3,
        "previous_global_batch": 32,
    }
    shell.run_line_magic("distributed", "runs")
    out = capsys.readouterr().out
    assert "global batch 48 = 16 per rank × 3 data-parallel" in out
    assert "warning: global batch changed from 32" in out


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ("ddp", "--strategy ddp needs PyTorch.*pip install torch"),
        ("horovod", "--strategy horovod on the local backend needs torch.*use --backend mpi"),
        (
            "horovod --framework tensorflow",
            "--strategy horovod --framework tensorflow on the local backend needs torch for its "
            "gloo transport.*use --backend mpi with mpi4py",
        ),
    ],
)
def test_missing_torch_is_one_clear_line(
    shell: Any, tmp_path: Path, strategy: str, message: str
) -> None:
    path = without_package(tmp_path, "torch")
    with pytest.raises(LaunchError, match=message):
        run(shell, f"-n 2 --strategy {strategy} --env PYTHONPATH={path}", "pass")
