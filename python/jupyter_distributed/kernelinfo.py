"""Which Jupyter kernel this process is, as a run records it.

A run names its kernel by id, so that the server can tell which notebook the kernel has open
now (a notebook renamed after its kernel started keeps its old ``JPY_SESSION_NAME``), and the
panel can find the kernel's session after the rename. ipykernel names its connection file
``kernel-<id>.json`` after the id the Jupyter server gave the kernel.
"""

from __future__ import annotations

import re
from pathlib import Path

_CONNECTION_FILE = re.compile(r"kernel-(.+)\.json")


def kernel_id() -> str:
    """The id of the Jupyter kernel this process runs; "" outside a kernel (or one started
    without a server, whose connection file is named otherwise). Never creates the kernel
    application: ``get_connection_file()`` would make one in a process that has none."""
    try:
        from ipykernel.kernelapp import IPKernelApp
        from traitlets.config.configurable import MultipleInstanceError
    except ImportError:
        return ""
    if not IPKernelApp.initialized():
        return ""
    try:
        name = Path(IPKernelApp.instance().connection_file).name
    except MultipleInstanceError:  # another application is the singleton (a server, a test)
        return ""
    found = _CONNECTION_FILE.fullmatch(name)
    return found.group(1) if found else ""
