"""What one rank shows under a cell (its *area*, see :mod:`.display`), and whether there is a
shell to show rich displays at all."""

from __future__ import annotations


class Area:
    """The displays one rank shows under the cell, by id: ``lives`` its live lines, ``shown``
    its displays without an id of their own and ``named`` those with one (``display(...,
    display_id=)``); ``free`` displays that a clear emptied, which the rank's next displays
    fill first (each is under its label), and ``cleared`` the named ones it emptied, filled
    again when shown again."""

    __slots__ = ("cleared", "free", "lives", "named", "shown")

    def __init__(self) -> None:
        self.lives: list[str] = []
        self.shown: list[str] = []
        self.named: list[str] = []
        self.free: list[str] = []
        self.cleared: set[str] = set()


def rich() -> bool:
    """Whether an IPython shell is there to publish displays (else they are shown as text)."""
    from IPython.core.interactiveshell import InteractiveShell

    return bool(InteractiveShell.initialized())


def in_place() -> bool:
    """Whether displays are updated in place: a kernel's frontend (a notebook) does, a terminal
    IPython prints each update again."""
    from IPython.core.interactiveshell import InteractiveShell

    return rich() and getattr(InteractiveShell.instance(), "kernel", None) is not None
