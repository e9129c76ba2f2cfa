"""``--backend sagemaker``: each cell becomes a training job, created with boto3 and followed live.

``plan()`` is pure: it resolves the configuration, checks everything and renders the exact
CreateTrainingJob request (what ``--dry-run`` prints). The cluster holds no machines of its own;
``execute()`` packages the cell, creates the job and follows it until its results are back.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from ...errors import LaunchError, SpecError
from ...events import RunState
from ...history.store import Store
from ...interface import Backend, Cluster, Plan, RankInfo, RankPlan, RunOutcome, RunRequest, RunView
from ...spec import Spec
from . import package
from .aws import Clients, aws_errors
from .checks import check_spec
from .job import follow_job
from .options import SageMakerOptions
from .request import ENTRY_POINT, training_job_request
from .resultkey import KEY_ENV, new_key
from .results import Load

DRY_RUN_JOB = "jd-dry-run"


def resolve_image(options: SageMakerOptions) -> str:
    """--image as given, or the PyTorch training image for --framework-version."""
    if options.image:
        return options.image
    if not options.framework_version:
        raise SpecError(
            "no training image: give --image or --framework-version, or set "
            "JUPYTER_DISTRIBUTED_SAGEMAKER_IMAGE"
        )
    processor = "gpu" if options.accelerators else "cpu"
    py = options.py_version or f"py3{sys.version_info[1]}"
    return (
        f"763104351884.dkr.ecr.{options.region}.amazonaws.com/pytorch-training:"
        f"{options.framework_version}-{processor}-{py}"
    )


def resolved_options(spec: Spec) -> SageMakerOptions:
    options = spec.options if isinstance(spec.options, SageMakerOptions) else SageMakerOptions()
    options = options.resolved()
    for name, flag in (("role", "--role"), ("bucket", "--bucket"), ("region", "--region")):
        if not getattr(options, name):
            raise SpecError(
                f"{flag} is not set; pass it or set JUPYTER_DISTRIBUTED_SAGEMAKER_{name.upper()}"
            )
    check_spec(spec, options)
    return options


@dataclass(frozen=True)
class SageMakerPlan(Plan):
    request: tuple[tuple[str, str], ...] = ()  # ("json", text): frozen and hashable

    def render(self) -> str:
        return dict(self.request)["json"]


def code_key(options: SageMakerOptions, job_name: str) -> str:
    return f"{options.prefix}/{job_name}/source/sourcedir.tar.gz"


def output_uri(options: SageMakerOptions) -> str:
    return f"s3://{options.bucket}/{options.prefix}/"


def build_request(
    spec: Spec, options: SageMakerOptions, job_name: str, result_key: str = ""
) -> dict[str, Any]:
    """The request; ``result_key`` (made at submit, see :mod:`.resultkey`) goes to the
    container's environment to sign the results (``--dry-run`` has none yet)."""
    code = f"s3://{options.bucket}/{code_key(options, job_name)}"
    request = training_job_request(
        spec, options, resolve_image(options), job_name, code, output_uri(options)
    )
    if result_key:
        request["Environment"] = {**request.get("Environment", {}), KEY_ENV: result_key}
    return request


class SageMakerBackend(Backend):
    name = "sagemaker"

    def __init__(self, clients: Clients | None = None, poll: float = 0.5) -> None:
        self.clients = clients
        self.poll = poll

    def plan(self, spec: Spec) -> Plan:
        options = resolved_options(spec)
        job = options.job_name or DRY_RUN_JOB
        request = build_request(spec, options, job)
        ranks = tuple(
            RankPlan(r, f"algo-{spec.layout.coords(r).node_rank + 1}", spec.layout.coords(r))
            for r in range(spec.world_size)
        )
        return SageMakerPlan(
            spec=spec,
            ranks=ranks,
            command=(ENTRY_POINT,),
            extra=(("instance", options.instance_type),),
            request=(("json", json.dumps(request, indent=2)),),
        )

    def launch(self, plan: Plan, store: Store, view: RunView) -> Cluster:
        options = resolved_options(plan.spec)
        clients = self.clients or Clients.create(options)
        return SageMakerCluster(plan, store, clients, options, self.poll)


class SageMakerCluster(Cluster):
    """One training job per cell; nothing stays running between cells (warm pools aside)."""

    interactive = False  # (its ranks write tagged lines to CloudWatch: nothing reaches them)

    def __init__(
        self, plan: Plan, store: Store, clients: Clients, options: SageMakerOptions, poll: float
    ) -> None:
        self.plan, self.store, self.clients, self.options = plan, store, clients, options
        self.poll = poll
        self.id = f"sagemaker-{int(time.time())}"
        self.job_name = ""

    def ranks(self) -> list[RankInfo]:
        return [RankInfo(r.rank, r.host, None, "planned", r.coords) for r in self.plan.ranks]

    @property
    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        """Nothing to stop between cells; a running job is stopped by its cell's interrupt."""

    def execute(self, request: RunRequest, view: RunView) -> RunOutcome:
        spec, options, sm = self.plan.spec, self.options, self.clients.sagemaker
        job_name = options.job_name or f"jd-{request.run_id}"
        body = package.build(spec, request.run_id, request.code, request.push, options.requirements)
        with aws_errors("creating the training job", LaunchError):
            if job_exists(sm, job_name):
                raise LaunchError(
                    f"a training job named {job_name} already exists; choose another --job-name"
                )
            package.upload(self.clients.s3, options.bucket, code_key(options, job_name), body)
            key = new_key(self.store.path, request.run_id)
            sm.create_training_job(**build_request(spec, options, job_name, key))
        self.job_name = job_name
        self.store.set_external_id(request.run_id, job_name)
        view.notice(
            f"SageMaker training job {job_name} created ({spec.layout.nodes} × "
            f"{options.instance_type})"
        )
        if not options.wait:
            view.notice(f"--no-wait: follow it in the panel or with %distributed attach {job_name}")
            return RunOutcome(RunState.RUNNING)
        load: Load = "pickle" if options.trust_pickle else "data"
        return follow_job(
            self.clients,
            job_name,
            request.run_id,
            spec.ranks,
            self.store,
            view,
            self.poll,
            load=load,
        )


def job_exists(sm: Any, job_name: str) -> bool:
    try:
        sm.describe_training_job(TrainingJobName=job_name)
    except sm.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ValidationException":
            return False  # "Could not find training job": the name is free
        raise
    return True
