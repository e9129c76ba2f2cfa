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
    argument(
        "--backend", default="local", metavar="NAME", help="where ranks run: local (default) or mpi"
    ),
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
    argument(
        "--widget",
        action="store_true",
        help="also show rank states, progress and samples/s in widgets under the cell "
        "(for front-ends without the Distributed panel)",
    ),
)

sagemaker_args = _stack(
    argument_group("SageMaker (--backend sagemaker; defaults: JUPYTER_DISTRIBUTED_SAGEMAKER_*)"),
    argument("--instance-type", metavar="TYPE", help="instance type (default ml.m5.xlarge)"),
    argument("--role", metavar="ARN", help="execution role ARN"),
    argument("--bucket", metavar="NAME", help="S3 bucket for code and results"),
    argument("--region", metavar="NAME", help="AWS region"),
    argument("--image", metavar="URI", help="training image"),
    argument("--framework-version", metavar="V", help="PyTorch training image version"),
    argument("--py-version", metavar="pyXY", help="Python of the image, e.g. py311"),
    argument("--job-name", metavar="NAME", help="training job name (default jd-RUN)"),
    argument("--mpi-options", metavar="OPTS", help="custom mpirun options"),
    argument(
        "--smddp",
        action="store_true",
        help="ddp with SageMaker's data-parallel library instead of torchrun",
    ),
    argument("--max-run", type=int, metavar="SECONDS", help="maximum run time"),
    argument("--keep-alive", type=int, metavar="SECONDS", help="keep a warm pool this long"),
    argument("--spot", action="store_true", help="managed spot training (needs --max-wait)"),
    argument("--max-wait", type=int, metavar="SECONDS", help="spot: longest wait + run"),
    argument("--checkpoint-s3", metavar="URI", help="s3:// URI synced with /opt/ml/checkpoints"),
    argument("--requirements", metavar="FILE", help="requirements.txt installed in the job"),
    argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=s3://...",
        help="data channel (repeatable)",
    ),
    argument(
        "--shard-by-key",
        action="store_true",
        help="split the inputs' objects across hosts instead of copying all",
    ),
    argument("--no-wait", action="store_true", help="return at once; follow in the panel"),
)


def _sagemaker_options(args: Namespace) -> BackendOptions:
    from .backends.sagemaker.options import SageMakerOptions

    given = {
        name: getattr(args, name)
        for name in (
            "instance_type",
            "role",
            "bucket",
            "region",
            "image",
            "framework_version",
            "py_version",
            "job_name",
            "mpi_options",
            "max_run",
            "keep_alive",
            "max_wait",
            "checkpoint_s3",
            "requirements",
        )
        if getattr(args, name, None) is not None
    }
    inputs = []
    for item in getattr(args, "input", []):
        name, eq, uri = item.partition("=")
        if not eq:
            raise SpecError(f"--input {item!r} must look like NAME=s3://bucket/prefix")
        inputs.append((name, uri))
    return SageMakerOptions(
        smddp=args.smddp,
        spot=args.spot,
        shard_by_key=args.shard_by_key,
        wait=not args.no_wait,
        inputs=tuple(inputs),
        **given,
    )


OPTION_BUILDERS["sagemaker"] = _sagemaker_options


mpi_args = _stack(
    argument_group("MPI (--backend mpi)"),
    argument(
        "--hosts", metavar="h1,h2", help="hosts, one node each in order (default: this machine)"
    ),
    argument(
        "--hostfile",
        metavar="FILE",
        help="Open MPI hostfile (one host per line; slots are ignored)",
    ),
    argument(
        "--mpi-options",
        metavar='"..."',
        default="",
        help='extra mpirun options, e.g. --mpi-options "--mca btl tcp,self" (a single '
        "option: --mpi-options=--report-bindings); ours are never passed twice",
    ),
)


def _mpi_options(args: Namespace) -> BackendOptions:
    from .backends.mpi_options import MpiOptions, parse_hostfile, unquote

    if args.hosts and args.hostfile:
        raise SpecError("give either --hosts or --hostfile, not both")
    hosts = tuple(h.strip() for h in (args.hosts or "").split(",") if h.strip())
    if args.hostfile:
        hosts = parse_hostfile(args.hostfile)
    return MpiOptions(
        hosts=hosts, hostfile=args.hostfile, mpi_options=unquote(args.mpi_options or "")
    )


OPTION_BUILDERS["mpi"] = _mpi_options
# Flags that belong to one backend: given with another, they are refused rather than ignored.
BACKEND_FLAGS: dict[str, tuple[str, ...]] = {"mpi": ("hosts", "hostfile", "mpi_options")}


def _check_backend_flags(args: Namespace) -> None:
    for backend, names in BACKEND_FLAGS.items():
        given = [n for n in names if getattr(args, n, None)]
        if given and args.backend != backend:
            flags = ", ".join("--" + n.replace("_", "-") for n in given)
            raise SpecError(
                f"{flags} only apply to --backend {backend}; add --backend {backend} or remove them"
            )


def spec_from_args(args: Namespace) -> Spec:
    _check_backend_flags(args)
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
