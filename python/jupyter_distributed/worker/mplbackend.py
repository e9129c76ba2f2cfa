"""The matplotlib backend of a rank (``MPLBACKEND=module://jupyter_distributed.worker.mplbackend``):
Agg drawing, no display server; ``plt.show()`` and the figures still open at the end of a cell
become displays, as IPython's inline backend does, in the formats the kernel's
``InlineBackend`` settings name (PNG by default; ``retina``, JPEG, SVG, PDF), with its
``print_figure_kwargs``; its ``rc`` is set when this backend loads and again when it changes."""

from __future__ import annotations

import base64
import io
import struct
import sys
from typing import Any

import matplotlib
from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..protocol.figures import MIME, FigureConfig
from . import rich

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


def figure_bundle(figure: Figure, only: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """The figure as a display: one entry per format of the settings (``only``: those of
    that MIME type), and its text form."""
    figures = rich.ACTIVE.figures if rich.ACTIVE is not None else FigureConfig()
    formats = list(figures.formats)
    if "retina" in formats or "png2x" in formats:  # as IPython: retina replaces png
        formats = [f for f in formats if f not in ("png", "png2x")] + ["retina"]
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for name in dict.fromkeys(formats):
        mime = MIME[name]
        if only and mime != only:
            continue
        raw = _print(figure, "png" if name == "retina" else name, figures.print_kwargs, name)
        if mime == "image/svg+xml":
            data[mime] = raw.decode("utf-8")
            continue
        data[mime] = base64.b64encode(raw).decode()
        if name == "retina" and raw[:8] == b"\x89PNG\r\n\x1a\n":
            width, height = struct.unpack(">II", raw[16:24])
            metadata[mime] = {"width": width // 2, "height": height // 2}
    axes = len(figure.axes)
    text = f"<Figure size {figure.bbox.width:g}x{figure.bbox.height:g} with {axes} Axes>"
    data["text/plain"] = text
    return data, metadata


def _print(figure: Figure, fmt: str, kwargs: dict[str, Any], name: str) -> bytes:
    """As IPython's ``print_figure``: the figure's colours, its dpi (twice for retina)."""
    options: dict[str, Any] = {
        "format": "jpeg" if fmt == "jpg" else fmt,
        "facecolor": figure.get_facecolor(),
        "edgecolor": figure.get_edgecolor(),
        "dpi": figure.dpi * (2 if name in ("retina", "png2x") else 1),
        "bbox_inches": "tight",
        **kwargs,
    }
    buffer = io.BytesIO()
    figure.savefig(buffer, **options)
    return buffer.getvalue()


def flush_figures() -> None:
    """Show every open figure, then close them (a closed figure is not shown twice)."""
    managers = Gcf.get_all_fig_managers()
    try:
        for manager in managers:
            if rich.ACTIVE is not None:
                data, metadata = figure_bundle(manager.canvas.figure)
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
