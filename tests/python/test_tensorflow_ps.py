"""``--strategy parameter-server --framework tensorflow`` with real TensorFlow, through a real
kernel: 1 parameter server and 2 workers, the kernel as coordinator. One cluster for the module
(TensorFlow takes seconds to import on every rank and in the kernel)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import start_new_kernel

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (make test installs it)")

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

LINE = "-n 3 --strategy parameter-server --framework tensorflow"
FIRST_CELL = f"%%distributed {LINE}\nprint(role, tf_server.target.startswith('grpc://127.0.0.1:'))"

# TensorFlow's custom training loop with a ClusterCoordinator, as its tutorial writes it
CUSTOM_LOOP = """
import tensorflow as tf

with strategy.scope():
    w = tf.Variable(0.0)
    b = tf.Variable(0.0)

def dataset_fn():
    x = tf.random.uniform([512], -1.0, 1.0, seed=1)
    return tf.data.Dataset.from_tensor_slices((x, 3.0 * x + 2.0)).repeat().batch(32)

@tf.function
def per_worker_dataset_fn():
    return strategy.distribute_datasets_from_function(lambda _: dataset_fn())

per_worker_dataset = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
per_worker_iterator = iter(per_worker_dataset)

@tf.function
def step_fn(iterator):
    def replica_fn(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.2 * gw)
        b.assign_sub(0.2 * gb)
        return loss
    x, y = next(iterator)
    losses = strategy.run(replica_fn, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

for _ in range(300):
    loss = coordinator.schedule(step_fn, args=(per_worker_iterator,))
coordinator.join()
print("LOSS", float(loss.fetch()), "W", float(w.numpy()), "B", float(b.numpy()))
"""


# after the stop: the notebook's values on the stopped servers went; what is left is freed
AFTER_STOP = """
import gc, time
print("after", "strategy" in dir(), "w" in dir(), "per_worker_iterator" in dir())
del step_fn, per_worker_dataset_fn
gc.collect()
time.sleep(3)
"""


def execute(kc: BlockingKernelClient, code: str, ok: bool = True) -> tuple[str, list[Any]]:
    """Run ``code``; its stream text and its error messages."""
    got: list[dict[str, Any]] = []
    reply = kc.execute_interactive(code, timeout=400, output_hook=got.append)
    text = "".join(m["content"].get("text", "") for m in got if m["msg_type"] == "stream")
    errors = [m["content"] for m in got if m["msg_type"] == "error"]
    if ok:
        assert reply["content"]["status"] == "ok", (text, errors)
    return text, errors


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingKernelClient, str]]:
    """A kernel whose notebook held ``strategy`` before its first TensorFlow cell; that
    cell's output."""
    store = tmp_path_factory.mktemp("tf") / "history.sqlite3"
    env = {**os.environ, "JUPYTER_DISTRIBUTED_STORE": str(store)}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).parents[2] / "python"), os.environ.get("PYTHONPATH")])
    )
    km, kc = start_new_kernel(kernel_name="python3", env=env, startup_timeout=60)
    try:
        execute(kc, "%load_ext jupyter_distributed\nstrategy = 'the notebook s own'")
        text, _ = execute(kc, FIRST_CELL)
        yield kc, text
    finally:
        kc.execute_interactive("%distributed stop", timeout=120)  # (the last test stopped it)
        kc.stop_channels()
        km.shutdown_kernel()  # (asked, not killed: TensorFlow removes its autograph files at exit)


