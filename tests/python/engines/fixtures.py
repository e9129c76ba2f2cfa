"""pytest fixtures for the real engines: one Slurm cluster and one Ray head per test session,
started on first use (the Ray head once the tests are collected, when one needs it) and stopped
by PID at the end; a test uses one through a function fixture
that puts the test's main thread (the kernel side) into the engine's network namespace."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_distributed.backends.mpi.backend import descendants

from . import ray, slurm

_DAEMONS: list[int] = []  # pids of the engines' daemons this session started


def engine_processes() -> set[int]:
    """The engines' daemons and everything below them (their jobs' tasks, Ray's workers):
    children of the test process that belong to no test, so a test counting the processes it
    started leaves them out."""
    return {p for d in _DAEMONS for p in (d, *descendants(d))}


def slurm_of(nodes: int = len(slurm.NODES)) -> Iterator[slurm.SlurmCluster]:
    """A Slurm cluster of ``nodes`` slurmd nodes for a fixture (skipped where Slurm cannot run),
    stopped by PID afterwards."""
    if reason := slurm.missing():
        pytest.skip(f"no Slurm here: {reason}")
    root = Path(tempfile.mkdtemp(prefix="jd-slurm-"))
    cluster = slurm.SlurmCluster(root, nodes)
    _DAEMONS.extend(p.pid for p in cluster.procs)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[slurm.SlurmCluster]:
    yield from slurm_of()


def kernel_in(
    cluster: slurm.SlurmCluster, monkeypatch: pytest.MonkeyPatch
) -> Iterator[slurm.SlurmCluster]:
    """The test runs as a kernel on the cluster's login node: in its namespace, with its
    SLURM_CONF, outside any allocation; every job it left is cancelled afterwards."""
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    with cluster.ns.entered():
        try:
            yield cluster
        finally:
            cluster.run("scancel", "--user=root", check=False)
            cluster.wait_idle()


@pytest.fixture
def in_slurm(
    slurm_cluster: slurm.SlurmCluster, monkeypatch: pytest.MonkeyPatch
) -> Iterator[slurm.SlurmCluster]:
    """The test runs as a kernel on the cluster's login node (:func:`kernel_in`)."""
    yield from kernel_in(slurm_cluster, monkeypatch)


_EARLY: list[ray.RayHead] = []  # the Ray head started once the tests were collected


def _runs_on_ray(item: pytest.Item) -> bool:
    """Whether ``item`` asks for the Ray head: by its fixtures, or as a backend case (of
    :mod:`backend_cases`) that asks for ``in_ray`` when it runs."""
    if any(mark.name == "skip" for mark in item.iter_markers()):
        return False
    if "ray_head" in getattr(item, "fixturenames", ()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any("in_ray" in getattr(value, "fixtures", ()) for value in params.values())


def start_ray_early(session: pytest.Session) -> None:
    """Start the Ray head as soon as the tests are collected, when one of them runs on it: the
    head comes up (a minute and more on a loaded 2-core machine) while the tests before the
    first Ray test run, and ``ray_head`` waits only for the rest. The same head, started at
    another time; stopped by :func:`stop_early_ray` if no test took it."""
    if session.config.option.collectonly or session.config.option.setupplan:
        return
    if _EARLY or ray.missing():
        return
    if any(_runs_on_ray(item) for item in session.items):
        _EARLY.append(ray.RayHead(Path(tempfile.mkdtemp(prefix="jd-ray-"))))
        _DAEMONS.append(_EARLY[0].proc.pid)


def stop_early_ray() -> None:
    while _EARLY:
        _EARLY.pop().stop()


@pytest.fixture(scope="session")
def ray_head() -> Iterator[ray.RayHead]:
    if reason := ray.missing():
        pytest.skip(f"no Ray here: {reason}")
    head = _EARLY.pop() if _EARLY else None
    if head is not None:
        try:
            head.wait_up()  # (stopped, with the end of its log, if it does not come up)
        except RuntimeError as exc:
            # Ray gives its raylet 30 s to register (a constant of its own): the tests before
            # the first Ray test can keep both cores busy for longer. Once more, alone.
            warnings.warn(f"the Ray head started early did not come up: {exc}"[:300], stacklevel=1)
            head = None
    if head is None:
        head = ray.RayHead(Path(tempfile.mkdtemp(prefix="jd-ray-")))
        _DAEMONS.append(head.proc.pid)
        head.wait_up()
    try:
        yield head
    finally:
        with head.ns.entered():
            import ray as ray_module

            ray_module.shutdown()  # the test process's driver, connected by the first test
        head.stop()


@pytest.fixture
def in_ray(ray_head: ray.RayHead, monkeypatch: pytest.MonkeyPatch) -> Iterator[ray.RayHead]:
    """The test runs as a kernel next to the head: in its namespace, with RAY_ADDRESS, HOME
    and RAY_TMPDIR pointing at it. The driver stays connected between tests (one per session)."""
    monkeypatch.setenv("RAY_ADDRESS", ray_head.address)
    for key, value in ray_head.env.items():
        monkeypatch.setenv(key, value)
    with ray_head.ns.entered():
        yield ray_head
