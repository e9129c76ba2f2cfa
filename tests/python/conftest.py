"""Shared pytest set-up for the Python tests."""

from __future__ import annotations

# jp_fetch, jp_serverapp and friends: a real Jupyter server per test, on loopback.
pytest_plugins = ["pytest_jupyter.jupyter_server"]

# `shell`: the IPython shell with %%distributed bound to a fresh session and store.
from .core_helpers import shell  # noqa: E402, F401

# `platform`, `configured`: moto's server with the local SageMaker platform (SageMaker tests).
from .sagemaker_fixtures import configured, platform  # noqa: E402, F401
