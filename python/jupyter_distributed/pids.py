"""Is a process alive? (standard library only: the worker uses it too.)"""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as gone)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists
