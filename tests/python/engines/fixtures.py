"""pytest fixtures for the real engines: one Slurm cluster and one Ray head per test session,
started on first use and stopped by PID at the end; a test uses one through a function fixture
that puts the test's main thread (the kernel side) into the engine's network namespace."""

from __future__ import annotations

import os
import shutil
import tempfile
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


@pytest.fixture(scope="session")
def ray_head() -> Iterator[ray.RayHead]:
    if reason := ray.missing():
        pytest.skip(f"no Ray here: {reason}")
    head = ray.RayHead(Path(tempfile.mkdtemp(prefix="jd-ray-")))
    _DAEMONS.append(head.proc.pid)
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
