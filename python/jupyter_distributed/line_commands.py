"""The line magic's commands (``%distributed status``, ``runs``, ``logs``, ...): their parser,
their help text and what each one does.

Apart from :mod:`.magics` so the magic stays a thin parse-and-hand-off: it keeps the cell
magic, ``on``/``off`` and ``probe`` (which read the cell magic's own settings) and hands every
other command here. Backends add their own commands through the registry (:mod:`.backends`).
"""

from __future__ import annotations

import functools
from argparse import ArgumentTypeError, Namespace
from collections.abc import Callable, Mapping
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from . import debugging, plotfigures, scaling, textviews
from .arguments import MAX_INT
from .backends import plugin, plugins
from .backends.hooks import CommandContext
from .backends.plugin import doctor
from .display import CellView
from .errors import CloudError, NotFound, SpecError
from .history.budget import Running
from .history.store import Store
from .rates import STRAGGLER_THRESHOLD
from .recorder import recording
from .session import Session
from .settings import Settings

LINE_COMMANDS = """
Line magic (%distributed COMMAND):
  status [--ranks]            the live cluster(s): each rank, or one line per node above 64 ranks
  stop                        stop every live cluster
  runs [-n N]                 the history of runs, newest first
  runs --delete ID [ID ...]   delete finished runs and all they hold (logs, metrics, ...)
  logs RUN [--rank R] [--search TEXT]   all output lines of a run
  config                      the effective settings and where each came from
  on [SETTINGS]               run every following cell on the ranks (as %%distributed SETTINGS);
                              line magics (%...) still run in the kernel
  off                         cells run in the kernel again
  probe [--quick] [--sizes 1K-256M] [--cluster ID] [SETTINGS]   bandwidth/latency of every
                              pair of ranks and an all_reduce curve, on the live cluster (ID:
                              that one while it lives) or one with SETTINGS
  compare [RUN ...] [--threshold 0.8]   samples/s against world size, ideal scaling and
                              efficiency (default: the runs of the last cell that reported)
  advise --model NAME --global-batch B [--seq S] [--nodes N --procs-per-node P]
         [--probe RUN] [--optimizer adamw|sgd] [--verify K --step NAME --repeats R]
         [--uncalibrated]     the layouts our strategies can launch, ranked by predicted
                              samples/s, with predicted GiB per rank and step time; --verify
                              measures the top K and calibrates the next advise (see README)
  doctor --backend NAME       check what a backend needs here, and say what is missing
  stacks [RUN] [--rank R]     every thread of each rank, where it waits (RUN: a run that
                              another kernel, or this one, is running)
  debug [--rank R]            pdb on a rank's last exception, in the live rank (default: the
                              root cause's rank of the last cell that failed)
  tf-strategy                 strategy and coordinator again (--strategy parameter-server
                              --framework tensorflow: the kernel is TensorFlow's coordinator)
"""


