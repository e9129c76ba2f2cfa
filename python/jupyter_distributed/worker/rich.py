"""Rich output inside a rank, as a notebook cell has it.

``display()``, ``update_display()`` and the cell's last expression become MIME bundles sent
to the kernel (:class:`~..protocol.reports.Display`), ``clear_output()`` a
:class:`~..protocol.reports.ClearOutput`: a minimal IPython shell whose display
publisher is ours is installed once IPython is imported (by the cell, or here for a last value
with a rich form), so a rank that never displays anything never pays for IPython; without
IPython (some SageMaker images) results stay text. matplotlib draws with :mod:`.mplbackend`,
in the formats the kernel's ``InlineBackend`` settings name (:attr:`Displays.figures`).
``input()`` and ``getpass()`` fail at once where a rank has no channel to the kernel.
"""

from __future__ import annotations

import builtins
import getpass
import importlib.util
import sys
import warnings
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from typing import Any, Protocol

from ..protocol.bundles import DEFAULT_MAX_BYTES, capped
from ..protocol.commands import NO_PROMPTS
from ..protocol.figures import MIME, FigureConfig
from ..protocol.reports import ClearOutput, Display
from .figures import figure_bundle
from .pdbhook import redirect_set_trace

NO_STDIN = "ranks have no stdin; pass values with --push"
BACKEND_MODULE = "jupyter_distributed.worker.mplbackend"
RICH_METHODS = (
    "_repr_html_", "_repr_png_", "_repr_jpeg_", "_repr_svg_", "_repr_json_", "_repr_markdown_",
    "_repr_latex_", "_repr_mimebundle_", "_ipython_display_",
)  # fmt: skip


class NoStdin(RuntimeError):
    """``input()`` or ``getpass()`` on a rank."""


def _no_channel(*args: Any, **kwargs: Any) -> str:
    raise NoStdin(NO_PROMPTS)


def _no_pdb(*, header: str | None = None) -> None:
    raise NoStdin(NO_PROMPTS)


def guard_stdin() -> None:
    """Make ``input()``, ``getpass()``, ``breakpoint()`` and ``pdb.set_trace()`` fail at once
    with one line: a rank with a channel to the kernel replaces them (``debugger.py``), so these
    stay only where there is none (SageMaker)."""
    builtins.input = _no_channel
    getpass.getpass = _no_channel
    sys.breakpointhook = _no_channel
    redirect_set_trace(_no_pdb)  # (pdb itself is imported only where a cell does)


class Sender(Protocol):
    def display(self, message: Display) -> None: ...

    def clear(self, message: ClearOutput) -> None: ...


#: the displays of this rank's runtime (the matplotlib backend publishes through it)
ACTIVE: Displays | None = None


