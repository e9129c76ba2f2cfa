"""``--backend ray`` on a real Ray head (loopback only, in its own network namespace)."""

from __future__ import annotations

import io
import os
import re
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.history.reaper import sweep_leftovers
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import pid_alive
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .engines.ray import RayHead

pytestmark = pytest.mark.ray


def _ours_in_tmp() -> set[str]:
    """Our files and folders in the temp dir (control sockets, ranks' output), but those of
    another kernel still running (another session's, on a shared machine)."""
    names = {p.name for p in Path(tempfile.gettempdir()).glob("jupyter-distributed*")}
    return {n for n in names if _kernel_of(n) in (0, os.getpid()) or not pid_alive(_kernel_of(n))}


def _kernel_of(name: str) -> int:
    """The kernel pid in a name such as ``jupyter-distributed-k123-ctl-…`` (0: none)."""
    found = re.match(r"jupyter-distributed-k(\d+)-", name)
    return int(found.group(1)) if found else 0


def test_a_killed_actor_is_named_and_its_placement_group_removed(
    in_ray: RayHead, tmp_path: Path
) -> None:
    import ray
    from ray.util import placement_group_table

    before = _ours_in_tmp()
    session, out = Session(Store(tmp_path / "h.sqlite")), io.StringIO()
    spec = Spec(layout=Layout(procs_per_node=2), backend="ray")
    try:
        session.run_cell(spec, "import os; os.getpid()", {}, view=CellView(out=out, err=out))
        cluster = session.live["ray"].cluster
        processes = cluster.processes  # type: ignore[attr-defined]
        pg_id = processes.pg.id.hex()
        ray.kill(processes.actors[1])
        with pytest.raises(RunFailed) as info:
            session.run_cell(spec, "import time; time.sleep(60)", {}, view=CellView(out=out))
        root = info.value.root
        assert (root.rank, root.kind, root.signal) == (1, "exit", 9)
        assert not cluster.alive
    finally:
        session.shutdown()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and placement_group_table().get(pg_id, {}).get(
        "state"
    ) not in ("REMOVED", None):
        time.sleep(0.1)
    assert placement_group_table().get(pg_id, {}).get("state") in ("REMOVED", None)
    assert _ours_in_tmp() - before == set()  # the killed actor's rank left no file behind


def _ray_connected() -> Any:
    from jupyter_distributed.backends.ray.backend import connect
    from jupyter_distributed.backends.ray.options import RayOptions

    return connect(RayOptions())


def test_a_sigkilled_kernel_leaves_no_actor_worker_or_placement_group(
    in_ray: RayHead, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel is Ray's driver: when it is SIGKILLed, Ray ends its job's actors and
    placement groups, and each rank's worker dies with its actor."""
    from jupyter_client.manager import KernelManager
    from ray.util import placement_group_table

    _ray_connected()
    before, files = set(placement_group_table()), _ours_in_tmp()
    monkeypatch.setenv("JUPYTER_DISTRIBUTED_STORE", str(tmp_path / "h.sqlite"))
    km = KernelManager(kernel_name="python3")
    km.start_kernel()  # in the Ray head's namespace, with its RAY_ADDRESS (see in_ray)
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        texts: list[str] = []
        code = (
            "%load_ext jupyter_distributed\n"
            "get_ipython().run_cell_magic('distributed', '-n 2 --backend ray --pull pid', "
            "'import os\\npid = os.getpid()')\nprint('PIDS', pid)"
        )
        reply = kc.execute_interactive(
            code, timeout=180, output_hook=lambda m: texts.append(m["content"].get("text", ""))
        )
        kc.stop_channels()
        assert reply["content"]["status"] == "ok", reply["content"]
        line = next(x for x in "".join(texts).splitlines() if x.startswith("PIDS"))
        pids = [int(p) for p in line[5:].strip("[] ").split(",")]
        ours = set(placement_group_table()) - before
        assert len(pids) == 2 and all(pid_alive(p) for p in pids) and len(ours) == 1
        assert km.provisioner is not None
        os.kill(km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            any(pid_alive(p) for p in pids)
            or any(placement_group_table()[pg]["state"] != "REMOVED" for pg in ours)
        ):
            time.sleep(0.2)
        assert [p for p in pids if pid_alive(p)] == []
        assert {placement_group_table()[pg]["state"] for pg in ours} == {"REMOVED"}
        # The dead kernel's own folders are the reaper's (swept when a store is opened again);
        # after it, nothing of the run is left on the node, the ranks' output included.
        sweep_leftovers()
        assert _ours_in_tmp() - files == set()
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)
