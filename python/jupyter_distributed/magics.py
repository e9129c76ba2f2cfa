"""``%%distributed`` and ``%distributed``: parse, build the spec, hand off. Nothing else."""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser, magic_arguments, parse_argstring

from . import textviews
from .arguments import (
    layout_args,
    mpi_args,
    run_args,
    sagemaker_args,
    spec_from_args,
    strategy_args,
)
from .display import CellView
from .errors import SpecError
from .session import Session

LINE_COMMANDS = """
Line magic (%distributed COMMAND):
  status                      the live cluster(s) and their ranks
  stop                        stop every live cluster
  runs [-n N]                 the history of runs, newest first
  logs RUN [--rank R] [--search TEXT]   all output lines of a run
  attach JOB                  follow a SageMaker job again and fetch its results
  cancel RUN                  stop a SageMaker run's job
  release [JOB]               end a SageMaker warm pool (default: the latest kept one)
"""


def _line_parser() -> MagicArgumentParser:
    parser = MagicArgumentParser(prog="%distributed", description="Manage clusters and runs.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("status")
    sub.add_parser("stop")
    runs = sub.add_parser("runs")
    runs.add_argument("-n", type=int, default=20)
    logs = sub.add_parser("logs")
    logs.add_argument("run")
    logs.add_argument("--rank", type=int)
    logs.add_argument("--search")
    sub.add_parser("attach").add_argument("job")
    sub.add_parser("cancel").add_argument("run")
    sub.add_parser("release").add_argument("job", nargs="?")
    return parser


@magics_class
class DistributedMagics(Magics):
    def __init__(self, shell: Any, session: Session | None = None) -> None:
        super().__init__(shell)
        self.session = session or Session()

    @magic_arguments()
    @layout_args
    @strategy_args
    @run_args
    @mpi_args
    @sagemaker_args
    @line_cell_magic
    def distributed(self, line: str, cell: str | None = None) -> None:
        """Run the cell on every rank; with no cell, manage clusters and runs.

        ``%%distributed -n 4`` runs the cell on 4 local ranks. Ranks keep their variables
        between cells with the same settings; each has ``rank``, ``world_size``,
        ``local_rank``, ``node_rank`` and ``report(**metrics)``.
        """
        if cell is None:
            self._line(line)
            return
        args = parse_argstring(self.distributed, line)
        try:
            spec = spec_from_args(args)
            if args.dry_run:
                print(self.session.plan(spec).render())
                return
            assert self.shell is not None  # noqa: S101 (IPython always binds magics to a shell)
            self.session.run_cell(
                spec,
                cell,
                self.shell.user_ns,
                cell_id=self._cell_id(),
                view=_view(spec.ranks, args.quiet, args.widget),
            )
        except SpecError as exc:
            raise UsageError(str(exc)) from None

    def _line(self, line: str) -> None:
        try:
            args = _line_parser().parse_args(shlex.split(line))
        except ValueError as exc:
            raise UsageError(f"%distributed: {exc}") from None
        if args.command in (None, "status"):
            print(textviews.status(self.session))
        elif args.command == "stop":
            stopped = self.session.stop()
            print(f"stopped {', '.join(stopped)}" if stopped else "no cluster was running")
        elif args.command == "runs":
            print(textviews.runs(self.session.store, args.n))
        elif args.command == "logs":
            try:
                print(textviews.logs(self.session.store, args.run, args.rank, args.search))
            except KeyError as exc:
                raise UsageError(str(exc.args[0])) from None
        elif args.command in ("attach", "cancel", "release"):
            self._sagemaker(args)

    def _sagemaker(self, args: Any) -> None:
        from .backends.sagemaker import lifecycle

        store = self.session.store
        try:
            if args.command == "attach":
                assert self.shell is not None  # noqa: S101 (IPython binds magics to a shell)
                lifecycle.attach(store, args.job, CellView(), self.shell.user_ns)
            elif args.command == "cancel":
                print(lifecycle.cancel(store, args.run))
            else:
                print(lifecycle.release(store, args.job))
        except SpecError as exc:
            raise UsageError(str(exc)) from None

    def _cell_id(self) -> str:
        kernel = getattr(self.shell, "kernel", None)
        try:
            return str(kernel.get_parent()["metadata"].get("cellId", ""))  # type: ignore[union-attr]
        except (AttributeError, KeyError, TypeError):
            return ""


DistributedMagics.distributed.__doc__ = (
    DistributedMagics.distributed.__doc__ or ""
) + LINE_COMMANDS


def _view(ranks: tuple[int, ...], quiet: bool, widget: bool) -> CellView:
    if not widget:
        return CellView(quiet=quiet)
    from .widgets import WidgetView  # ipywidgets only when asked for

    return WidgetView(ranks, quiet=quiet)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(DistributedMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    magics = ipython.magics_manager.registry.get("DistributedMagics")
    if magics is not None:
        magics.session.shutdown()