class Displays:
    def __init__(self, sender: Sender, rank: int) -> None:
        self.sender, self.rank = sender, rank
        self.run_id = ""
        self.max_bytes = DEFAULT_MAX_BYTES
        self.sync: Callable[[], None] = lambda: None
        self.formatter: Any = None  # IPython's DisplayFormatter, once installed
        self.figures = FigureConfig()  # how figures are drawn (the kernel's inline settings)
        global ACTIVE
        ACTIVE = self

    def begin(
        self,
        run_id: str,
        max_bytes: int | None,
        sync: Callable[[], None],
        figures: FigureConfig | None = None,
    ) -> None:
        self.run_id, self.sync = run_id, sync
        self.max_bytes = max_bytes if max_bytes is not None else DEFAULT_MAX_BYTES
        self.figures = figures or FigureConfig()
        backend = sys.modules.get(BACKEND_MODULE)
        if backend is not None:  # (else it reads them when it loads)
            backend.configure(self.figures)

    def publish(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        display_id: str | None = None,
        update: bool = False,
        result: bool = False,
    ) -> None:
        """Send one bundle (a note instead when it is over the cap), after the output that
        came before it."""
        self.sync()
        data = capped(data, self.max_bytes, self.rank)
        message = Display(self.run_id, data, metadata or {}, display_id, update, result)
        self.sender.display(message)

    def clear(self, wait: bool = False) -> None:
        """``clear_output(wait)``: the kernel clears what this rank shows under the cell."""
        self.sync()
        self.sender.clear(ClearOutput(self.run_id, wait))

    def result(self, value: Any) -> bool:
        """Publish the cell's last value when it has a richer form than text; whether it did."""
        if value is None:
            return False
        if self.formatter is None:
            kind = type(value)
            if not (
                any(getattr(kind, m, None) is not None for m in RICH_METHODS)
                or kind.__module__.startswith("matplotlib.")
            ):
                return False
            try:
                import IPython  # noqa: F401 (installs our shell: see watch)
            except ImportError:
                return False
            if self.formatter is None:
                return False
        try:
            data, metadata = self.formatter.format(value)
        except Exception:  # noqa: BLE001 (a broken _repr_*_ leaves the text result)
            return False
        if not set(data) - {"text/plain"}:
            return False
        self.publish(data, metadata, result=True)
        return True

    def end_cell(self) -> None:
        """Figures still open at the end of the cell are shown (as IPython's inline backend)."""
        backend = sys.modules.get(BACKEND_MODULE)
        if backend is not None:
            backend.flush_figures()

    def watch(self, namespace: dict[str, Any], module: Any) -> None:
        """Install the shell as soon as IPython is imported (now, if it already is)."""
        if "IPython" in sys.modules:
            self.install(namespace, module)
            return
        sys.meta_path.insert(0, _AfterImport("IPython", lambda: self.install(namespace, module)))
        namespace.setdefault("display", _display)

    def install(self, namespace: dict[str, Any], module: Any) -> bool:
        """A minimal IPython shell publishing through us; False when IPython is missing."""
        try:
            from IPython.core.displaypub import DisplayPublisher
            from IPython.core.interactiveshell import InteractiveShell
            from IPython.display import display
            from traitlets.config import Config
        except ImportError:
            return False
        publish, clear = self.publish, self.clear

        class RankPublisher(DisplayPublisher):
            def publish(
                self,
                data: dict[str, Any],
                metadata: dict[str, Any] | None = None,
                source: Any = None,
                *,
                transient: dict[str, Any] | None = None,
                update: bool = False,
                **kwargs: Any,
            ) -> None:
                publish(data, metadata, (transient or {}).get("display_id"), update)

            def clear_output(self, wait: bool = False) -> None:
                clear(wait)

        config = Config()
        config.HistoryManager.enabled = False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                shell = InteractiveShell.instance(
                    config=config, user_module=module, user_ns=namespace,
                    display_pub_class=RankPublisher,
                )  # fmt: skip
        except Exception:  # noqa: BLE001 (no shell: results and displays stay text)
            return False
        formatter = shell.display_formatter
        if formatter is None:
            return False
        for mime in set(MIME.values()):  # a figure as the cell's last value
            if mime in formatter.formatters:
                formatter.formatters[mime].for_type_by_name(
                    "matplotlib.figure", "Figure", _FigureAs(mime)
                )
        self.formatter = formatter
        if namespace.get("display") in (None, _display):
            namespace["display"] = display
        return True


def _display(*objs: Any, **kwargs: Any) -> Any:
    """``display`` before IPython is imported: imports it (which installs our shell)."""
    from IPython.display import display

    return display(*objs, **kwargs)  # type: ignore[no-untyped-call]


class _AfterImport:
    """A meta path finder that runs ``then`` once the module ``name`` has been imported."""

    def __init__(self, name: str, then: Callable[[], object]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module, then = loader.exec_module, self.then

        def run(module: Any) -> None:
            exec_module(module)
            then()

        loader.exec_module = run  # type: ignore[method-assign]
        return spec


class _FigureAs:
    """A figure as the cell's last value, in one MIME type: what IPython's formatter for that
    type calls (None when the settings draw no such type; matplotlib is imported by then)."""

    def __init__(self, mime: str) -> None:
        self.mime = mime

    def __call__(self, figure: Any) -> Any:
        figures = ACTIVE.figures if ACTIVE is not None else FigureConfig()
        data, metadata = figure_bundle(figure, figures, self.mime)
        if self.mime not in data:
            return None
        return (data[self.mime], metadata[self.mime]) if self.mime in metadata else data[self.mime]
