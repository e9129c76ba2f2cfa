"""Capture what the SageMaker Python SDK (v2) sends for each case into ``sagemaker_*.json``.

Run once with the SDK installed (it is not a test dependency)::

    pip install 'sagemaker<3' 'moto[server]'
    PYTHONPATH=python python tests/python/golden/make_goldens.py

Each case names our flags; the SDK gets the equivalent ``distribution`` dict and settings, and a
fake SageMaker client records the CreateTrainingJob request it would send. moto stands in for S3.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).parent
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.0.1-gpu-py310"
CODE = "s3://jd-bucket/jupyter-distributed/jd-golden/source/sourcedir.tar.gz"

# name: (layout, options, SDK distribution, extra estimator kwargs, fit inputs)
CASES: dict[str, dict[str, Any]] = {
    "ddp_torch_distributed": {
        "layout": {"nodes": 2, "procs_per_node": 8, "strategy": "ddp"},
        "options": {"instance_type": "ml.p4d.24xlarge"},
        "distribution": {"torch_distributed": {"enabled": True}},
    },
    "fsdp_torch_distributed": {
        "layout": {"nodes": 1, "procs_per_node": 4, "strategy": "fsdp"},
        "options": {"instance_type": "ml.g5.12xlarge"},
        "distribution": {"torch_distributed": {"enabled": True}},
    },
    "ddp_smdistributed_dataparallel": {
        "layout": {"nodes": 2, "procs_per_node": 8, "strategy": "ddp"},
        "options": {"instance_type": "ml.p4d.24xlarge", "smddp": True},
        "distribution": {"smdistributed": {"dataparallel": {"enabled": True}}},
    },
    "model_parallel": {
        "layout": {
            "nodes": 2,
            "procs_per_node": 8,
            "strategy": "model-parallel",
            "model_parallel": {
                "partitions": 2,
                "microbatches": 4,
                "pipeline": "interleaved",
                "placement": "cluster",
                "optimize": "speed",
                "tensor_parallel": 2,
            },
        },
        "options": {
            "instance_type": "ml.p4d.24xlarge",
            "mpi_options": "-x NCCL_DEBUG=INFO -verbose",
        },
        "distribution": {
            "smdistributed": {
                "modelparallel": {
                    "enabled": True,
                    "parameters": {
                        "partitions": 2,
                        "microbatches": 4,
                        "placement_strategy": "cluster",
                        "pipeline": "interleaved",
                        "optimize": "speed",
                        "ddp": True,
                        "tensor_parallel_degree": 2,
                    },
                }
            },
            "mpi": {
                "enabled": True,
                "processes_per_host": 8,
                "custom_mpi_options": "-verbose -x orte_base_help_aggregate=0 "
                "-x NCCL_DEBUG=WARN -x NCCL_DEBUG=INFO",
            },
        },
    },
    "model_parallel_simple_memory": {
        "layout": {
            "nodes": 1,
            "procs_per_node": 8,
            "strategy": "model-parallel",
            "model_parallel": {
                "partitions": 8,
                "microbatches": 2,
                "pipeline": "simple",
                "placement": "spread",
                "optimize": "memory",
            },
        },
        "options": {"instance_type": "ml.p3.16xlarge"},
        "distribution": {
            "smdistributed": {
                "modelparallel": {
                    "enabled": True,
                    "parameters": {
                        "partitions": 8,
                        "microbatches": 2,
                        "placement_strategy": "spread",
                        "pipeline": "simple",
                        "optimize": "memory",
                        "ddp": False,
                        "tensor_parallel_degree": 1,
                    },
                }
            },
            "mpi": {
                "enabled": True,
                "processes_per_host": 8,
                "custom_mpi_options": "-verbose -x orte_base_help_aggregate=0 -x NCCL_DEBUG=WARN",
            },
        },
    },
    "horovod_mpi": {
        "layout": {"nodes": 2, "procs_per_node": 4, "strategy": "horovod"},
        "options": {"instance_type": "ml.g5.12xlarge", "mpi_options": "--NCCL_DEBUG INFO"},
        "distribution": {
            "mpi": {
                "enabled": True,
                "processes_per_host": 4,
                "custom_mpi_options": "--NCCL_DEBUG INFO",
            }
        },
    },
    "parameter_server": {
        "layout": {"nodes": 2, "procs_per_node": 1, "strategy": "parameter-server"},
        "options": {"instance_type": "ml.c5.xlarge"},
        "distribution": {"parameter_server": {"enabled": True}},
    },
    "single_process_per_host": {
        "layout": {"nodes": 3, "procs_per_node": 1, "strategy": "none"},
        "options": {"instance_type": "ml.m5.xlarge"},
        "distribution": None,
    },
    "spot_checkpoint_inputs": {
        "layout": {"nodes": 2, "procs_per_node": 1, "strategy": "none"},
        "options": {
            "instance_type": "ml.m5.xlarge",
            "spot": True,
            "max_run": 3600,
            "max_wait": 7200,
            "checkpoint_s3": "s3://jd-bucket/ckpt",
            "inputs": [["train", "s3://jd-bucket/data/train"]],
            "shard_by_key": True,
        },
        "distribution": None,
        "estimator": {
            "use_spot_instances": True,
            "max_run": 3600,
            "max_wait": 7200,
            "checkpoint_s3_uri": "s3://jd-bucket/ckpt",
        },
        "inputs": {"train": ["s3://jd-bucket/data/train", "ShardedByS3Key"]},
    },
    "warm_pool_env": {
        "layout": {"nodes": 1, "procs_per_node": 1, "strategy": "none"},
        "options": {"instance_type": "ml.m5.xlarge", "keep_alive": 1800, "volume_size": 50},
        "env": [["MODEL_SIZE", "small"]],
        "distribution": None,
        "estimator": {
            "keep_alive_period_in_seconds": 1800,
            "volume_size": 50,
            "environment": {"MODEL_SIZE": "small"},
        },
    },
    "framework_version_image": {
        "layout": {"nodes": 1, "procs_per_node": 1, "strategy": "none"},
        "options": {
            "instance_type": "ml.g5.2xlarge",
            "framework_version": "2.0.1",
            "py_version": "py310",
        },
        "distribution": None,
    },
}


def capture(case: dict[str, Any]) -> dict[str, Any]:
    import importlib

    import boto3

    # Imported by name: the SDK is only needed here, never by the package or the tests.
    sagemaker: Any = importlib.import_module("sagemaker")
    TrainingInput = importlib.import_module("sagemaker.inputs").TrainingInput
    PyTorch = importlib.import_module("sagemaker.pytorch").PyTorch

    captured: dict[str, Any] = {}

    class FakeSageMaker:
        def create_training_job(self, **request: Any) -> dict[str, Any]:
            captured.update(request)
            return {}

        def __getattr__(self, name: str) -> Any:
            return mock.MagicMock()

    boto = boto3.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106
        region_name="us-west-2",
    )
    session = sagemaker.session.Session(
        boto_session=boto, sagemaker_client=FakeSageMaker(), default_bucket="jd-bucket"
    )
    kwargs: dict[str, Any] = {
        "instance_type": case["options"]["instance_type"],
        "instance_count": case["layout"]["nodes"],
    }
    kwargs.update(case.get("estimator", {}))
    if case["distribution"] is not None:
        kwargs["distribution"] = case["distribution"]
    options = case["options"]
    if "framework_version" in options:  # the SDK resolves the image itself
        kwargs.update(
            framework_version=options["framework_version"], py_version=options["py_version"]
        )
    else:
        kwargs["image_uri"] = IMAGE
    estimator = PyTorch(
        entry_point="jd_entry.py",
        source_dir=CODE,
        role=ROLE,
        output_path="s3://jd-bucket/jupyter-distributed/",
        sagemaker_session=session,
        disable_profiler=True,
        debugger_hook_config=False,
        **kwargs,
    )
    inputs = {
        name: TrainingInput(uri, distribution=dist)
        for name, (uri, dist) in case.get("inputs", {}).items()
    }
    estimator.fit(inputs=inputs or None, job_name="jd-golden", wait=False, logs=False)
    return captured


def main() -> int:
    import moto

    with moto.mock_aws():
        import boto3

        boto3.client("s3", region_name="us-west-2").create_bucket(
            Bucket="jd-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        for name, case in CASES.items():
            request = capture(case)
            golden = {k: v for k, v in case.items() if k not in ("estimator", "inputs")}
            golden.update(
                image=request["AlgorithmSpecification"]["TrainingImage"],
                role=ROLE,
                code_uri=CODE,
                region="us-west-2",
                request=request,
            )
            path = HERE / f"sagemaker_{name}.json"
            path.write_text(json.dumps(golden, indent=1, sort_keys=True, default=str) + "\n")
            print("wrote", path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
