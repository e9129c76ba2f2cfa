"""The CreateTrainingJob request equals what the SageMaker SDK sends (goldens), and every
setting the service would refuse is refused first, in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.sagemaker.options import SageMakerOptions, check_spec
from jupyter_distributed.backends.sagemaker.request import distribution, training_job_request
from jupyter_distributed.errors import SpecError
from jupyter_distributed.spec import Layout, ModelParallel, Spec, Strategy

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("sagemaker_*.json"))


def _spec(case: dict[str, Any]) -> tuple[Spec, SageMakerOptions]:
    layout = dict(case["layout"])
    mp = layout.pop("model_parallel", None)
    opts = dict(case["options"])
    opts["inputs"] = tuple(tuple(i) for i in opts.get("inputs", ()))
    options = SageMakerOptions(role=case["role"], region=case["region"], bucket="jd-bucket", **opts)
    spec = Spec(
        layout=Layout(model_parallel=ModelParallel(**mp) if mp else None, **layout),
        backend="sagemaker",
        options=options,
        env=tuple(tuple(e) for e in case.get("env", ())),
    )
    return spec, options


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_request_matches_sdk(path: Path) -> None:
    case = json.loads(path.read_text())
    spec, options = _spec(case)
    check_spec(spec, options)
    assert (distribution(spec.layout, options) or None) == case["distribution"]
    request = training_job_request(
        spec,
        options,
        case["image"],
        "jd-golden",
        case["code_uri"],
        "s3://jd-bucket/jupyter-distributed/",
    )
    assert request == case["request"]


def test_every_strategy_has_a_golden() -> None:
    strategies = {json.loads(p.read_text())["layout"]["strategy"] for p in CASES}
    assert strategies == {"none", "ddp", "fsdp", "model-parallel", "horovod", "parameter-server"}


def _check(
    layout: Layout | None = None,
    env: tuple[tuple[str, str], ...] = (),
    push: tuple[str, ...] = (),
    **options: Any,
) -> None:
    opts = SageMakerOptions(**options)
    check_spec(
        Spec(layout=layout or Layout(), backend="sagemaker", options=opts, env=env, push=push), opts
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"instance_type": "p4d.24xlarge"}, "not a SageMaker instance type"),
        ({"job_name": "bad_name"}, "--job-name 'bad_name'"),
        ({"job_name": "x" * 64}, "1-63 letters"),
        ({"role": "SageMakerRole"}, "IAM role ARN"),
        ({"bucket": "Bad_Bucket"}, "not a valid S3 bucket"),
        ({"region": "mars"}, "not an AWS region"),
        ({"spot": True}, "--spot needs --max-wait"),
        ({"spot": True, "max_run": 3600, "max_wait": 60}, "max-wait ≥ max-run"),
        ({"max_wait": 7200}, "add --spot"),
        ({"spot": True, "max_run": 60, "max_wait": 60, "keep_alive": 60}, "do not combine"),
        ({"keep_alive": 4000}, "--keep-alive must be 0-3600"),
        ({"max_run": 0}, "--max-run must be"),
        ({"checkpoint_s3": "checkpoints/x"}, "must be an s3://"),
        ({"inputs": (("train", "/data"),)}, "must be an s3:// URI"),
        ({"inputs": (("code", "s3://b-1/x"),)}, "reserved"),
        ({"shard_by_key": True}, "--shard-by-key needs"),
        ({"image": "x:1", "framework_version": "2.1"}, "either --image or --framework-version"),
    ],
)
def test_options_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)) as info:
        SageMakerOptions(**kwargs)
    assert "\n" not in str(info.value)


def test_more_processes_than_gpus_names_both_numbers() -> None:
    with pytest.raises(SpecError, match=r"9 processes per node but ml\.p4d\.24xlarge has 8"):
        _check(Layout(nodes=2, procs_per_node=9), instance_type="ml.p4d.24xlarge")
    _check(Layout(nodes=2, procs_per_node=8), instance_type="ml.p4d.24xlarge")


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ((("AWS_SECRET_ACCESS_KEY", "abc"),), "AWS_SECRET_ACCESS_KEY"),
        ((("HF_TOKEN", "abc"),), "HF_TOKEN"),
        ((("ID", "AKIAABCDEFGHIJKLMNOP"),), "ID"),
        ((("DB_PASSWORD", "x"),), "DB_PASSWORD"),
    ],
)
def test_secret_looking_env_refused(env: tuple[tuple[str, str], ...], key: str) -> None:
    with pytest.raises(SpecError, match=f"--env {key} looks like a secret"):
        _check(env=env)


def test_layout_rules() -> None:
    with pytest.raises(SpecError, match=r"--smddp .* needs --strategy ddp"):
        _check(
            Layout(nodes=1, procs_per_node=8, strategy=Strategy.HOROVOD),
            instance_type="ml.p4d.24xlarge",
            smddp=True,
        )
    with pytest.raises(SpecError, match="--smddp runs on"):
        _check(Layout(nodes=1, procs_per_node=1, strategy=Strategy.DDP), smddp=True)
    with pytest.raises(SpecError, match="uses torchrun"):
        _check(Layout(strategy=Strategy.DDP), mpi_options="-x A=1")


def test_push_needs_matching_python() -> None:
    with pytest.raises(SpecError, match=r"image runs Python 3\.8"):
        _check(
            push=("x",), image="1.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:1.12-gpu-py38"
        )
    _check(push=("x",), image="my-own-image:latest")  # unknown: allowed


def test_hyperparameter_limit() -> None:
    layout = Layout(nodes=1, procs_per_node=2, strategy=Strategy.HOROVOD)
    options = SageMakerOptions(mpi_options="-x " + "A" * 3000)
    with pytest.raises(SpecError, match="SageMaker allows 2500"):
        training_job_request(
            Spec(layout=layout, backend="sagemaker", options=options),
            options,
            "img",
            "jd-1",
            "s3://b/c",
            "s3://b/",
        )


def test_mpi_defaults_added_once() -> None:
    from jupyter_distributed.backends.sagemaker.request import merge_mpi_options

    merged = merge_mpi_options("-verbose -x NCCL_DEBUG=WARN -x A=1", "-verbose -x NCCL_DEBUG=WARN")
    assert merged == "-verbose -x NCCL_DEBUG=WARN -x A=1"
