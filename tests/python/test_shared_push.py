"""Large ``--push`` values reach ranks on this host through one shared-memory file."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.protocol.shared import (
    SHARED_MIN_BYTES,
    map_shared,
    remove_shared,
    shared_dir,
    write_shared,
)
from jupyter_distributed.protocol.signing import Buffer

from .core_helpers import shell  # noqa: F401

pytestmark = pytest.mark.timeout(120)

# On a rank: where the pushed array's memory comes from.
ORIGIN = (
    "import mmap\n"
    "base = x.base\n"
    "while getattr(base, 'base', None) is not None:\n"
    "    base = base.base\n"
    "origin = 'mapped' if isinstance(getattr(base, 'obj', None), mmap.mmap) else 'copied'"
)


def leftovers() -> set[str]:
    return {p.name for p in shared_dir().glob("jupyter-distributed-*")}


def test_round_trip_is_private_and_owner_only(tmp_path: Path) -> None:
    buffers: list[Buffer] = [
        b"abc",
        memoryview(bytearray(range(256)) * 300),
        memoryview(b"")[:0],
        b"z" * 65,
    ]
    field = write_shared(buffers, tmp_path)
    path = Path(field["path"])
    assert path.parent == tmp_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    views = map_shared(field)
    assert [bytes(v) for v in views] == [bytes(b) for b in buffers]
    views[1][0] = 99  # a rank's change stays in its own copy
    assert map_shared(field)[1][0] == 0
    remove_shared(field)
    assert not path.exists()
    assert bytes(views[3]) == b"z" * 65  # mappings outlive the file


def test_large_push_is_mapped_and_each_rank_owns_its_copy(shell: Any) -> None:  # noqa: F811
    import numpy as np

    before = leftovers()
    shell.user_ns["x"] = np.arange(SHARED_MIN_BYTES // 4, dtype=np.float64)
    cell = ORIGIN + "\nx[0] = rank + 1\ntotal = float(x.sum())"
    assert shell.run_cell(f"%%distributed -n 2 --push x --pull origin,total\n{cell}").success
    expected = float(shell.user_ns["x"].sum())
    assert shell.user_ns["origin"] == ["mapped", "mapped"]
    assert shell.user_ns["total"] == [expected + 1, expected + 2]
    assert shell.user_ns["x"][0] == 0
    assert leftovers() == before  # the file is gone once the run ends

    shell.user_ns["x"] = np.arange(16, dtype=np.float64)  # small: sent in the message
    assert shell.run_cell(f"%%distributed -n 2 --push x --pull origin\n{ORIGIN}").success
    assert shell.user_ns["origin"] == ["copied", "copied"]


def test_failed_cell_after_large_push_leaves_no_file(shell: Any) -> None:  # noqa: F811
    before = leftovers()
    shell.user_ns["blob"] = bytearray(SHARED_MIN_BYTES * 2)
    res = shell.run_cell("%%distributed -n 2 --push blob\nassert len(blob) == 0, len(blob)")
    assert not res.success
    assert str(SHARED_MIN_BYTES * 2) in str(res.error_in_exec)
    assert leftovers() == before