def test_servers_serve_from_the_first_cell_and_names_are_not_overwritten(
    kernel: tuple[BlockingKernelClient, str],
) -> None:
    kc, first = kernel
    assert "ps True" in first and "worker True" in first
    said = [
        ln for ln in first.splitlines() if "ParameterServerStrategy over 1 ps and 2 workers" in ln
    ]
    assert len(said) == 1 and "strategy_2 (not strategy: the notebook holds one)" in said[0]
    text, _ = execute(
        kc,
        "import tensorflow as tf\n"
        "ps = tf.distribute.experimental.ParameterServerStrategy\n"
        "print(strategy, isinstance(strategy_2, ps),"
        " isinstance(coordinator, tf.distribute.coordinator.ClusterCoordinator))",
    )
    assert text.split() == ["the", "notebook", "s", "own", "True", "True"]
    text, _ = execute(kc, "del strategy\n%distributed tf-strategy\nprint(strategy is strategy_2)")
    assert "the kernel coordinates: strategy, coordinator" in text and "True" in text


def test_the_coordinators_custom_loop_trains_a_linear_model(
    kernel: tuple[BlockingKernelClient, str],
) -> None:
    kc, _ = kernel
    execute(kc, "globals().pop('strategy', None)\n%distributed tf-strategy")
    text, _ = execute(kc, CUSTOM_LOOP)
    line = next(ln for ln in text.splitlines() if ln.startswith("LOSS"))
    loss, w, b = (float(v) for v in line.split()[1::2])
    assert loss < 1e-3 and abs(w - 3) < 0.05 and abs(b - 2) < 0.05


def test_cells_still_run_on_every_rank(kernel: tuple[BlockingKernelClient, str]) -> None:
    kc, _ = kernel
    cell = (
        "import json, os\nprint('task', rank, json.loads(os.environ['TF_CONFIG'])['task']['type'])"
    )
    text, _ = execute(kc, f"%%distributed {LINE}\n{cell}")
    for r, kind in enumerate(("ps", "worker", "worker")):
        assert f"[rank {r}] task {r} {kind}" in text
    assert "ParameterServerStrategy over" not in text  # the coordinator is made once


def test_keras_3_fit_says_it_in_one_line(kernel: tuple[BlockingKernelClient, str]) -> None:
    kc, _ = kernel
    code = (
        "import numpy as np, tensorflow as tf\n"
        "with strategy.scope():\n"
        "    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])\n"
        "    model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(np.ones((64, 1)), np.ones((64, 1)), epochs=1, verbose=0)"
    )
    _, errors = execute(kc, code, ok=False)
    assert len(errors) == 1
    shown = errors[0]["traceback"]
    assert len(shown) == 1 and "\n" not in shown[0]
    assert "Keras 3 does not support model.fit under ParameterServerStrategy" in shown[0]
    assert "custom loop" in shown[0] and "TF_USE_LEGACY_KERAS=1" in shown[0]
    _, errors = execute(kc, "int('x')", ok=False)  # other errors show as ever
    assert errors[0]["ename"] == "ValueError" and len(errors[0]["traceback"]) > 1


def test_stopping_the_cluster_prints_no_grpc_errors(
    kernel: tuple[BlockingKernelClient, str],
) -> None:
    kc, _ = kernel
    text, _ = execute(kc, "%distributed stop")
    later, _ = execute(kc, AFTER_STOP)
    shown = text + later
    noisy = [ln for ln in shown.splitlines() if "grpc" in ln.lower() or "Connection refused" in ln]
    assert noisy == []
    assert "stopped" in text and "after False False False" in later
    assert "w lived on the stopped cluster and left the notebook" in text.replace(",", "")


def test_a_dead_worker_is_named_and_the_cluster_replaced(
    kernel: tuple[BlockingKernelClient, str],
) -> None:
    kc, _ = kernel
    execute(kc, f"%%distributed {LINE} --pull pid\nimport os\npid = os.getpid()")
    execute(kc, "import os, signal, time\nos.kill(pid[2], signal.SIGKILL)\ntime.sleep(2)")
    text, _ = execute(kc, f"%%distributed {LINE}\nprint('back', rank)")
    lost = next(ln for ln in text.splitlines() if "the previous cluster was lost" in ln)
    assert "TensorFlow's worker 1 (rank 2) is gone" in lost
    assert "[rank 2] back 2" in text and "the kernel coordinates: strategy, coordinator" in text