def _count(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 10_000:
        raise ArgumentTypeError(f"must be 1-10000, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ArgumentTypeError(f"must be a fraction in (0, 1], got {text}")
    return value


@functools.cache  # built once: the registry is fixed and parsing leaves a parser as it was
def probe_parser() -> MagicArgumentParser:
    """``%distributed probe``'s own flags; the rest of its words are cell magic settings."""
    parser = MagicArgumentParser(prog="%distributed probe", add_help=False)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes")
    parser.add_argument("--cluster")  # the panel's Probe: this cluster while it lives here
    return parser


def _rank(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_INT:
        raise ArgumentTypeError(f"must be a rank 0-{MAX_INT}, got {text}")
    return value


@functools.cache  # built once: its ~15 subparsers cost ~1.6 ms of CPU a line command
def line_parser() -> MagicArgumentParser:
    """Every line command, the backends' included (``on``, ``off`` and ``probe`` only by name)."""
    parser = MagicArgumentParser(prog="%distributed", description="Manage clusters and runs.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("status").add_argument("--ranks", action="store_true")
    sub.add_parser("stop")
    sub.add_parser("config")
    sub.add_parser("on")  # (its settings are the cell magic's; see DistributedMagics._line)
    sub.add_parser("off")
    compare = sub.add_parser("compare")
    compare.add_argument("runs", nargs="*")
    compare.add_argument("--threshold", type=_fraction, default=0.8)
    runs = sub.add_parser("runs")
    runs.add_argument("-n", type=_count, default=20)
    runs.add_argument("--delete", nargs="+", metavar="ID")
    logs = sub.add_parser("logs")
    logs.add_argument("run")
    logs.add_argument("--rank", type=_rank)
    logs.add_argument("--search")
    doctors = [p.name for p in plugins() if p.doctor]
    sub.add_parser("doctor").add_argument("--backend", required=True, choices=doctors)
    stacks = sub.add_parser("stacks")
    stacks.add_argument("run", nargs="?")
    stacks.add_argument("--rank", type=_rank)
    sub.add_parser("debug").add_argument("--rank", type=_rank)
    sub.add_parser("tf-strategy")
    for p in plugins():
        for command in p.commands:
            parser_ = sub.add_parser(command.name)
            for names, kwargs in command.arguments:
                parser_.add_argument(*names, **kwargs)
    return parser


def command_help() -> str:
    """The line commands for ``%%distributed?``, the backends' included."""
    lines = [f"  {c.usage:<27} {c.help}" for p in plugins() for c in p.commands]
    return LINE_COMMANDS + "\n".join(lines) + "\n"


def run(
    args: Namespace,
    session: Session,
    settings: list[Settings],
    user_ns: dict[str, Any],
    backend_defaults: Callable[[str], Mapping[str, Any]],
) -> None:
    """Do the parsed command and print what it says; a missing run or a bad setting becomes a
    one-line ``UsageError``. ``backend_defaults(name)``: a backend's configured options."""
    if args.command in (None, "status"):
        print(textviews.status(session, every=bool(getattr(args, "ranks", False))))
    elif args.command == "stop":
        stopped = session.stop()
        print(f"stopped {', '.join(stopped)}" if stopped else "no cluster was running")
    elif args.command == "config":
        print(textviews.settings(settings))
    elif args.command == "compare":
        try:
            settings_ = session.settings
            straggler = settings_.straggler_threshold if settings_ else STRAGGLER_THRESHOLD
            rates = scaling.compare_rates(session.store, args.runs)
            plotfigures.show(plotfigures.compare_figure(rates))
            print(scaling.compare(session.store, args.runs, args.threshold, straggler, rates))
        except NotFound as exc:
            raise UsageError(str(exc.args[0])) from None
    elif args.command == "doctor":
        print(doctor(plugin(args.backend)))
    elif args.command == "runs" and args.delete:
        print(_delete(session.store, args.delete))
    elif args.command == "runs":
        print(textviews.runs(session.store, args.n))
    elif args.command == "stacks":
        try:
            print(textviews.stacks(session, args.run, args.rank))
        except NotFound as exc:
            raise UsageError(str(exc)) from None
    elif args.command == "debug":
        said = debugging.debug(session, args.rank, user_ns)
        if said:
            print(said)
    elif args.command == "tf-strategy":
        print(session.coordinators.bind_again(user_ns))
    elif args.command == "logs":
        try:
            print(textviews.logs(session.store, args.run, args.rank, args.search))
        except NotFound as exc:
            raise UsageError(str(exc)) from None
    else:
        _plugin_command(args, session, user_ns, backend_defaults)


def _delete(store: Store, ids: list[str]) -> str:
    """Delete the runs (an id or its unique prefix), all or none: an unknown or running one is
    a one-line ``UsageError`` and nothing is deleted."""
    runs = [store.run(run_id) for run_id in ids]
    unknown = [run_id for run_id, run in zip(ids, runs, strict=True) if run is None]
    if unknown:
        raise UsageError(f"no run {', '.join(map(repr, unknown))} in the history; nothing deleted")
    found = list({run.id: run for run in runs if run is not None}.values())
    running = [f"{run.id} is {run.state.value}" for run in found if not run.state.finished]
    if running:
        raise UsageError(
            f"cannot delete a running run ({'; '.join(running)}): stop it first "
            "(%distributed stop, or the panel's Cancel); nothing deleted"
        )
    try:
        for run in found:
            store.delete_run(run.id)
    except Running as exc:  # it started running again meanwhile (another kernel)
        raise UsageError(str(exc)) from None
    return f"deleted {len(found)} run(s): {', '.join(run.id for run in found)}"


def _plugin_command(
    args: Namespace,
    session: Session,
    user_ns: dict[str, Any],
    backend_defaults: Callable[[str], Mapping[str, Any]],
) -> None:
    owner, command = next((p, c) for p in plugins() for c in p.commands if c.name == args.command)
    record = recording(session.store, CellView)
    context = CommandContext(session.store, record, user_ns, backend_defaults(owner.name))
    try:
        said = command.hook()(args, context)
    except (SpecError, NotFound, CloudError) as exc:
        raise UsageError(str(exc)) from None
    if said:
        print(said)
