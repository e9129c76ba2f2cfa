"""Jupyter server configuration for the panel's browser tests (used by playwright.config.ts).

A throw-away root directory, run store and Galata's scratch directories under
``ui-tests/.server`` (git-ignored), a fixed token that the tests send in an Authorization
header, and Galata's helper set up.
"""

import os
import shutil
import tempfile
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

here = Path(__file__).resolve().parent
work = here / ".server"
root = work / "notebooks"
root.mkdir(parents=True, exist_ok=True)
# The kernel (and the ranks it starts) and the server extension share this store (named by
# playwright.config.ts); each test session starts with an empty history.
store = Path(os.environ.setdefault("JUPYTER_DISTRIBUTED_STORE", str(work / "runs.sqlite")))
for old in store.parent.glob(store.name + "*"):
    old.unlink()

# What Galata's helper makes in the temporary directory (a root and a workspaces directory, the
# terminal's rc file; never removed) goes here instead of /tmp, emptied at each session's start.
scratch = work / "tmp"
shutil.rmtree(scratch, ignore_errors=True)
scratch.mkdir(parents=True)

c = get_config()  # type: ignore[name-defined] # noqa: F821
tempfile.tempdir, default_tmp = str(scratch), tempfile.tempdir
try:
    configure_jupyter_server(c)
finally:
    tempfile.tempdir = default_tmp
c.ServerApp.root_dir = str(root)
c.ServerApp.ip = "127.0.0.1"
c.ServerApp.port = int(os.environ.get("UI_TEST_PORT", "8931"))
c.IdentityProvider.token = os.environ.get("UI_TEST_TOKEN", "ui-test-token")
c.ServerApp.allow_root = True
c.ServerApp.open_browser = False
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
