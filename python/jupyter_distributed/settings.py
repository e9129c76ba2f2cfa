"""Defaults, as Jupyter configures everything: traitlets ``Configurable`` classes.

:class:`Distributed` holds the general settings; each backend adds its own :class:`Settings`
subclass (see :mod:`.backends.plugin`). A value comes, in this order of precedence, from:

1. ``%config Distributed.max_world_size = 64`` in a kernel, ``c.Distributed.max_world_size = 64``
   in ``ipython_config.py`` (kernel) or ``jupyter_server_config.py`` (server);
2. the environment variable ``JUPYTER_DISTRIBUTED_<NAME>`` (a backend's settings add their own
   prefix, e.g. ``JUPYTER_DISTRIBUTED_SAGEMAKER_ROLE``), the documented fallback;
3. the trait's default.

:meth:`Settings.sources` says which of these gave each value (``%distributed config`` prints it).
Traits tagged ``secret=True``, or whose name or value looks like a secret, are never printed,
and a URL's password is masked (:mod:`.redact`).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from traitlets import Bool, Enum, Float, Int, TraitError, Unicode
from traitlets.config import LoggingConfigurable

from .rates import STRAGGLER_THRESHOLD
from .redact import REDACTED, looks_secret, mask_text


class Settings(LoggingConfigurable):
    """A Configurable whose traits fall back to ``{env_prefix}{NAME}`` environment variables."""

    env_prefix: ClassVar[str] = "JUPYTER_DISTRIBUTED_"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, trait in self.traits(config=True).items():
            raw = os.environ.get(self.env_name(name))
            if raw is None or self._configured(name):
                continue
            try:
                self.set_trait(name, trait.from_string(raw))
            except (TraitError, ValueError) as exc:
                self.log.warning("ignoring %s=%r: %s", self.env_name(name), raw, exc)

    @classmethod
    def env_name(cls, name: str) -> str:
        trait = cls.class_traits()[name]
        return str(trait.metadata.get("env") or cls.env_prefix + name.upper())

    def _configured(self, name: str) -> bool:
        section = self.config.get(type(self).__name__)
        return section is not None and name in section

    def sources(self) -> list[tuple[str, str, str]]:
        """``(Class.trait, value as printed, where it came from)`` for every setting."""
        out = []
        for name, trait in sorted(self.traits(config=True).items()):
            if self._configured(name):
                where = "config (%config, ipython_config.py or jupyter_server_config.py)"
            elif self.env_name(name) in os.environ:
                where = f"environment {self.env_name(name)}"
            else:
                where = "default"
            value = getattr(self, name)
            secret = trait.metadata.get("secret") or looks_secret(name, str(value))
            shown = REDACTED if secret and value not in ("", None) else mask_text(repr(value))
            out.append((f"{type(self).__name__}.{name}", shown, where))
        return out


#: The history's default size budget, in MB (4 GiB).
HISTORY_MAX_MB = 4096


class Distributed(Settings):
    """General settings of ``%%distributed`` and of the server extension."""

    default_backend = Unicode("local", help="backend of a cell without --backend").tag(config=True)
    nprocs = Int(1, min=1, help="ranks of a cell without -n/--nodes/--procs-per-node").tag(
        config=True
    )
    max_world_size = Int(
        1024, min=1, help="largest world size a cell may ask for (a typo guard)"
    ).tag(config=True)
    interrupt_grace = Float(
        2.0, min=0.0, help="seconds a rank gets to yield to an interrupt before it is killed"
    ).tag(config=True)
    display_max_mb = Float(
        10.0, min=0.001, max=60.0, help="largest rich display (MIME bundle) a rank sends, in MB"
    ).tag(config=True)
    history_max_mb = Int(
        HISTORY_MAX_MB,
        min=1,
        help="size budget of the history, in MB: past it, the oldest finished runs lose their "
        "log lines, then whole runs go (each pruning is said once)",
    ).tag(config=True)
    max_message_mb = Float(
        1024.0,
        min=2.0,
        help="largest message between the kernel and a rank, every frame together, in MB "
        "(a cell's --push, one rank's --pull); a larger one is refused",
    ).tag(config=True)
    relays = Enum(
        ["auto", "always", "tree", "never"],
        "auto",
        help="node relays between the kernel and the ranks: 'auto' once the ranks span nodes "
        "(slurm, mpi --hosts; on one machine the kernel is the relay), 'always' starts one per "
        "node all the same, with a second level of aggregators (about sqrt(nodes) relays each) "
        "above 200 nodes (local, slurm, mpi, ray), 'tree' starts that second level whatever "
        "the count of nodes (local, slurm, mpi, ray), 'never' connects every rank to the "
        "kernel itself",
    ).tag(config=True)
    straggler_threshold = Float(
        STRAGGLER_THRESHOLD,
        min=0.0,
        max=1.0,
        help="a rank below this fraction of the median rank's samples/s is a straggler "
        "(the panel and %distributed compare; 0 marks none)",
    ).tag(config=True)
    tensorflow_across_hosts = Bool(
        False,
        help="let --framework tensorflow start TensorFlow's servers on ranks of several hosts: "
        "unauthenticated gRPC that runs any operation sent to it (a trusted network only)",
    ).tag(config=True)
    store_path = Unicode(
        "", help="history database (default: <jupyter data dir>/distributed/history.sqlite3)"
    ).tag(config=True, env="JUPYTER_DISTRIBUTED_STORE")
