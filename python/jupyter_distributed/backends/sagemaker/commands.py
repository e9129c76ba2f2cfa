"""SageMaker's line commands (``%distributed attach|cancel|release``) and the server's hook to
follow a job whose kernel is gone (a :class:`~..hooks.FollowHook`); declared in this package's
``PLUGIN``."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable

from ...history.store import RunRecord
from ..hooks import CommandContext
from . import lifecycle
from .aws import Clients


def attach(args: Namespace, context: CommandContext) -> None:
    lifecycle.attach(context, args.job, lifecycle.default_clients(context.defaults))


def cancel(args: Namespace, context: CommandContext) -> str:
    return lifecycle.cancel(context.store, args.run, defaults=context.defaults)


def release(args: Namespace, context: CommandContext) -> str:
    return lifecycle.release(context.store, args.job, defaults=context.defaults)


def follow(
    context: CommandContext,
    run: RunRecord,
    sleep: Callable[[float], None],
    poll: float,
    clients: Callable[[], object] | None = None,
) -> None:
    """Follow ``run``'s job to its end, recording it (the server, for a run nobody follows);
    ``context.defaults`` are the server's configured options (``c.DistributedSageMaker.*``)."""
    made = clients() if clients else lifecycle.default_clients(context.defaults)
    if not isinstance(made, Clients):
        raise TypeError(f"the SageMaker follower needs Clients, got {type(made).__name__}")
    lifecycle.attach(
        context,
        run.external_id,
        made,
        poll,
        sleep,
        raise_outcome=False,  # the recorder wrote the run's end, failed or not
        server=True,  # states and logs only: the server never loads S3's bytes
    )
