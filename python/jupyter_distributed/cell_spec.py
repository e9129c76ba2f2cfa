"""From the parsed flags of a ``%%distributed`` line to its :class:`~.spec.Spec`.

Apart from :mod:`.arguments` (which declares the flags) because this is where the configured
defaults and caps (:mod:`.settings`) meet what the cell gave: ``-n`` against ``--nodes``, the
world-size cap, the model-parallel flags, and a backend's options, where a flag of another
backend is refused, never ignored. Every other check is the spec's own.
"""

from __future__ import annotations

import socket
from argparse import Namespace
from collections.abc import Callable, Mapping
from typing import Any

from .arguments import flag_owners
from .backends import plugin, plugins
from .errors import SpecError
from .layout import (
    TF_ACROSS_HOSTS_ENV,
    TF_CHIEF_HOST_ENV,
    Layout,
    ModelParallel,
    Strategy,
    positive,
)
from .settings import Distributed
from .spec import BackendOptions, Spec, parse_env, parse_names, parse_targets
from .sweeps import parse_sweep


def _backend_options(
    backend: str, args: Namespace, defaults: Mapping[str, Any]
) -> BackendOptions | None:
    """The chosen backend's options; a flag of another backend is refused, never ignored."""
    owners = flag_owners()
    given = {dest: value for dest, value in vars(args).items() if dest in owners}
    foreign = [dest for dest in given if backend not in owners[dest]]
    if foreign:
        flags = {f.dest: f.flag for p in plugins() for f in p.flags()}
        names = ", ".join(flags[d] for d in foreign)
        others = sorted({b for d in foreign for b in owners[d]})
        raise SpecError(
            f"{names} {'applies' if len(foreign) == 1 else 'apply'} to --backend "
            f"{' or '.join(others)}, not {backend}; add --backend {others[0]} or remove "
            f"{'it' if len(foreign) == 1 else 'them'}"
        )
    chosen = plugin(backend)
    if chosen.options is None:
        return None
    return chosen.options.from_flags(given, defaults)


def spec_from_args(
    args: Namespace,
    settings: Distributed | None = None,
    backend_defaults: Callable[[str], Mapping[str, Any]] | None = None,
) -> Spec:
    """The spec of a cell; ``settings`` give the general defaults and caps, and
    ``backend_defaults(name)`` the configured defaults of a backend's options."""
    settings = settings or Distributed()
    backend = args.backend or settings.default_backend
    if args.nprocs is not None and (args.nodes is not None or args.procs_per_node is not None):
        raise SpecError("give either -n/--nprocs or --nodes/--procs-per-node, not both")
    nodes = args.nodes if args.nodes is not None else 1
    if args.nprocs is not None:
        per_node = args.nprocs
    elif args.procs_per_node is not None or args.nodes is not None:
        per_node = args.procs_per_node if args.procs_per_node is not None else 1
    else:
        per_node = settings.nprocs
    if args.nprocs is not None:
        positive("-n", args.nprocs)  # (the flag the user typed, not the layout's own name)
    if nodes * per_node > settings.max_world_size and nodes > 0 and per_node > 0:
        raise SpecError(
            f"world size {nodes * per_node} is over the cap of {settings.max_world_size} "
            "ranks (Distributed.max_world_size); use fewer ranks or raise the cap"
        )
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
        dist_backend=args.dist_backend,
        framework=args.framework,
    )
    options = _backend_options(backend, args, backend_defaults(backend) if backend_defaults else {})
    if backend == "sagemaker" and layout.uses_tensorflow and layout.parameter_servers:
        raise SpecError(
            "--framework tensorflow --strategy parameter-server: SageMaker runs its own "
            "parameter-server distribution, which the kernel cannot coordinate; drop --framework"
        )
    return Spec(
        layout=layout,
        backend=backend,
        env=parse_env(args.env) + _tensorflow_env(layout, settings),
        options=options,
        push=parse_names("--push", args.push),
        pull=parse_names("--pull", args.pull),
        targets=parse_targets(args.targets, layout.world_size) if args.targets else None,
        timeout=args.timeout,
        display=_display_ranks(args.display, layout.world_size),
        output=_display_ranks(args.output, layout.world_size, "--output"),
        collapse=not args.no_collapse,
        display_max_mb=(
            args.display_max_mb if args.display_max_mb is not None else settings.display_max_mb
        ),
        sweep=parse_sweep(args.sweep, args.sweep_parallel),
        relays=settings.relays,
    )


def _tensorflow_env(layout: Layout, settings: Distributed) -> tuple[tuple[str, str], ...]:
    """What the ranks of ``--strategy parameter-server --framework tensorflow`` need from the
    kernel: its host (the coordinator) and the opt-in to servers on several hosts."""
    if layout.strategy is not Strategy.PARAMETER_SERVER or not layout.uses_tensorflow:
        return ()
    env = ((TF_CHIEF_HOST_ENV, socket.gethostname()),)
    return env + (((TF_ACROSS_HOSTS_ENV, "1"),) if settings.tensorflow_across_hosts else ())


def _display_ranks(
    text: str | None, world_size: int, flag: str = "--display"
) -> tuple[int, ...] | None:
    if text is None or text.strip() == "all":
        return None
    try:
        return parse_targets(text, world_size)
    except SpecError as exc:
        raise SpecError(str(exc).replace("--targets", flag)) from None
