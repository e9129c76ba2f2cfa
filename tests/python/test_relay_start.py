"""A relay or aggregator that ends before it is ready: the cell's one-line error says why."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_distributed.backends.mpi import backend as mpi_backend
from jupyter_distributed.cluster import relays as relays_module
from jupyter_distributed.errors import LaunchError
from jupyter_distributed.session import Session

from .core_helpers import session_in
from .test_relays import SHAPES, _relay_pids, _relays, _run

#: A relay that cannot start, as one whose node has no room for its socket says so and exits 1.
FAILS = (sys.executable, "-c", "import sys; sys.exit('relay: no space left on device')")


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


@pytest.mark.parametrize(("backend", "nodes"), SHAPES)
def test_a_relay_that_cannot_start_says_why(
    session: Session, monkeypatch: pytest.MonkeyPatch, backend: str, nodes: int
) -> None:
    given = _relays(backend)
    monkeypatch.setattr(relays_module, "RELAY_COMMAND", FAILS)  # (local)
    monkeypatch.setattr(mpi_backend, "RELAY", (*FAILS, "OMPI_COMM_WORLD_RANK"))
    with pytest.raises(LaunchError) as info:
        _run(session, "rank", n=2, nodes=nodes, timeout=60, **given)
    text = str(info.value)
    assert text.startswith("relay of node ")
    assert text.endswith("before it was ready: relay: no space left on device"), text  # (once)
    assert not session.live and not _relay_pids()
