"""The CreateTrainingJob request equals what the SageMaker SDK sends (goldens), and every
setting the service would refuse is refused first, in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.sagemaker.backend import resolve_image
from jupyter_distributed.backends.sagemaker.checks import check_spec
from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
from jupyter_distributed.backends.sagemaker.request import distribution, training_job_request
from jupyter_distributed.errors import SpecError
from jupyter_distributed.layout import Layout, ModelParallel, Strategy
from jupyter_distributed.spec import Spec

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("sagemaker_*.json"))
PREFIX = "jupyter-distributed"


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


def _golden_request(spec: Spec, options: SageMakerOptions, case: dict[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = training_job_request(
        spec, options, case["image"], "jd-golden", case["code_uri"], f"s3://jd-bucket/{PREFIX}/"
    )
    return request


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_request_matches_sdk(path: Path) -> None:
    case = json.loads(path.read_text())
    spec, options = _spec(case)
    check_spec(spec, options)
    assert (distribution(spec.layout, options) or None) == case["distribution"]
    if options.framework_version:
        assert resolve_image(options) == case["image"]
    request = _golden_request(spec, options, case)
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
        ({"mpi_options": "-x 'A"}, '--mpi-options "-x \'A": No closing quotation'),
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


def test_timeout_points_to_max_run() -> None:
    opts = SageMakerOptions()
    with pytest.raises(SpecError, match="use --max-run"):
        check_spec(Spec(backend="sagemaker", options=opts, timeout=5.0), opts)


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


def test_mpi_options_on_the_magics_line_are_the_sdks_custom_mpi_options() -> None:
    """R1: a source document's Horovod options (``-verbose -x NCCL_DEBUG=INFO``), given as
    ``--mpi-options`` on a ``--backend sagemaker`` line, are sent as the SageMaker Python SDK
    sends ``distribution={"mpi": {..., "custom_mpi_options": ...}}``: the golden Horovod request,
    with its hyperparameter ``sagemaker_mpi_custom_mpi_options`` = the JSON of the options."""
    from jupyter_distributed.cell_spec import spec_from_args
    from jupyter_distributed.magics import _parsed

    custom = "-verbose -x NCCL_DEBUG=INFO"
    case = json.loads((GOLDEN / "sagemaker_horovod_mpi.json").read_text())
    line = (
        f"--backend sagemaker --nodes 2 --procs-per-node 4 --strategy horovod "
        f"--instance-type ml.g5.12xlarge --role {case['role']} --region {case['region']} "
        f'--bucket jd-bucket --mpi-options "{custom}"'
    )
    spec = spec_from_args(_parsed(line))
    options = spec.options
    assert isinstance(options, SageMakerOptions)
    check_spec(spec, options)
    assert distribution(spec.layout, options) == {
        "mpi": {"enabled": True, "processes_per_host": 4, "custom_mpi_options": custom}
    }
    request = _golden_request(spec, options, case)
    expected = case["request"]
    expected["HyperParameters"]["sagemaker_mpi_custom_mpi_options"] = json.dumps(custom)
    assert request == expected


def test_horovod_with_tensorflow_sends_the_sdks_mpi_request() -> None:
    """``--framework tensorflow`` changes what the ranks import, not the job: the request is the
    SDK's Horovod request (``distribution={"mpi": {...}}``), byte for byte the golden one."""
    from jupyter_distributed.cell_spec import spec_from_args
    from jupyter_distributed.layout import Framework
    from jupyter_distributed.magics import _parsed

    case = json.loads((GOLDEN / "sagemaker_horovod_mpi.json").read_text())
    line = (
        "--backend sagemaker --nodes 2 --procs-per-node 4 --strategy horovod "
        f"--framework tensorflow --instance-type ml.g5.12xlarge --role {case['role']} "
        f"--region {case['region']} --bucket jd-bucket --mpi-options '--NCCL_DEBUG INFO'"
    )
    spec = spec_from_args(_parsed(line))
    options = spec.options
    assert isinstance(options, SageMakerOptions)
    assert spec.layout.framework is Framework.TENSORFLOW
    check_spec(spec, options)
    assert distribution(spec.layout, options) == case["distribution"]
    assert _golden_request(spec, options, case) == case["request"]


def test_mpi_defaults_added_once() -> None:
    from jupyter_distributed.backends.sagemaker.request import merge_mpi_options

    merged = merge_mpi_options("-verbose -x NCCL_DEBUG=WARN -x A=1", "-verbose -x NCCL_DEBUG=WARN")
    assert merged == "-verbose -x NCCL_DEBUG=WARN -x A=1"


def test_torchrun_needs_one_process_per_gpu() -> None:
    with pytest.raises(SpecError, match=r"ml\.g5\.12xlarge has 4, so use --procs-per-node 4"):
        _check(
            Layout(nodes=1, procs_per_node=2, strategy=Strategy.DDP), instance_type="ml.g5.12xlarge"
        )


def test_package_holds_entry_job_runtime_and_requirements(tmp_path: Path) -> None:
    import io
    import tarfile

    from jupyter_distributed.backends.sagemaker import package
    from jupyter_distributed.push import pickle_push

    req = tmp_path / "requirements.txt"
    req.write_text("numpy\n")
    spec = Spec(
        layout=Layout(nodes=2),
        backend="sagemaker",
        options=SageMakerOptions(),
        push=("data",),
        pull=("out",),
    )
    push = pickle_push(("data",), {"data": [1, 2]})
    body = package.build(spec, "run-1", "print(rank)", push, str(req))
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        names = set(tar.getnames())
        job = json.loads(tar.extractfile("job.json").read())  # type: ignore[union-attr]
        assert tar.extractfile("requirements.txt").read() == b"numpy\n"  # type: ignore[union-attr]
    assert {
        "jd_entry.py",
        "push.bin",
        "jd_runtime/jupyter_distributed/worker/sagemaker_rank.py",
        "jd_runtime/jupyter_distributed/protocol/messages.py",
        "jd_runtime/jupyter_distributed/layout.py",
        "jd_runtime/cloudpickle/__init__.py",
    } <= names
    assert not any("backends" in n or "session" in n for n in names)
    assert job == {
        "run_id": "run-1",
        "code": "print(rank)",
        "pull": ["out"],
        "layout": spec.layout.to_json(),
    }
    with pytest.raises(SpecError, match="--requirements"):
        package.build(spec, "run-1", "1", None, str(tmp_path / "missing.txt"))


def test_tagged_lines_become_events() -> None:
    from jupyter_distributed.backends.sagemaker.follow import parse_line
    from jupyter_distributed.events import ErrorEvent, MetricEvent, OutputEvent

    out = parse_line("r", 5.0, "[1,3]<stdout>:##jd|3|o|12.500|hello | world")
    assert isinstance(out, OutputEvent) and (out.rank, out.t, out.text) == (
        3,
        12.5,
        "hello | world",
    )
    metric = parse_line("r", 5.0, '##jd|2|m|[7.0, {"loss": 0.5}]')
    assert isinstance(metric, MetricEvent) and metric.values == {"loss": 0.5}
    err = parse_line("r", 5.0, '##jd|1|x|{"rank": 1, "t": 3.0, "ename": "E", "evalue": "v"}')
    assert isinstance(err, ErrorEvent) and err.failure.summary == "rank 1 raised E: v"
    assert parse_line("r", 5.0, "Invoking script with the following command:") is None
    assert parse_line("r", 5.0, "##jd|1|m|not json") is None
