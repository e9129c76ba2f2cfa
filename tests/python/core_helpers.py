"""Shared helpers for the core tests: an IPython shell with the magics on a private store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.testing import globalipapp

from jupyter_distributed.history.store import Store
from jupyter_distributed.magics import DistributedMagics
from jupyter_distributed.session import Session


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Any]:
    """The global IPython shell with ``%%distributed`` bound to a fresh session and store."""
    yield from bound_shell(tmp_path)


def bound_shell(folder: Path) -> Iterator[Any]:
    """The shell of :func:`shell`, its store in ``folder``; for fixtures of a wider scope (a
    module that shares one cluster among its tests)."""
    ip = globalipapp.start_ipython() or globalipapp.get_ipython()  # type: ignore[no-untyped-call]
    magics = DistributedMagics(ip, Session(Store(folder / "history.sqlite3")))
    ip.register_magics(magics)
    ip.user_ns["_jd_session"] = magics.session
    try:
        yield ip
    finally:
        magics.session.shutdown()


def session_in(folder: Path) -> Iterator[Session]:
    """A session on a fresh store in ``folder``, shut down (its clusters stopped) and the store
    closed after use: for session fixtures of any scope."""
    store = Store(folder / "history.sqlite")
    session = Session(store)
    try:
        yield session
    finally:
        session.shutdown()
        store.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh history store, closed after the test."""
    store = Store(tmp_path / "history.sqlite")
    yield store
    store.close()


def without_package(tmp_path: Path, name: str) -> str:
    """A PYTHONPATH under which ``import name`` fails: for ranks that lack a package."""
    fake = tmp_path / f"no_{name}" / name
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    return os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")]))


def proc_alive(pid: int) -> bool:
    """Whether ``pid`` runs (Linux ``/proc``): a zombie no one reaps is dead."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
