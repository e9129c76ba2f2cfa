"""Shared pytest set-up for the Python tests."""

from __future__ import annotations

# jp_fetch, jp_serverapp and friends: a real Jupyter server per test, on loopback.
pytest_plugins = ["pytest_jupyter.jupyter_server"]
