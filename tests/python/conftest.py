"""Shared pytest set-up for the Python tests."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from jupyter_distributed.history.store import STORE_ENV

# jp_fetch, jp_serverapp and friends: a real Jupyter server per test, on loopback.
pytest_plugins = ["pytest_jupyter.jupyter_server"]

# `shell`: the IPython shell with %%distributed bound to a fresh session and store.
from .core_helpers import shell  # noqa: E402, F401

# `slurm_cluster`, `in_slurm`, `ray_head`, `in_ray`: real engines in their own network namespaces.
from .engines.fixtures import (  # noqa: E402, F401
    in_ray,
    in_slurm,
    ray_head,
    slurm_cluster,
    start_ray_early,
    stop_early_ray,
)
from .relay_helpers import wire  # noqa: E402, F401

# `platform`, `configured`: moto's server with the local SageMaker platform (SageMaker tests).
from .sagemaker_fixtures import configured, platform  # noqa: E402, F401


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the slow tests (the full contract suite on the Ray engine)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C raises KeyboardInterrupt in this process, as the notebook's stop button does in a
    kernel (ipykernel installs Python's handler while it runs a cell), even where the suite was
    started with SIGINT ignored: a shell's ``make test &`` leaves it ignored, so the tests that
    interrupt a cell would each wait out its sleep (120 s) instead."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _private_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test writes into the developer's own history: the default store is a temporary one
    (kernels and servers the tests start inherit it; a test may still set its own)."""
    path = tmp_path_factory.mktemp("history") / "history.sqlite3"
    old = os.environ.get(STORE_ENV)
    os.environ[STORE_ENV] = str(path)
    yield
    if old is None:
        os.environ.pop(STORE_ENV, None)
    else:
        os.environ[STORE_ENV] = old


def pytest_collection_finish(session: pytest.Session) -> None:
    start_ray_early(session)  # Ray's head comes up while the tests before the first Ray test run


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_early_ray()  # (one that no test took)
