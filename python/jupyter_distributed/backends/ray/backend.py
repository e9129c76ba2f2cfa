"""``ray``: the ranks are actors of one placement group on the user's Ray cluster.

Which cluster: ``--ray-address``, else ``RAY_ADDRESS``, else the kernel's own ``ray.init()``;
never a local cluster started behind the user's back (``--ray-address local`` starts one, on
purpose). When this backend connects, the package reaches the actors through the job's
``runtime_env`` ``py_modules`` (this kernel's copy of ``jupyter_distributed``); with the kernel's
own ``ray.init()`` the user passes ``runtime_env={"py_modules": [jupyter_distributed]}`` there or
installs the package on the cluster. Its dependencies (pyzmq, cloudpickle) must be installed in
the cluster's Python. Each actor runs the worker as a child process that connects back to the kernel
over the signed channel (:class:`ProcessCluster`); a death is seen by ``ray.wait`` on each
actor's ``wait()``. Stop: over the channel first, then the actors are killed and the placement
group removed.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from ...cluster.aggregators import group_heads, on_hosts
from ...cluster.launch import WORKER_COMMAND, rank_env
from ...cluster.liveness import REMOTE_SILENCE_LIMIT
from ...cluster.process import ProcessCluster
from ...cluster.relays import relay_nodes
from ...cluster.transport import Transport
from ...errors import LaunchError
from ...history.store import Store
from ...interface import Backend, Plan, RankPlan, RunView
from ...spec import Spec
from .options import PLACEMENTS, RayOptions
from .relays import AGGREGATOR_MODULE as AGGREGATOR
from .relays import RelayActors, check_nodes

READY_TIMEOUT = 120.0  # seconds for the placement group and the actors to come up


def _options(spec: Spec) -> RayOptions:
    return spec.options if isinstance(spec.options, RayOptions) else RayOptions()


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise LaunchError("ray is not installed here: pip install 'ray[default]'") from None
    return ray


class RayBackend(Backend):
    name: ClassVar[str] = "ray"
    relays: ClassVar[bool] = True  # (on "always": one actor per node, see relays.py)
    aggregators: ClassVar[bool] = True  # (one actor on the first node of each group)

    def plan(self, spec: Spec) -> Plan:
        options = _options(spec)
        layout = spec.layout
        address, source = options.where()
        strategy = options.placement_strategy
        ranks = tuple(
            RankPlan(
                rank,
                f"ray bundle {rank}",
                layout.coords(rank),
                tuple((k, v) for k, v in rank_env(spec, rank, "<free port>") if k != "MASTER_ADDR"),
            )
            for rank in range(layout.world_size)
        )
        cluster = f"{address} (from {source})" if address else source
        extra = (
            ("ray cluster", cluster),
            (
                "placement",
                f"{strategy} ({PLACEMENTS[strategy]}): {layout.world_size} "
                f"bundle(s) of {options.bundle()}",
            ),
            (
                "package",
                "this kernel's copy, by the job's runtime_env py_modules (when this backend "
                "connects); with your own ray.init(), ship or install it yourself",
            ),
        )
        notes = ("MASTER_ADDR is rank 0's node; each rank is an actor running the worker",)
        env = (*spec.env, ("PYTHONUNBUFFERED", "1"))
        return Plan(spec, ranks, WORKER_COMMAND, env, notes, extra=extra)

    def launch(self, plan: Plan, store: Store, view: RunView) -> ProcessCluster:
        ray = connect(_options(plan.spec))
        bind = ray.util.get_node_ip_address()
        placed = RayPlacement(plan)  # (first: where the ranks are decides the relays)
        try:
            relays = plan.spec.relays in ("always", "tree")
            if plan.spec.relays == "auto" and len(set(placed.nodes)) > 1:
                plan, relays = by_ray_node(plan, placed.nodes), True
            return ProcessCluster(
                plan,
                store,
                lambda boot: RayProcesses(placed, plan, boot),
                view,
                transport=Transport.tcp(bind),  # ranks on other nodes: TCP with CurveZMQ
                silence_limit=REMOTE_SILENCE_LIMIT,
                relays=relays,
                aggregators=True,
            )
        except BaseException:
            placed.remove()  # (where the cluster did not stop its processes itself)
            raise


def by_ray_node(plan: Plan, nodes: list[str]) -> Plan:
    """The plan with each rank's node its Ray node (numbered in the order of their first
    rank) and its local rank its place there: each rank's relay is its own Ray node's."""
    number: dict[str, int] = {}
    seen: dict[int, int] = {}
    ranks = []
    for r, node_id in zip(plan.ranks, nodes, strict=True):
        node = number.setdefault(node_id, len(number))
        local = seen[node] = seen.get(node, -1) + 1
        ranks.append(replace(r, coords=replace(r.coords, node_rank=node, local_rank=local)))
    return replace(plan, ranks=tuple(ranks))


def connect(options: RayOptions) -> Any:
    """``ray`` connected to the cluster the options name (see the module docstring)."""
    ray = _ray()
    address, source = options.where()
    if ray.is_initialized():
        return ray  # the kernel's own ray.init() (an address given as well is already in use)
    if address is None:
        raise LaunchError(
            "no Ray cluster: give --ray-address HOST:PORT, set RAY_ADDRESS or call ray.init() "
            "in the notebook first (--ray-address local starts a local Ray here)"
        )
    package = str(Path(sys.modules["jupyter_distributed"].__file__ or "").parent)
    runtime_env = {"py_modules": [package], "excludes": ["labextension"]}
    try:
        if address == "local":
            ray.init(log_to_driver=False, runtime_env=runtime_env)
        else:
            ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
    except Exception as exc:  # noqa: BLE001 (any connection failure is the user's to see)
        raise LaunchError(f"cannot connect to Ray at {address} (from {source}): {exc}") from None
    return ray


class RayPlacement:
    """One placement group and an actor per rank in it, placed; ``nodes``: each rank's Ray
    node (its id)."""

    def __init__(self, plan: Plan) -> None:
        from ray.util.placement_group import placement_group, placement_group_table
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from .actor import RankActor

        self.ray = ray = _ray()
        options = _options(plan.spec)
        n = len(plan.ranks)
        self.actors: list[Any] = []
        self.pg = placement_group(
            [options.bundle() for _ in range(n)], strategy=PLACEMENTS[options.placement_strategy]
        )
        ready, _ = ray.wait([self.pg.ready()], timeout=READY_TIMEOUT)
        if not ready:
            self.remove()
            raise LaunchError(
                f"Ray could not place {n} rank(s) of {options.bundle()} within "
                f"{READY_TIMEOUT:.0f}s ({PLACEMENTS[options.placement_strategy]}); the cluster has "
                f"{ray.available_resources()}: lower the ranks or the resources per rank"
            )
        self.remote = remote = ray.remote(RankActor)
        for i in range(n):
            self.actors.append(
                remote.options(
                    num_cpus=0,  # the bundle holds the rank's resources
                    max_concurrency=4,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(
                        self.pg, placement_group_bundle_index=i
                    ),
                ).remote()
            )
        try:
            self.where = ray.get([a.where.remote() for a in self.actors], timeout=READY_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 (a runtime_env or scheduling failure)
            self.remove()
            hint = ""
            if "jupyter_distributed" in str(exc):
                hint = (
                    "; the cluster cannot import jupyter_distributed: install it there or pass "
                    'runtime_env={"py_modules": [jupyter_distributed]} to your ray.init()'
                )
            raise LaunchError(f"the Ray actors did not start: {exc}{hint}") from None
        bundles = placement_group_table(self.pg).get("bundles_to_node_id") or {}
        self.nodes = [str(bundles.get(i, address)) for i, (_, address, _) in enumerate(self.where)]

    def remove(self) -> None:
        """Kill the actors and remove the placement group (again: nothing)."""
        from ray.util.placement_group import remove_placement_group

        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        with contextlib.suppress(Exception):
            remove_placement_group(self.pg)


class RayProcesses:
    """The placed actors, each running one rank's worker (and the node relays' actors)."""

    def __init__(self, placed: RayPlacement, plan: Plan, boot_env: dict[str, str]) -> None:
        self._ray = ray = placed.ray
        self.placed, self.actors, self.pg = placed, placed.actors, placed.pg
        where = placed.where
        self.hosts = [host for host, _, _ in where]
        _, master_addr, master_port = where[0]
        base = {**dict(plan.env), **boot_env, "MASTER_ADDR": master_addr}
        # each rank's own node, for the parameter-server strategy's task addresses
        base["JD_RANK_HOSTS"] = ",".join(address for _, address, _ in where)
        self.relays: RelayActors | None = None
        self.aggregators: RelayActors | None = None
        if nodes := relay_nodes(boot_env):
            node_of = [r.coords.node_rank for r in plan.ranks]
            try:
                check_nodes(placed.nodes, node_of)
            except LaunchError:
                self.terminate(0)
                raise
            first = {node: rank for rank, node in reversed(list(enumerate(node_of)))}
            if heads := group_heads(boot_env):  # (each on its group's first node's address)
                base = on_hosts(base, [where[first[n]][1] for n in heads])
                firsts = [first[n] for n in heads]
                self.aggregators = RelayActors(ray, placed.remote, self.pg, firsts, AGGREGATOR)
                self.aggregators.start(base, READY_TIMEOUT)
            self.relays = RelayActors(ray, placed.remote, self.pg, [first[k] for k in range(nodes)])
            self.relays.start(base, READY_TIMEOUT)
        starts = []
        for r, actor in zip(plan.ranks, self.actors, strict=True):
            env = {k: (str(master_port) if v == "<free port>" else v) for k, v in r.env}
            starts.append(actor.start.remote({**base, **env}))
        ray.get(starts, timeout=READY_TIMEOUT)
        self.waits = {actor.wait.remote(): rank for rank, actor in enumerate(self.actors)}
        self._ended: dict[int, int] = {}

    def dead_relays(self) -> list[tuple[int, int]]:
        """(node, return code) of the node relays that ended since the last call."""
        return self.relays.exited() if self.relays is not None else []

    def dead_aggregators(self) -> list[tuple[int, int]]:
        """(index, return code) of the aggregators that ended since the last call."""
        return self.aggregators.exited() if self.aggregators is not None else []

    def exited(self) -> list[tuple[int | None, int]]:
        if not self.waits:
            return []
        ready, _ = self._ray.wait(list(self.waits), num_returns=len(self.waits), timeout=0)
        out: list[tuple[int | None, int]] = []
        for ref in ready:
            rank = self.waits.pop(ref)
            try:
                code = int(self._ray.get(ref))
            except Exception:  # noqa: BLE001 (the actor died; its worker died with it)
                code = -9  # the worker is SIGKILLed with its actor (PR_SET_PDEATHSIG)
            self._ended[rank] = code
            out.append((rank, code))
        return out

    def running(self) -> bool:
        waits = list(self.waits)
        if not waits:
            return False
        ready, _ = self._ray.wait(waits, num_returns=len(waits), timeout=0)
        return len(ready) < len(waits)

    def terminate(self, grace: float) -> None:
        ray = self._ray
        with contextlib.suppress(Exception):
            ray.get([a.stop.remote(grace) for a in self.actors], timeout=grace + 5)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        for name in ("relays", "aggregators"):  # (after their ranks; absent: before them)
            helpers: RelayActors | None = getattr(self, name, None)
            if helpers is not None:
                helpers.terminate(grace)
        self.placed.remove()
        self.waits = {}

    def log_tail(self, rank: int | None) -> str:
        if rank is None or not 0 <= rank < len(self.actors):
            return ""
        try:
            return str(self._ray.get(self.actors[rank].tail.remote(), timeout=5))
        except Exception:  # noqa: BLE001 (the actor is gone: nothing to read)
            return ""
