"""The package as users install it: one version everywhere, and both Jupyter
extensions (the prebuilt lab extension and the server extension) found and enabled
by the installed Jupyter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jupyter_distributed

ROOT = Path(__file__).resolve().parents[2]
BUILT_LABEXTENSION = ROOT / "python" / "jupyter_distributed" / "labextension"
#: The venv the tests run in; the `jupyter` command of that venv.
PREFIX = Path(sys.prefix)
JUPYTER = Path(sys.executable).with_name("jupyter")


def jupyter(*args: str) -> str:
    """Run the venv's `jupyter`; return what it printed (on stderr), colour codes removed."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [str(JUPYTER), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_one_version_for_python_and_npm() -> None:
    source = (ROOT / "python" / "jupyter_distributed" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', source, re.MULTILINE)
    assert match, "__version__ not found in python/jupyter_distributed/__init__.py"
    package_json = json.loads((ROOT / "package.json").read_text())
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())

    assert pyproject["tool"]["hatch"]["version"]["path"] == "python/jupyter_distributed/__init__.py"
    assert package_json["version"] == match.group(1)
    assert jupyter_distributed.__version__ == match.group(1)


def test_tests_use_the_installed_package() -> None:
    module = Path(jupyter_distributed.__file__).resolve()

    assert not module.is_relative_to(ROOT / "python"), (
        f"imported {module}: the tests must run against the installed package (make test)"
    )


def test_lab_extension_is_built() -> None:
    package_json = json.loads((BUILT_LABEXTENSION / "package.json").read_text())

    assert package_json["name"] == "jupyter-distributed"
    assert package_json["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")


def test_installed_lab_extension_is_the_fresh_build() -> None:
    installed = PREFIX / "share" / "jupyter" / "labextensions" / "jupyter-distributed"
    built = json.loads((BUILT_LABEXTENSION / "package.json").read_text())

    assert json.loads((installed / "package.json").read_text()) == built
    assert (installed / built["jupyterlab"]["_build"]["load"]).is_file()
    assert json.loads((installed / "install.json").read_text())["packageManager"] == "python"


@pytest.mark.timeout(90)
def test_jupyterlab_lists_the_lab_extension_enabled() -> None:
    listing = jupyter("labextension", "list")

    assert re.search(r"jupyter-distributed v\S+ enabled OK", listing), listing


@pytest.mark.timeout(90)
def test_jupyter_server_lists_the_server_extension_enabled() -> None:
    listing = jupyter("server", "extension", "list")

    assert re.search(r"jupyter_distributed enabled", listing), listing
    assert re.search(r"jupyter_distributed \S+ OK", listing), listing


def _system(target: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run a set-up target with every Debian package reported absent, and an apt-get that only
    writes down what it was asked."""
    asked = tmp_path / "asked.txt"
    apt = tmp_path / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$*" >> {asked}\n')
    apt.chmod(0o755)
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), target, "DPKG_QUERY=false", f"APT_GET={apt}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, asked.read_text() if asked.exists() else ""


def test_make_lab_needs_no_engine_or_browser_package(tmp_path: Path) -> None:
    done, asked = _system("system-lab", tmp_path)
    assert done.returncode == 0, done.stderr
    assert asked == ""  # nothing to install: Python with venv and Node.js are all the lab needs


def test_make_test_installs_the_engines_and_the_browser(tmp_path: Path) -> None:
    done, asked = _system("system-test", tmp_path)
    assert done.returncode == 0, done.stderr
    install = next(line for line in asked.splitlines() if line.startswith("install"))
    for package in ("openmpi-bin", "slurmctld", "munge", "chromium"):
        assert package in install.split()
