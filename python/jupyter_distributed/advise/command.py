"""``%distributed advise``: its flags, and the command that resolves the names in the
notebook, asks :func:`.plan.advise`, stores the answer and (``--verify K``) checks it."""

from __future__ import annotations

from argparse import ArgumentTypeError, Namespace
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import MagicArgumentParser

from ..history.store import Store
from .calibrate import cluster_key, newest
from .intake import AdviseError, Analytic
from .plan import advise
from .report import Advice
from .store import newest_probe, save, update
from .trial import said, trial
from .verify import verify

USAGE = (
    "advise --model NAME --global-batch B [--seq S] [--nodes N --procs-per-node P] "
    "[--probe RUN] [--optimizer adamw|sgd] [--precision bf16|fp32] [--memory-gib G] "
    "[--calibrate] [--verify K --step NAME --repeats R] [--uncalibrated]"
)


def _positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 2**31 - 1:
        raise ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def parser() -> MagicArgumentParser:
    p = MagicArgumentParser(prog="%distributed advise", add_help=False)  # type: ignore[no-untyped-call]
    p.add_argument("--model")
    p.add_argument("--global-batch", type=_positive, required=True)
    p.add_argument("--seq", type=_positive)
    p.add_argument("--nodes", type=_positive, default=1)
    p.add_argument("--procs-per-node", "-n", type=_positive, default=1)
    p.add_argument("--cluster")
    p.add_argument("--probe")
    p.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    p.add_argument("--precision", choices=("bf16", "fp32", "fp16"), default="fp32")
    p.add_argument("--memory-gib", type=float)
    p.add_argument("--verify", type=_positive)
    p.add_argument("--step")
    p.add_argument("--repeats", type=_positive, default=1)
    p.add_argument("--uncalibrated", action="store_true")
    p.add_argument("--calibrate", action="store_true")
    for name in ("parameters", "layers", "hidden", "heads", "vocab"):
        p.add_argument(f"--{name}", type=_positive)
    return p


#: Runs a ``--quick`` probe of ``(nodes, procs per node, cluster id or None)``; its result.
ProbeFirst = Callable[[int, int, str | None], dict[str, Any]]


def run(
    args: Namespace,
    line: str,
    store: Store,
    live: Any,
    shell: Any,
    probe_first: ProbeFirst | None = None,
) -> Advice:
    """What ``%distributed advise`` does; bad input is an :class:`AdviseError` (one line).
    With no stored probe of the cluster's size (and no ``--probe``), ``probe_first`` measures
    one, as ``%distributed probe --quick`` would, before the advice."""
    user_ns = shell.user_ns if shell is not None else {}
    nodes, per_node = args.nodes, args.procs_per_node
    if args.cluster:
        spec = next((x.spec for x in live.values() if x.cluster.id == args.cluster), None)
        if spec is None:
            raise AdviseError(f"--cluster {args.cluster}: no such cluster lives in this kernel")
        nodes, per_node = spec.layout.nodes, spec.layout.procs_per_node
    factory = None
    numbers = None
    if args.model:
        if args.model not in user_ns:
            raise AdviseError(f"--model {args.model}: no such name in the notebook")
        factory = user_ns[args.model]
    elif args.parameters:
        given = [args.parameters, args.layers, args.hidden, args.heads, args.vocab]
        if None in given:
            raise AdviseError(
                "the analytic fallback needs --parameters, --layers, --hidden, --heads and --vocab"
            )
        numbers = Analytic(
            args.parameters, args.layers, args.hidden, args.heads, args.vocab, args.precision
        )
    if args.step and args.step not in user_ns:
        raise AdviseError(f"--step {args.step}: no such name in the notebook")
    if (args.verify or args.calibrate) and not args.model:
        flag = "--verify" if args.verify else "--calibrate"
        raise AdviseError(f"{flag} runs the model: give it as --model NAME")
    probe = newest_probe(store, nodes * per_node, args.probe) if nodes * per_node > 1 else None
    if probe is None and nodes * per_node > 1 and probe_first is not None:
        probe = probe_first(nodes, per_node, args.cluster)
    key = cluster_key(nodes, per_node)
    calibration = None if args.uncalibrated else newest(store, key)

    def asked(calibration: dict[str, Any] | None) -> Advice:
        return advise(
            factory,
            global_batch=args.global_batch,
            seq=args.seq,
            nodes=nodes,
            procs_per_node=per_node,
            probe=probe,
            optimizer=args.optimizer,
            precision=args.precision,
            memory_gib=args.memory_gib,
            numbers=numbers,
            calibration=calibration,
        )

    advice = asked(calibration)
    save(store, advice, f"%distributed {line}".strip(), cluster_id=args.cluster or "")
    prior: list[dict[str, Any]] = []
    if args.calibrate:  # the trial, then the advice again from what it fitted
        trial_fit = {**trial(advice, shell, args.model, args.step, args.optimizer), "cluster": key}
        update(store, advice, trial_fit)
        prior = [r.to_json() for r in advice.layouts if r.measured]
        advice = asked({**trial_fit, "run": advice.run_id})
        advice.notes.insert(1, said(trial_fit))
        save(store, advice, f"%distributed {line}".strip(), cluster_id=args.cluster or "")
    if args.verify:
        fitted = verify(
            advice, args.verify, shell, args.model, args.step, args.optimizer, args.repeats, prior
        )
        update(store, advice, {**fitted, "cluster": key} if fitted else None)
    return advice
