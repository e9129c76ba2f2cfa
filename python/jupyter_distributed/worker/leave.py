"""A rank's exit once the kernel said stop: what a user's code relies on, without the rest.

A normal interpreter exit joins the non-daemon threads, runs the ``atexit`` handlers, then tears
down every module and collects what is left. That last step is most of a rank's exit: about
20 ms of CPU for an idle rank, spent walking every object, so a hundred ranks stopping at once on
two cores spent over a second in it. Nothing a user may rely on happens there (Python does not
promise that ``__del__`` runs at exit). So a rank leaves as the interpreter would, in its order,
up to that step: non-daemon threads joined, ``atexit`` handlers run (the user's, then the
libraries'), the user's namespace dropped (an unclosed file a cell opened is flushed and closed,
as a normal exit would), the standard streams flushed, the caller's ``last`` step (the rank's
stack-dump files removed), then ``os._exit``. Descriptors, sockets and memory go with the
process, as they do at any exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

_exit = os._exit  # (Python's own: a rank's os._exit hands its output on first, see capture.py)


def leave(
    code: int, namespace: dict[str, Any], last: Callable[[], None] = lambda: None
) -> NoReturn:
    """Exit with ``code`` after the threads, the ``atexit`` handlers, the user's objects and
    ``last``."""
    join = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx calls first
    if join is not None:
        with contextlib.suppress(Exception):
            join()
    atexit._run_exitfuncs()  # (a handler's error is printed, as at a normal exit)
    namespace.clear()  # (no collection: a full one is what costs)
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    with contextlib.suppress(Exception):
        last()
    _exit(code)
