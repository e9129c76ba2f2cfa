"""The flags of ``%%distributed``, as reusable argument groups (their translation to a Spec is
:mod:`.cell_spec`'s).

The general flags are written here; each backend's flags are generated from its options
dataclass (:func:`backend_args`, see :mod:`.backends.plugin`), so no backend is named here.
"""

from __future__ import annotations

import math
from argparse import SUPPRESS
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import argument, argument_group

from .backends import names, plugins
from .backends.plugin import Flag

Decorator = Callable[[Any], Any]
MAX_INT = 2**31 - 1  # no count, rank or number of seconds a user means is larger


def bounded_int(text: str) -> int:
    """argparse's ``int`` with the bounds every integer flag shares (no 2**64 reaches a spec)."""
    value = int(text)
    if not -MAX_INT <= value <= MAX_INT:
        raise ValueError(text)
    return value


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _stack(*decorators: Decorator) -> Decorator:
    def apply(func: Any) -> Any:
        for deco in reversed(decorators):
            func = deco(func)
        return func

    return apply


layout_args = _stack(
    argument_group("Ranks"),
    argument(
        "-n",
        "--nprocs",
        type=bounded_int,
        metavar="N",
        help="ranks on this one node (same as --nodes 1 --procs-per-node N; default: "
        "Distributed.nprocs, 1)",
    ),
    argument("--nodes", type=bounded_int, metavar="N", help="number of nodes (default 1)"),
    argument(
        "--procs-per-node",
        type=bounded_int,
        metavar="P",
        help="processes per node; world size = nodes × P (default 1)",
    ),
    argument(
        "--backend",
        metavar="NAME",
        help=f"where ranks run: {', '.join(names())} (default: Distributed.default_backend, local)",
    ),
)

strategy_args = _stack(
    argument_group("Parallelism"),
    argument(
        "--strategy",
        default="none",
        metavar="NAME",
        help="none, ddp, fsdp, model-parallel, parameter-server, horovod or multi-worker "
        "(TensorFlow's MultiWorkerMirroredStrategy)",
    ),
    argument(
        "--framework",
        metavar="NAME",
        help="parameter-server and horovod: tensorflow builds them with TensorFlow "
        "(default: as before, TF_CONFIG only for parameter-server, torch-style hvd)",
    ),
    argument("--partitions", type=bounded_int, metavar="K", help="model parallel: pipeline stages"),
    argument("--microbatches", type=bounded_int, metavar="M", help="model parallel: microbatches"),
    argument("--pipeline", metavar="KIND", help="model parallel: simple or interleaved"),
    argument("--placement", metavar="KIND", help="model parallel: spread or cluster"),
    argument("--optimize", metavar="GOAL", help="model parallel: speed or memory"),
    argument(
        "--tensor-parallel",
        type=bounded_int,
        metavar="T",
        help="model parallel: tensor-parallel degree",
    ),
    argument(
        "--dist-backend",
        default="auto",
        metavar="NAME",
        help="torch strategies: the process group, nccl or gloo (default auto: nccl when "
        "every local rank has its own GPU, else gloo)",
    ),
    argument(
        "--parameter-servers",
        type=bounded_int,
        metavar="S",
        help="parameter-server: how many ranks serve parameters (default 1)",
    ),
)

run_args = _stack(
    argument_group("This cell"),
    argument(
        "--push",
        metavar="a,b",
        default="",
        help="notebook variables sent to every rank before the cell",
    ),
    argument(
        "--pull",
        metavar="x,y",
        default="",
        help="after the cell, set each name in the notebook to a list, one value per rank",
    ),
    argument("--targets", metavar="0,2-3", help="run on these ranks only"),
    argument(
        "--timeout", type=finite_float, metavar="SECONDS", help="interrupt the cell after this"
    ),
    argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="environment variable for every rank (repeatable)",
    ),
    argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=v1,v2",
        help="run the cell once per combination of the swept values (repeatable; each run "
        "has NAME set on its ranks; --pull gives a dict keyed by the combination)",
    ),
    argument(
        "--sweep-parallel",
        type=bounded_int,
        metavar="K",
        help="combinations running at once, each on its own ranks (default: as many as this "
        "machine's cores allow for local/mpi, 1 elsewhere); the rest wait",
    ),
    argument("--dry-run", action="store_true", help="print the resolved plan; start nothing"),
    argument(
        "--display",
        metavar="all|0,2",
        help="which ranks show rich displays (figures, tables, display()): all, or ranks "
        "(default all; every rank's are recorded)",
    ),
    argument(
        "--display-max-mb",
        type=finite_float,
        metavar="MB",
        help="largest rich display a rank sends; a larger one becomes a one-line note "
        "(default: Distributed.display_max_mb, 10)",
    ),
    argument(
        "--output",
        metavar="all|0,2",
        help="whose lines (prints, warnings) show under the cell: all, or ranks (default all; "
        "every rank's are recorded, and a note says how many were not shown)",
    ),
    argument(
        "--no-collapse",
        action="store_true",
        help="show identical lines of several ranks once per rank, not once as [ranks 0-7]",
    ),
    argument(
        "--break",
        dest="break_rank",
        type=bounded_int,
        metavar="R",
        help="stop rank R in pdb at the cell's first line; its prompt comes under the cell",
    ),
    argument(
        "--quiet",
        action="store_true",
        help="do not show the ranks' output under the cell (it is still recorded)",
    ),
    argument(
        "--widget",
        action="store_true",
        help="also show rank states, progress and samples/s in widgets under the cell "
        "(for front-ends without the Distributed panel)",
    ),
)


def flag_owners() -> dict[str, list[str]]:
    """Options field → the backends that declare it as a flag."""
    owners: dict[str, list[str]] = {}
    for entry in plugins():
        for flag in entry.flags():
            owners.setdefault(flag.dest, []).append(entry.name)
    return owners


def _flag_argument(flag: Flag, owners: list[str]) -> Decorator:
    also = f" (--backend {' or '.join(owners)})" if len(owners) > 1 else ""
    kwargs: dict[str, Any] = {"dest": flag.dest, "default": SUPPRESS, "help": flag.help + also}
    if flag.kind is bool:
        kwargs["action"] = "store_false" if flag.default else "store_true"
    else:
        kwargs["metavar"] = flag.metavar or flag.dest.upper()
        if flag.repeat:
            kwargs["action"] = "append"
        if flag.kind in (int, float):
            kwargs["type"] = bounded_int if flag.kind is int else finite_float
    return argument(flag.flag, **kwargs)


def backend_args(func: Any) -> Any:
    """One argument group per registered backend, generated from its options dataclass;
    a flag two backends declare is added once, in the first one's group."""
    owners = flag_owners()
    seen: set[str] = set()
    groups: list[Decorator] = []
    for entry in plugins():
        fresh = [f for f in entry.flags() if f.dest not in seen]
        seen.update(f.dest for f in fresh)
        if fresh:
            groups.append(argument_group(entry.title))
            groups.extend(_flag_argument(f, owners[f.dest]) for f in fresh)
    return _stack(*groups)(func)
