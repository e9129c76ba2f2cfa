"""``--strategy multi-worker`` and ``--strategy horovod --framework tensorflow`` with real
TensorFlow on real ranks, through a real IPython shell (skipped without TensorFlow).

One shell serves the module, so a cluster started by one test is kept by the next test with the
same line. Values come back as lists: the kernel never imports TensorFlow.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from .backend_cases import mpi_missing
from .core_helpers import bound_shell

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow-cpu)", allow_module_level=True)

# A rank imports TensorFlow in 10-20 s on 2 shared cores.
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def tf_shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from bound_shell(tmp_path_factory.mktemp("tensorflow"))


def run(shell: Any, line: str, cell: str) -> dict[str, Any]:
    result = shell.run_cell(f"%%distributed {line}\n{cell}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return dict(shell.user_ns)


FIT = """
import json, os
import keras
import numpy as np
config = json.loads(os.environ["TF_CONFIG"])
x = np.random.default_rng(rank).normal(size=(64, 4)).astype("float32")
y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
with strategy.scope():
    keras.utils.set_random_seed(rank)  # different initial weights: the strategy makes them equal
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
losses = model.fit(x, y, epochs=4, batch_size=16, verbose=0).history["loss"]
weights = [w.tolist() for w in model.get_weights()]
kind = type(strategy).__name__
"""


def test_multi_worker_model_fit_gives_identical_weights(tf_shell: Any) -> None:
    ns = run(tf_shell, "-n 2 --strategy multi-worker --pull config,losses,weights,kind", FIT)
    first, second = ns["config"]
    workers = first["cluster"]["worker"]
    assert first["cluster"] == second["cluster"] == {"worker": workers}  # no ps, no chief
    assert len(set(workers)) == 2 and all(w.startswith("127.0.0.1:") for w in workers)
    assert [c["task"] for c in ns["config"]] == [
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
    ]
    assert ns["kind"] == ["MultiWorkerMirroredStrategy"] * 2
    assert ns["weights"][0] == ns["weights"][1]
    for losses in ns["losses"]:
        assert losses[-1] < losses[0]


STEP = """
replicas = strategy.num_replicas_in_sync
def replica_value():
    return tf.constant(rank + 1.0)

@tf.function
def step():
    return strategy.run(replica_value)

total = float(strategy.reduce("SUM", step(), axis=None))
"""


def test_multi_worker_strategy_persists_across_cells(tf_shell: Any) -> None:
    ns = run(tf_shell, "-n 2 --strategy multi-worker --pull replicas,total", STEP)
    assert ns["replicas"] == [2, 2]
    assert ns["total"] == [3.0, 3.0]


HVD = """
import keras
import numpy as np
import tensorflow as tf
info = (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.transport)
a = tf.Variable([1.0, 2.0 * rank])
mean = hvd.allreduce(a).numpy().tolist()
total = hvd.allreduce(a, op=hvd.Sum).numpy().tolist()
count = hvd.allreduce(tf.Variable([rank + 1], dtype=tf.int64), op=hvd.Sum)
count = (count.dtype.name, count.numpy().tolist())
b = tf.Variable([float(rank), 10.0 * rank])
hvd.broadcast_variables([b], root_rank=1)
broadcast = b.numpy().tolist()
sent = hvd.broadcast(tf.constant([rank, rank]), root_rank=0).numpy().tolist()
scalar = hvd.broadcast(tf.Variable(float(rank)), root_rank=1)
scalar = (scalar.shape.rank, float(scalar))

x = np.random.default_rng(rank).normal(size=(32, 4)).astype("float32")
y = x.sum(1, keepdims=True)
keras.utils.set_random_seed(rank)  # different initial weights: broadcast_variables syncs them
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
hvd.broadcast_variables(model.variables, root_rank=0)
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
model.fit(x, y, epochs=2, batch_size=8, verbose=0)
fit = [w.tolist() for w in model.get_weights()]

keras.utils.set_random_seed(rank)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
hvd.broadcast_variables(model.variables, root_rank=0)
opt = keras.optimizers.SGD(0.1)
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
taped = [w.tolist() for w in model.get_weights()]

keras.utils.set_random_seed(rank)  # Horovod's TensorFlow 2 example: all of it in a tf.function
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(0.01)

@tf.function
def training_step(images, labels, first_batch):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(images) - labels) ** 2)
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)
    return loss

for i in range(4):
    training_step(x[8 * i : 8 * i + 8], y[8 * i : 8 * i + 8], i == 0)
stepped = [w.tolist() for w in model.get_weights()]
"""
PULL = "--pull info,mean,total,count,broadcast,sent,scalar,fit,taped,stepped"


def check_hvd(ns: dict[str, Any], transport: str) -> None:
    assert ns["info"] == [(0, 2, 0, transport), (1, 2, 1, transport)]
    assert ns["mean"] == [[1.0, 1.0]] * 2
    assert ns["total"] == [[2.0, 2.0]] * 2
    assert ns["count"] == [("int64", [3])] * 2
    assert ns["broadcast"] == [[1.0, 10.0]] * 2
    assert ns["sent"] == [[0, 0]] * 2
    assert ns["scalar"] == [(0, 1.0)] * 2  # a scalar stays a scalar
    assert ns["fit"][0] == ns["fit"][1]  # averaged gradients inside Keras's tf.function
    assert ns["taped"][0] == ns["taped"][1]
    assert ns["stepped"][0] == ns["stepped"][1]  # broadcast inside a tf.function too


def test_horovod_tensorflow_over_gloo(tf_shell: Any) -> None:
    pytest.importorskip("torch")
    ns = run(tf_shell, f"-n 2 --strategy horovod --framework tensorflow {PULL}", HVD)
    check_hvd(ns, "torch.distributed (gloo)")


@pytest.mark.skipif(bool(mpi_missing()), reason=f"mpi backend unavailable: {mpi_missing()}")
def test_horovod_tensorflow_over_mpi(tf_shell: Any) -> None:
    ns = run(tf_shell, f"-n 2 --backend mpi --strategy horovod --framework tensorflow {PULL}", HVD)
    check_hvd(ns, "mpi4py")
