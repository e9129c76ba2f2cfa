"""The CreateTrainingJob request for a cell: pure, printable, identical to the SageMaker SDK's.

Hyperparameters are encoded as the SDK encodes them (every value ``json.dumps``-ed), and each
strategy maps to the SDK's ``distribution`` setting, so the framework containers start
torchrun, mpirun or smddprun exactly as they do for SDK users. ``tests/python/golden/`` pins it.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from ...errors import SpecError
from ...layout import Layout, ModelParallel, Strategy
from ...spec import Spec
from .options import (
    MAX_HYPERPARAMETER_KEY,
    MAX_HYPERPARAMETER_VALUE,
    MAX_HYPERPARAMETERS,
    SageMakerOptions,
)

ENTRY_POINT = "jd_entry.py"
# The SDK's own defaults for mpirun (smdistributed model parallel adds these once).
MODEL_PARALLEL_MPI_DEFAULTS = (
    "-verbose",
    "-x",
    "orte_base_help_aggregate=0",
    "-x",
    "NCCL_DEBUG=WARN",
)


def distribution(layout: Layout, options: SageMakerOptions) -> dict[str, Any]:
    """The SDK ``distribution`` dict equivalent to the cell's strategy."""
    strategy = layout.strategy
    mpi: dict[str, Any] = {"enabled": True, "processes_per_host": layout.procs_per_node}
    if options.mpi_options:
        mpi["custom_mpi_options"] = merge_mpi_options(options.mpi_options)
    if strategy in (Strategy.DDP, Strategy.FSDP):
        if options.smddp:
            ddp: dict[str, Any] = {"enabled": True}
            if options.mpi_options:
                ddp["custom_mpi_options"] = merge_mpi_options(options.mpi_options)
            return {"smdistributed": {"dataparallel": ddp}}
        return {"torch_distributed": {"enabled": True}}
    if strategy is Strategy.MODEL_PARALLEL:
        mp = layout.model_parallel or ModelParallel()  # Layout always sets it here
        parameters = {
            "partitions": mp.partitions,
            "microbatches": mp.microbatches,
            "placement_strategy": mp.placement.value,
            "pipeline": mp.pipeline.value,
            "optimize": mp.optimize.value,
            "ddp": layout.data_parallel_degree > 1,
            "tensor_parallel_degree": mp.tensor_parallel,
        }
        mpi_mp = dict(mpi)
        mpi_mp["custom_mpi_options"] = merge_mpi_options(
            options.mpi_options, " ".join(MODEL_PARALLEL_MPI_DEFAULTS)
        )
        return {
            "smdistributed": {"modelparallel": {"enabled": True, "parameters": parameters}},
            "mpi": mpi_mp,
        }
    if strategy is Strategy.PARAMETER_SERVER:
        return {"parameter_server": {"enabled": True}}
    if strategy is Strategy.HOROVOD or layout.procs_per_node > 1 or options.mpi_options:
        return {"mpi": mpi}
    return {}


def merge_mpi_options(user: str, defaults: str = "") -> str:
    """Defaults first, then the user's options; an option the user repeats is kept once."""

    def pairs(text: str) -> list[tuple[str, ...]]:
        words = shlex.split(text)
        out: list[tuple[str, ...]] = []
        i = 0
        while i < len(words):
            takes_value = words[i] in ("-x", "--mca", "-mca") or (
                words[i].startswith("-")
                and i + 1 < len(words)
                and not words[i + 1].startswith("-")
                and words[i] not in ("-verbose",)
            )
            if words[i] in ("--mca", "-mca") and i + 2 < len(words):
                out.append(tuple(words[i : i + 3]))
                i += 3
            elif takes_value:
                out.append(tuple(words[i : i + 2]))
                i += 2
            else:
                out.append((words[i],))
                i += 1
        return out

    merged: list[tuple[str, ...]] = []
    for item in (*pairs(defaults), *pairs(user)):
        if item not in merged:
            merged.append(item)
    return " ".join(shlex.join(item) for item in merged)


