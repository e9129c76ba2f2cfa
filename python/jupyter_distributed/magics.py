"""``%%distributed`` and ``%distributed``: parse, build the spec, hand off. Nothing else.

The line commands (``status``, ``runs``, ``logs``, ...) live in :mod:`.line_commands`. Backend
flags and backend line commands come from the registry (:mod:`.backends`); defaults come from
traitlets settings (:mod:`.settings`) registered with the shell, so ``%config`` and
``ipython_config.py`` reach them.
"""

from __future__ import annotations

import copy
import functools
import shlex
from argparse import Namespace
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import magic_arguments, parse_argstring

from . import line_commands, plotfigures, probe, textviews
from .advise import command as advise_command
from .advise.report import display_advice
from .arguments import backend_args, layout_args, run_args, strategy_args
from .backends import plugin, plugins
from .cell_spec import spec_from_args
from .debugging import NO_STDIN, notebook_stdin
from .display import CellView
from .errors import SpecError
from .magicwords import line_words
from .probe import ProbeSettings, parse_sizes
from .session import Session
from .settings import Distributed, Settings
from .spec import Spec

SPECS_KEPT = 16  # lines whose parsed flags and spec are kept


@functools.lru_cache(maxsize=SPECS_KEPT)  # pure in the line, parsed again on every run of a cell
def _parsed(line: str) -> Namespace:
    line_words(line)  # an unbalanced quote is a one-line error, not argparse's traceback
    return _arguments(line)


def _arguments(line: str) -> Namespace:
    """The cell magic's flags in ``line`` (checked by :func:`.line_words` first)."""
    try:
        args: Namespace = parse_argstring(DistributedMagics.distributed, line)
    except ValueError as exc:  # IPython splits the line its own way (quotes inside a word)
        raise UsageError(f"%distributed: {exc} in {line!r}") from None
    return args


