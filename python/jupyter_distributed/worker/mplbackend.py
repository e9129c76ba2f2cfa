"""The matplotlib backend of a rank (``MPLBACKEND=module://jupyter_distributed.worker.mplbackend``):
Agg drawing, no display server; ``plt.show()`` and the figures still open at the end of a cell
become displays, as IPython's inline backend does, in the formats the kernel's
``InlineBackend`` settings name (PNG by default; ``retina``, JPEG, SVG, PDF), with its
``print_figure_kwargs``; its ``rc`` is set when this backend loads and again when it changes."""

from __future__ import annotations

import sys
from typing import Any

import matplotlib
from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ..protocol.figures import FigureConfig
from . import rich
from .figures import figure_bundle

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

_rc: dict[str, Any] = {}  # the settings' rc set last


def configure(figures: FigureConfig) -> None:
    """Set the settings' rcParams when they changed (an rc the user set since is kept until
    then); a value matplotlib refuses is said on the rank's stderr and left out."""
    global _rc
    if figures.rc == _rc:
        return
    _rc = dict(figures.rc)
    params: Any = matplotlib.rcParams  # (any key the user named)
    for key, value in figures.rc.items():
        try:
            params[key] = value
        except (KeyError, ValueError, TypeError) as exc:
            sys.stderr.write(f"InlineBackend.rc[{key!r}] is not used on this rank: {exc}\n")


def flush_figures() -> None:
    """Show every open figure, then close them (a closed figure is not shown twice)."""
    managers = Gcf.get_all_fig_managers()
    try:
        for manager in managers:
            if rich.ACTIVE is not None:
                data, metadata = figure_bundle(manager.canvas.figure, rich.ACTIVE.figures)
                rich.ACTIVE.publish(data, metadata)
    finally:
        if managers:
            Gcf.destroy_all()


def show(*args: Any, **kwargs: Any) -> None:
    flush_figures()


def draw_if_interactive() -> None:
    pass


if rich.ACTIVE is not None:
    configure(rich.ACTIVE.figures)
