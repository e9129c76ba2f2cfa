"""The flags of ``%%distributed``, as reusable argument groups, and their translation to a Spec.

Backends that take their own flags add a group here and a builder in ``OPTION_BUILDERS``.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import argument, argument_group

from .errors import SpecError
from .spec import BackendOptions, Layout, ModelParallel, Spec, parse_env, parse_names, parse_targets

Decorator = Callable[[Any], Any]

OPTION_BUILDERS: dict[str, Callable[[Namespace], BackendOptions | None]] = {}


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
        type=int,
        metavar="N",
        help="ranks on this one node (same as --nodes 1 --procs-per-node N)",
    ),
    argument("--nodes", type=int, metavar="N", help="number of nodes (default 1)"),
    argument(
        "--procs-per-node",
        type=int,
        metavar="P",
        help="processes per node; world size = nodes × P (default 1)",
    ),
    argument("--backend", default="local", metavar="NAME", help="where ranks run: local (default)"),
)

strategy_args = _stack(
    argument_group("Parallelism"),
    argument(
        "--strategy",
        default="none",
        metavar="NAME",
        help="none, ddp, fsdp, model-parallel, parameter-server or horovod",
    ),
    argument("--partitions", type=int, metavar="K", help="model parallel: pipeline stages"),
    argument("--microbatches", type=int, metavar="M", help="model parallel: microbatches"),
    argument("--pipeline", metavar="KIND", help="model parallel: simple or interleaved"),
    argument("--placement", metavar="KIND", help="model parallel: spread or cluster"),
    argument("--optimize", metavar="GOAL", help="model parallel: speed or memory"),
    argument(
        "--tensor-parallel", type=int, metavar="T", help="model parallel: tensor-parallel degree"
    ),
    argument(
        "--parameter-servers",
        type=int,
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
    argument("--timeout", type=float, metavar="SECONDS", help="interrupt the cell after this"),
    argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="environment variable for every rank (repeatable)",
    ),
    argument("--dry-run", action="store_true", help="print the resolved plan; start nothing"),
    argument(
        "--quiet",
        action="store_true",
        help="do not show the ranks' output under the cell (it is still recorded)",
    ),
)


def spec_from_args(args: Namespace) -> Spec:
    if args.nprocs is not None and (args.nodes is not None or args.procs_per_node is not None):
        raise SpecError("give either -n/--nprocs or --nodes/--procs-per-node, not both")
    nodes = args.nodes if args.nodes is not None else 1
    per_node = args.nprocs if args.nprocs is not None else (args.procs_per_node or 1)
    mp_flags = {
        k: getattr(args, k)
        for k in (
            "partitions",
            "microbatches",
            "pipeline",
            "placement",
            "optimize",
            "tensor_parallel",
        )
        if getattr(args, k) is not None
    }
    model_parallel = ModelParallel(**mp_flags) if mp_flags else None
    if model_parallel is None and args.strategy == "model-parallel":
        model_parallel = ModelParallel()
    layout = Layout(
        nodes=nodes,
        procs_per_node=per_node,
        strategy=args.strategy,
        model_parallel=model_parallel,
        parameter_servers=args.parameter_servers or 0,
    )
    builder = OPTION_BUILDERS.get(args.backend)
    options = builder(args) if builder is not None else None
    return Spec(
        layout=layout,
        backend=args.backend,
        env=parse_env(args.env),
        options=options,
        push=parse_names("--push", args.push),
        pull=parse_names("--pull", args.pull),
        targets=parse_targets(args.targets) if args.targets else None,
        timeout=args.timeout,
    )