@magics_class
class DistributedMagics(Magics):
    def __init__(self, shell: Any, session: Session | None = None) -> None:
        super().__init__(shell)
        self.settings = Distributed(parent=shell)
        self.backend_settings: dict[str, Settings] = {
            p.name: p.settings(parent=shell) for p in plugins() if p.settings is not None
        }
        self.session = session or Session(settings=self.settings)
        if self.session.settings is None:  # a session made elsewhere follows %config too
            self.session.settings = self.settings
        self.auto: str | None = None  # the settings of %distributed on
        # the spec of each line seen, while no setting changes (a spec is immutable; building
        # one again for every run of a cell cost a tenth of a warm round trip)
        self._specs: dict[str, Spec] = {}
        for configurable in (self.settings, *self.backend_settings.values()):
            configurable.observe(lambda _change: self._specs.clear())
        self._to_ranks = ToRanks()
        configurables = getattr(shell, "configurables", None)
        if configurables is not None:  # what %config lists and updates; one of each class
            mine = [self.settings, *self.backend_settings.values()]
            kinds = {type(c) for c in mine}
            configurables[:] = [c for c in configurables if type(c) not in kinds] + mine

    @magic_arguments()
    @layout_args
    @strategy_args
    @run_args
    @backend_args
    @line_cell_magic
    def distributed(self, line: str, cell: str | None = None) -> None:
        """Run the cell on every rank; with no cell, manage clusters and runs.

        ``%%distributed -n 4`` runs the cell on 4 local ranks. Ranks keep their variables
        between cells with the same settings; each has ``rank``, ``world_size``,
        ``local_rank``, ``node_rank`` and ``report(**metrics)``. Rich displays (``display()``,
        a rich last expression, matplotlib figures) and progress bars (tqdm) from ranks show
        under the cell as from a local cell, labelled by rank; ``breakpoint()``, ``input()`` and
        ``getpass()`` on a rank prompt in the notebook (where it answers input).
        """
        if cell is None:
            self._line(line)
            return
        if self.auto is not None and line == self.auto:
            print(f"[distributed on: {line or 'default settings'}; %distributed off to leave]")
        args = _parsed(line)
        try:
            spec = self._spec(line)
            if args.dry_run:
                print(textviews.dry_run(self.session, spec))
                return
            assert self.shell is not None  # noqa: S101 (IPython always binds magics to a shell)
            if spec.sweep is not None:
                self.session.run_sweep(spec, cell, self.shell.user_ns, self._cell_id(), args.quiet)
                return
            stdin = not args.quiet and notebook_stdin()  # (--quiet: nothing under the cell)
            if args.break_rank is not None and not stdin:
                raise UsageError(f"--break: {NO_STDIN}")
            self.session.run_cell(
                spec,
                cell,
                self.shell.user_ns,
                cell_id=self._cell_id(),
                view=_view(spec, args.quiet, args.widget, cell),
                stdin=stdin,
                break_rank=args.break_rank,
            )
        except SpecError as exc:
            raise UsageError(str(exc)) from None

    def _spec(self, line: str) -> Spec:
        spec = self._specs.get(line)
        if spec is None:
            args = copy.copy(_parsed(line))
            spec = spec_from_args(args, self.settings, self._backend_defaults)
            if len(self._specs) >= SPECS_KEPT:
                self._specs.clear()
            self._specs[line] = spec
        return spec

    def _auto(self, settings: str | None) -> None:
        """``%distributed on SETTINGS`` / ``off``: every following cell runs on the ranks."""
        assert self.shell is not None  # noqa: S101 (IPython binds magics to a shell)
        transforms = self.shell.input_transformers_cleanup
        if self._to_ranks in transforms:
            transforms.remove(self._to_ranks)
        if settings is None:
            was, self.auto = self.auto, None
            print("cells run in the kernel" + ("" if was is not None else " (it was not on)"))
            return
        args = _arguments(settings)  # bad settings: refused now
        try:
            spec_from_args(args, self.settings, self._backend_defaults)
        except SpecError as exc:
            raise UsageError(str(exc)) from None
        if args.dry_run:
            raise UsageError("%distributed on: --dry-run applies to one cell")
        self.auto = settings
        self._to_ranks.line = settings
        transforms.append(self._to_ranks)
        print(
            f"distributed on: every cell runs on the ranks ({settings or 'default settings'}); "
            "%distributed off returns to the kernel"
        )

    def _probe(self, words: list[str]) -> None:
        known, rest = line_commands.probe_parser().parse_known_args(words)
        try:
            settings = ProbeSettings(known.quick, parse_sizes(known.sizes) if known.sizes else None)
            given = None
            if rest:
                args = _arguments(shlex.join(rest))
                given = spec_from_args(args, self.settings, self._backend_defaults)
            spec = probe.target(self.session.live, known.cluster, given)
            if spec.world_size < 2:
                raise SpecError("a probe needs at least 2 ranks; e.g. %distributed probe -n 2")
            result = probe.run(self.session, spec, settings, CellView(quiet=True, progress=True))
        except SpecError as exc:
            raise UsageError(str(exc)) from None
        for figure in plotfigures.probe_figures(result):
            plotfigures.show(figure)
        print(probe.table(result))

    def _advise(self, line: str, words: list[str]) -> None:
        args = advise_command.parser().parse_args(words)
        try:
            advice = advise_command.run(
                args, "advise" + line, self.session.store, self.session.live, self.shell,
                self._quick_probe,
            )  # fmt: skip
        except SpecError as exc:
            raise UsageError(str(exc)) from None
        display_advice(advice)

    def _quick_probe(self, nodes: int, per_node: int, cluster: str | None) -> dict[str, Any]:
        """The probe ``advise`` needs and the history lacks: a ``--quick`` one, said and timed
        apart from the advice."""
        flags = f"--nodes {nodes} --procs-per-node {per_node}"
        given = spec_from_args(_arguments(flags), self.settings, self._backend_defaults)
        spec = probe.target(self.session.live, cluster, given)
        print(f"advise: no probe of a {nodes * per_node}-rank cluster in the history yet; "
              f"running %distributed probe --quick {flags} first")  # fmt: skip
        result = probe.run(self.session, spec, ProbeSettings(quick=True),
                           CellView(quiet=True, progress=True))  # fmt: skip
        print(f"advise: probe {result['run_id']} took {result['seconds']:.1f} s "
              "(not counted in the advice's time)")  # fmt: skip
        return result

    def _backend_defaults(self, name: str) -> dict[str, Any]:
        return plugin(name).defaults(self.backend_settings.get(name))

    def _line(self, line: str) -> None:
        words = line_words(line)
        if words and words[0] in ("on", "off"):
            if words[0] == "off" and len(words) > 1:
                raise UsageError("%distributed off takes no settings")
            self._auto(line.strip()[2:].strip() if words[0] == "on" else None)
            return
        if words[:1] == ["probe"]:
            self._probe(words[1:])
            return
        if words[:1] == ["advise"]:
            self._advise(line.strip()[len("advise") :], words[1:])
            return
        args = line_commands.line_parser().parse_args(words)
        assert self.shell is not None  # noqa: S101 (IPython binds magics to a shell)
        settings = [self.settings, *self.backend_settings.values()]
        line_commands.run(args, self.session, settings, self.shell.user_ns, self._backend_defaults)

    def _cell_id(self) -> str:
        kernel = getattr(self.shell, "kernel", None)
        try:
            return str(kernel.get_parent()["metadata"].get("cellId", ""))  # type: ignore[union-attr]
        except (AttributeError, KeyError, TypeError):
            return ""


class ToRanks:
    """IPython input transformer while ``%distributed on``: a cell becomes ``%%distributed``;
    a cell that starts with a magic (``%...``) or is empty is left to the kernel."""

    line = ""

    def __call__(self, lines: list[str]) -> list[str]:
        first = next((ln for ln in lines if ln.strip()), "")
        if not first or first.lstrip().startswith("%"):
            return lines
        return [f"%%distributed {self.line}\n", *lines]


DistributedMagics.distributed.__doc__ = (
    DistributedMagics.distributed.__doc__ or ""
) + line_commands.command_help()


def _view(spec: Spec, quiet: bool, widget: bool, cell: str = "") -> CellView:
    if not widget:
        return CellView(
            quiet=quiet,
            display_ranks=spec.display,
            output_ranks=spec.output,
            collapse=spec.collapse,
            ranks=spec.ranks,
        )
    from .widgets import WidgetView  # ipywidgets only when asked for

    return WidgetView(
        spec.ranks,
        quiet=quiet,
        display_ranks=spec.display,
        output_ranks=spec.output,
        collapse=spec.collapse,
        backend=spec.backend,
        source=cell,
    )


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(DistributedMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    magics = ipython.magics_manager.registry.get("DistributedMagics")
    if magics is not None:
        if magics._to_ranks in ipython.input_transformers_cleanup:
            ipython.input_transformers_cleanup.remove(magics._to_ranks)
        magics.session.shutdown()
        for settings in [magics.settings, *magics.backend_settings.values()]:
            if settings in ipython.configurables:
                ipython.configurables.remove(settings)
