"""The kernel's ``%matplotlib inline`` settings, as ranks use them.

IPython keeps them in ``matplotlib_inline``'s ``InlineBackend`` (``%config
InlineBackend.figure_formats = {'svg'}``, ``%config InlineBackend.figure_format = 'retina'``,
``InlineBackend.rc``, ``InlineBackend.print_figure_kwargs``, or an ``ipython_config.py``).
They are read before each cell runs on the ranks and sent with it, so a rank's figures come
back in the format a local cell's would. Reading never creates IPython's ``InlineBackend``
singleton: before ``%matplotlib inline`` made one, the settings come from the shell's config.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from .protocol.figures import FigureConfig

log = logging.getLogger("jupyter_distributed")


def kernel_figures(shell: Any = None) -> FigureConfig | None:
    """The figure settings of ``shell`` (by default the running IPython shell); None outside
    IPython or without ``matplotlib-inline`` (ranks then draw PNGs)."""
    if shell is None:
        try:
            from IPython.core.interactiveshell import InteractiveShell
        except ImportError:
            return None
        if not InteractiveShell.initialized():
            return None
        shell = InteractiveShell.instance()
    try:
        from matplotlib_inline.config import InlineBackend
        from traitlets import TraitError
    except ImportError:
        return None
    try:
        if InlineBackend.initialized():
            settings = InlineBackend.instance()
        else:  # a throwaway one, configured as the singleton would be
            return _from_config(InlineBackend, shell.config)
        formats = sorted(settings.figure_formats)
        rc, print_kwargs = dict(settings.rc), dict(settings.print_figure_kwargs)
    except (TraitError, TypeError, ValueError) as exc:  # e.g. 'jpeg' without Pillow
        log.warning("jupyter-distributed: InlineBackend settings not used on ranks: %s", exc)
        return None
    return FigureConfig.from_json({"formats": formats, "rc": rc, "print_kwargs": print_kwargs})


_made: dict[str, FigureConfig] = {}  # the config's sections (as text) read last -> their settings


def _from_config(backend: Any, config: Any) -> FigureConfig:
    """The settings an ``InlineBackend`` made from ``config`` would have. Making one costs
    ~50 µs (traitlets) on every cell, so the answer is kept while the config's sections that
    such an object reads (its classes' names) read the same."""
    key = repr([(c.__name__, config[c.__name__]) for c in backend.mro() if c.__name__ in config])
    made = _made.get(key)
    if made is not None:
        return made
    with warnings.catch_warnings():  # (its old-style observers warn)
        warnings.simplefilter("ignore", DeprecationWarning)
        settings = backend(config=config)
    formats = sorted(settings.figure_formats)
    rc, print_kwargs = dict(settings.rc), dict(settings.print_figure_kwargs)
    made = FigureConfig.from_json({"formats": formats, "rc": rc, "print_kwargs": print_kwargs})
    _made.clear()  # (one config at a time)
    _made[key] = made
    return made
