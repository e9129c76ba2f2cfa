"""Jupyter server configuration for the panel's browser tests (used by playwright.config.ts).

A throw-away root directory and run store under ``ui-tests/.server`` (git-ignored), a fixed
token that the tests send in an Authorization header, and Galata's helper set up.
"""

import os
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

c = get_config()  # type: ignore[name-defined] # noqa: F821
configure_jupyter_server(c)
c.ServerApp.root_dir = str(root)
c.ServerApp.ip = "127.0.0.1"
c.ServerApp.port = int(os.environ.get("UI_TEST_PORT", "8931"))
c.IdentityProvider.token = os.environ.get("UI_TEST_TOKEN", "ui-test-token")
c.ServerApp.allow_root = True
c.ServerApp.open_browser = False
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