def distribution_hyperparameters(layout: Layout, options: SageMakerOptions) -> dict[str, Any]:
    """The SDK's hyperparameters for ``distribution`` (before JSON encoding)."""
    dist = distribution(layout, options)
    out: dict[str, Any] = {}
    if "torch_distributed" in dist:
        out["sagemaker_torch_distributed_enabled"] = True
    if "parameter_server" in dist:
        out["sagemaker_parameter_server_enabled"] = True
    smd = dist.get("smdistributed", {})
    if "dataparallel" in smd:
        out["sagemaker_distributed_dataparallel_enabled"] = True
        out["sagemaker_distributed_dataparallel_custom_mpi_options"] = smd["dataparallel"].get(
            "custom_mpi_options", ""
        )
    if "modelparallel" in smd:
        out["mp_parameters"] = smd["modelparallel"]["parameters"]
        out["sagemaker_distributed_dataparallel_enabled"] = False
    if "mpi" in dist:
        out["sagemaker_mpi_enabled"] = True
        out["sagemaker_mpi_num_of_processes_per_host"] = dist["mpi"]["processes_per_host"]
        out["sagemaker_mpi_custom_mpi_options"] = dist["mpi"].get("custom_mpi_options", "")
    if smd or "torch_distributed" in dist:
        out["sagemaker_instance_type"] = options.instance_type
    return out


def hyperparameters(
    spec: Spec, options: SageMakerOptions, job_name: str, code_uri: str
) -> dict[str, str]:
    raw: dict[str, Any] = {
        "sagemaker_program": ENTRY_POINT,
        "sagemaker_submit_directory": code_uri,
        "sagemaker_container_log_level": 20,
        "sagemaker_job_name": job_name,
        "sagemaker_region": options.region,
    }
    raw.update(distribution_hyperparameters(spec.layout, options))
    raw.update(spec.params)  # a sweep's combination, as the job's own hyperparameters
    encoded = {key: json.dumps(value) for key, value in raw.items()}
    check_hyperparameters(encoded)
    return encoded


def check_hyperparameters(values: dict[str, str]) -> None:
    if len(values) > MAX_HYPERPARAMETERS:
        raise SpecError(f"{len(values)} hyperparameters; SageMaker allows {MAX_HYPERPARAMETERS}")
    for key, value in values.items():
        if len(key) > MAX_HYPERPARAMETER_KEY:
            raise SpecError(
                f"hyperparameter name {key[:40]!r}… is longer than "
                f"{MAX_HYPERPARAMETER_KEY} characters"
            )
        if len(value) > MAX_HYPERPARAMETER_VALUE:
            raise SpecError(
                f"hyperparameter {key} is {len(value)} characters encoded; "
                f"SageMaker allows {MAX_HYPERPARAMETER_VALUE} (shorten "
                "--mpi-options)"
            )


def training_job_request(
    spec: Spec, options: SageMakerOptions, image: str, job_name: str, code_uri: str, output_uri: str
) -> dict[str, Any]:
    """The exact CreateTrainingJob request (what --dry-run prints)."""
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": options.max_run}
    algorithm: dict[str, Any] = {"TrainingImage": image, "TrainingInputMode": "File"}
    if options.framework_version:  # the SDK turns this on for the images it resolves
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    resources: dict[str, Any] = {
        "InstanceCount": spec.layout.nodes,
        "InstanceType": options.instance_type,
        "VolumeSizeInGB": options.volume_size,
    }
    if options.keep_alive:
        resources["KeepAlivePeriodInSeconds"] = options.keep_alive
    request: dict[str, Any] = {
        "TrainingJobName": job_name,
        "AlgorithmSpecification": algorithm,
        "RoleArn": options.role,
        "OutputDataConfig": {"S3OutputPath": output_uri},
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "HyperParameters": hyperparameters(spec, options, job_name, code_uri),
        "ProfilerConfig": {"DisableProfiler": True},
    }
    channels = [_channel(name, uri, options.shard_by_key) for name, uri in options.inputs]
    if channels:
        request["InputDataConfig"] = channels
    if spec.env:
        request["Environment"] = dict(spec.env)
    if options.spot:
        request["EnableManagedSpotTraining"] = True
        stopping["MaxWaitTimeInSeconds"] = options.max_wait
    if options.checkpoint_s3:
        request["CheckpointConfig"] = {"S3Uri": options.checkpoint_s3}
    return request


def _channel(name: str, uri: str, shard: bool) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": uri,
                "S3DataDistributionType": "ShardedByS3Key" if shard else "FullyReplicated",
            }
        },
    }
