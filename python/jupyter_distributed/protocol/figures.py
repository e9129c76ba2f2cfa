"""How a rank turns matplotlib figures into displays, as the kernel's ``%matplotlib inline``
settings say (IPython's ``InlineBackend``: ``figure_formats``, ``rc``,
``print_figure_kwargs``). The kernel reads them (:mod:`jupyter_distributed.figures`) and sends
them with every cell (:class:`~.messages.Execute`); the rank's backend
(:mod:`jupyter_distributed.worker.mplbackend`) draws with them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: IPython's figure formats and the MIME type each one gives.
MIME = {
    "png": "image/png",
    "retina": "image/png",  # drawn at twice the resolution, shown at the same size
    "png2x": "image/png",
    "jpeg": "image/jpeg",
    "jpg": "image/jpeg",
    "svg": "image/svg+xml",
    "pdf": "application/pdf",
}


def _json(values: Any) -> dict[str, Any]:
    """The entries of a mapping that survive JSON (tuples become lists); the rest are left out."""
    out: dict[str, Any] = {}
    if not isinstance(values, dict):
        return out
    for key, value in values.items():
        try:
            out[str(key)] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            continue
    return out


@dataclass(frozen=True)
class FigureConfig:
    """``formats``: IPython figure formats (keys of :data:`MIME`), in order; ``rc``: matplotlib
    rcParams set on a rank once it draws (and again when they change); ``print_kwargs``: extra
    arguments of ``Figure.savefig`` (``bbox_inches`` and the like)."""

    formats: tuple[str, ...] = ("png",)
    rc: dict[str, Any] = field(default_factory=dict)
    print_kwargs: dict[str, Any] = field(default_factory=lambda: {"bbox_inches": "tight"})

    def to_json(self) -> dict[str, Any]:
        return {"formats": list(self.formats), "rc": self.rc, "print_kwargs": self.print_kwargs}

    @classmethod
    def from_json(cls, data: Any) -> FigureConfig:
        """The settings of ``data`` (a dict, as :meth:`to_json` gives); formats a rank does not
        know are left out, and none left means PNG."""
        if not isinstance(data, dict):
            return cls()
        raw = data.get("formats")
        names = [raw] if isinstance(raw, str) else raw if isinstance(raw, list | tuple) else []
        formats = tuple(dict.fromkeys(str(f).lower() for f in names if str(f).lower() in MIME))
        print_kwargs = data.get("print_kwargs")
        return cls(
            formats or ("png",),
            _json(data.get("rc")),
            _json(print_kwargs) if isinstance(print_kwargs, dict) else {"bbox_inches": "tight"},
        )
