"""The wings of the package, as a user's start-up feels them and as the imports draw them.

`make test` also runs lint-imports (the contracts in pyproject.toml: no circles, the floors,
backends as leaves, the kernel never importing the worker). These tests check what a contract
cannot say: what a light entry point loads, and the worker's short list of allowed imports.
"""

from __future__ import annotations

import json
import subprocess
import sys

import grimp

from jupyter_distributed.backends.sagemaker import package

HEAVY = ("zmq", "jupyter_distributed.cluster", "jupyter_distributed.worker")


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code``."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    found: list[str] = json.loads(out.strip().splitlines()[-1])
    return found


def test_the_magics_flags_and_help_load_no_engine_and_no_pyzmq() -> None:
    code = (
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_line_magic('load_ext', 'jupyter_distributed')\n"
        "ip.run_cell('%%distributed?\\npass')\n"
        "from jupyter_distributed.arguments import flag_owners\n"
        "flag_owners()\n"
    )
    assert loaded_after(code) == []


def test_the_servers_start_up_loads_no_engine_and_no_pyzmq() -> None:
    code = (
        "import jupyter_distributed.server\n"
        "from jupyter_distributed.backends import followable, plugins\n"
        "plugins(); followable()\n"
    )
    assert loaded_after(code) == []


def test_a_backends_folder_declares_its_plugin_without_the_engine() -> None:
    for name in ("local", "mpi", "ray", "sagemaker", "slurm"):
        code = f"import jupyter_distributed.backends.{name} as b\nassert b.PLUGIN.name == {name!r}"
        assert loaded_after(code) == [], name


# the modules SageMaker ships to a rank beside worker/ and protocol/: what the worker may import
SHARED_WITH_THE_WORKER = {"protocol", *package.SHARED_WITH_THE_WORKER}


def test_the_worker_imports_only_the_protocol_and_the_pure_shared_modules() -> None:
    graph = grimp.build_graph("jupyter_distributed")
    outside = set()
    for module in graph.find_descendants("jupyter_distributed.worker"):
        for imported in graph.find_modules_directly_imported_by(module):
            parts = imported.split(".")
            if parts[0] == "jupyter_distributed" and len(parts) > 1 and parts[1] != "worker":
                outside.add(parts[1])
    assert outside <= SHARED_WITH_THE_WORKER, outside - SHARED_WITH_THE_WORKER
    assert "protocol" in outside  # the check looks where the imports are


def test_the_modules_shipped_with_the_worker_import_only_each_other() -> None:
    """What SageMaker ships beside worker/ is all a rank there has: a shared module that
    imports another of the package's (errors -> collapse) fails the training script."""
    graph = grimp.build_graph("jupyter_distributed")
    for name in package.SHARED_WITH_THE_WORKER:
        for imported in graph.find_modules_directly_imported_by(f"jupyter_distributed.{name}"):
            parts = imported.split(".")
            if parts[0] == "jupyter_distributed":
                assert parts[1] in SHARED_WITH_THE_WORKER, f"{name} imports {imported}"


def test_the_kernel_side_imports_nothing_from_the_worker() -> None:
    graph = grimp.build_graph("jupyter_distributed")
    worker = {"jupyter_distributed.worker"} | graph.find_descendants("jupyter_distributed.worker")
    offenders = {
        (m, i)
        for m in graph.modules - worker
        for i in graph.find_modules_directly_imported_by(m)
        if i in worker
    }
    assert offenders == set()


# a node relay's and an aggregator's programs: started beside the ranks on every node, their
# imports are their start-up; the kernel's side (the history store, the backend interface,
# the events it records) is not theirs
HOPS = ("jupyter_distributed.cluster.relay", "jupyter_distributed.cluster.aggregator")
KERNEL_SIDE = ("jupyter_distributed.history", "jupyter_distributed.interface")


def test_a_relay_and_an_aggregator_import_nothing_of_the_history_or_the_interface() -> None:
    graph = grimp.build_graph("jupyter_distributed")
    for hop in HOPS:
        imported = graph.find_upstream_modules(hop)
        kernel_side = sorted(m for m in imported if m.startswith(KERNEL_SIDE))
        assert kernel_side == [], f"{hop} imports {kernel_side}"
        assert "jupyter_distributed.protocol.signing" in imported  # (the check looks)
    # and as a process starts them: what it holds once its module is imported
    probe = (
        f"import json, sys\nfor hop in {HOPS!r}:\n    __import__(hop)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('jupyter_distributed'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    held: list[str] = json.loads(out.strip().splitlines()[-1])
    assert [m for m in held if m.startswith(KERNEL_SIDE)] == []
    assert "jupyter_distributed.cluster.relay" in held


def test_a_hook_that_is_not_callable_is_refused_when_loaded() -> None:
    import pytest

    from jupyter_distributed.backends import follower
    from jupyter_distributed.backends.plugin import load
    from jupyter_distributed.errors import SpecError

    with pytest.raises(SpecError, match=r"sagemaker:PLUGIN is not callable"):
        load("jupyter_distributed.backends.sagemaker:PLUGIN")
    assert callable(follower("sagemaker")) and follower("local") is None
