"""SageMaker's line commands (``%distributed attach|cancel|release``) and the server's hook to
follow a job whose kernel is gone; declared in this package's ``PLUGIN``."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable, Mapping
from typing import Any

from ...history.store import RunRecord, Store
from ...recorder import CellViewLike
from ..plugin import CommandContext
from . import lifecycle


def attach(args: Namespace, context: CommandContext) -> None:
    clients = lifecycle.default_clients(context.defaults)
    lifecycle.attach(context.store, args.job, context.view_factory(), context.user_ns, clients)


def cancel(args: Namespace, context: CommandContext) -> str:
    return lifecycle.cancel(context.store, args.run, defaults=context.defaults)


def release(args: Namespace, context: CommandContext) -> str:
    return lifecycle.release(context.store, args.job, defaults=context.defaults)


def follow(
    store: Store,
    run: RunRecord,
    view: CellViewLike,
    sleep: Callable[[float], None],
    poll: float,
    clients: Callable[[], Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """Follow ``run``'s job to its end, recording it (the server, for a run nobody follows);
    ``defaults`` are the server's configured options (``c.DistributedSageMaker.*``)."""
    made = clients() if clients else lifecycle.default_clients(defaults)
    lifecycle.attach(
        store,
        run.external_id,
        view,
        {},
        made,
        poll,
        sleep,
        raise_outcome=False,  # the recorder wrote the run's end, failed or not
        unpickle=False,  # states and logs only: the server never unpickles S3's bytes
    )
