"""A small memory cgroup for one test's rank (test-only): the rank is moved into it after the
cluster started, so what it allocates later counts against a small limit, never against the
machine's memory. cgroup v1 (``memory`` hierarchy, beside this process' own cgroup) or v2 (a
child of the unified root with the memory controller); skips with the reason where neither can
be created (no root, no memory controller)."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_distributed.memcg import cgroup_dir

LIMIT = 160 * 2**20


def _make(parent: Path, files: dict[str, str]) -> Path:
    path = parent / f"jd-test-{secrets.token_hex(4)}"
    path.mkdir()
    try:
        for name, value in files.items():
            if (path / name).exists():
                (path / name).write_text(value)
    except OSError:
        path.rmdir()
        raise
    return path


def create() -> Path:
    """A new memory cgroup limited to :data:`LIMIT` bytes, without swap."""
    why = []
    own = cgroup_dir()
    limit = str(LIMIT)
    candidates: list[tuple[Path, dict[str, str]]] = []
    if own and not (Path(own) / "memory.events").exists():  # v1: beside our own cgroup
        v1 = {"memory.limit_in_bytes": limit, "memory.swappiness": "0"}
        v1["memory.memsw.limit_in_bytes"] = limit
        candidates.append((Path(own), v1))
    root = Path("/sys/fs/cgroup")
    if "memory" in _read(root / "cgroup.subtree_control").split():  # v2
        candidates.append((root, {"memory.max": limit, "memory.swap.max": "0"}))
    for parent, files in candidates:
        try:
            return _make(parent, files)
        except OSError as exc:
            why.append(f"{parent}: {exc.strerror or exc}")
    pytest.skip("no memory cgroup can be created here: " + ("; ".join(why) or "none mounted"))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def move(cgroup: Path, pid: int) -> None:
    (cgroup / "cgroup.procs").write_text(str(pid))


def remove(cgroup: Path) -> None:
    """Removed once its processes are gone (they are reaped as their cluster stops)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            cgroup.rmdir()
            return
        time.sleep(0.1)


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    cgroup = create()
    try:
        yield cgroup
    finally:
        remove(cgroup)
