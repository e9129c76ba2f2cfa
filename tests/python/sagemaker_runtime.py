"""A local stand-in for the SageMaker platform, for tests (not part of the package).

moto's server on 127.0.0.1 answers the AWS APIs; this runtime plays what SageMaker does behind
them. When a training job is created it lays out each host's container files
(``input/config/resourceconfig.json``, ``hyperparameters.json``, ``inputdataconfig.json``, one
tree per host ``algo-1…N``), downloads the code package and input channels from S3, runs the
packaged entry point in local processes with the launcher's environment (torchrun-style, Open
MPI-style, or none), writes each host's output to CloudWatch Logs streams named like SageMaker's
(``JOB/algo-N-<epoch>``), uploads ``model.tar.gz`` and moves the job through SageMaker's states
(including Failed with FailureReason and Stopped). moto's gaps (jobs are Completed at creation,
no StopTrainingJob/UpdateTrainingJob) are bridged here by updating its in-process job objects.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
REGION = "us-west-2"


def _now() -> datetime:
    return datetime.now(UTC)


class Job:
    def __init__(self, platform: LocalSageMaker, fake: Any, request: dict[str, Any]) -> None:
        self.platform, self.fake, self.request = platform, fake, request
        self.name: str = request["TrainingJobName"]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stopping = False
        self.lock = threading.Lock()

    # -- status, as SageMaker reports it --------------------------------------------------

    def secondary(self, status: str, message: str, primary: str | None = None) -> None:
        with self.lock:
            now = _now()
            trs = self.fake.secondary_status_transitions
            if trs and "EndTime" not in trs[-1]:
                trs[-1]["EndTime"] = now
            trs.append({"Status": status, "StartTime": now, "StatusMessage": message})
            self.fake.secondary_status = status
            self.fake.last_modified_time = now
            if primary:
                self.fake.training_job_status = primary
                if primary in ("Completed", "Failed", "Stopped"):
                    self.fake.training_end_time = now
                    trs[-1]["EndTime"] = now

    # -- the job --------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:  # noqa: BLE001 (the platform itself failed) the job fails with the reason
            self.fake.failure_reason = f"ClientError: {type(exc).__name__}: {exc}"
            self.secondary("Failed", self.fake.failure_reason, "Failed")

    def _run(self) -> None:
        req, p = self.request, self.platform
        hosts = [f"algo-{i + 1}" for i in range(int(req["ResourceConfig"]["InstanceCount"]))]
        self.secondary("Downloading", "Downloading input data")
        hp = {k: json.loads(v) for k, v in req.get("HyperParameters", {}).items()}
        root = Path(tempfile.mkdtemp(prefix=f"sm-{self.name}-", dir=p.workdir))
        bucket, key = hp["sagemaker_submit_directory"][5:].split("/", 1)
        package = p.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        epoch = int(time.time())
        trees: dict[str, Path] = {}
        for host in hosts:
            ml = root / host
            config = ml / "input" / "config"
            config.mkdir(parents=True)
            (config / "resourceconfig.json").write_text(
                json.dumps({"current_host": host, "hosts": hosts, "network_interface_name": "lo"})
            )
            (config / "hyperparameters.json").write_text(json.dumps(req.get("HyperParameters", {})))
            channels = {c["ChannelName"]: c for c in req.get("InputDataConfig", [])}
            (config / "inputdataconfig.json").write_text(
                json.dumps(
                    {
                        n: {
                            "TrainingInputMode": "File",
                            "S3DistributionType": c["DataSource"]["S3DataSource"][
                                "S3DataDistributionType"
                            ],
                        }
                        for n, c in channels.items()
                    }
                )
            )
            for name, channel in channels.items():
                self._download(channel, ml / "input" / "data" / name, hosts.index(host), len(hosts))
            code = ml / "code"
            code.mkdir()
            with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as tar:
                tar.extractall(code, filter="data")
            (ml / "model").mkdir()
            (ml / "output" / "data").mkdir(parents=True)
            trees[host] = ml
        streams = {h: f"{self.name}/{h}-{epoch}" for h in hosts}
        for stream in streams.values():
            p.logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        if self.stopping:
            return self._finish(trees, stopped=True)
        self.secondary("Training", "Training image download completed. Training in progress.")
        self._launch(hp, hosts, trees, streams)
        codes = [proc.wait() for proc in self.procs]
        for t in self.threads:
            t.join()
        self._finish(trees, stopped=self.stopping, failed=any(codes))

    def _download(self, channel: dict[str, Any], dest: Path, index: int, count: int) -> None:
        src = channel["DataSource"]["S3DataSource"]
        bucket, prefix = src["S3Uri"][5:].split("/", 1)
        keys = sorted(
            o["Key"]
            for o in self.platform.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get(
                "Contents", []
            )
        )
        if src["S3DataDistributionType"] == "ShardedByS3Key":
            keys = keys[index::count]
        for k in keys:
            path = dest / k[len(prefix) :].lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self.platform.s3.get_object(Bucket=bucket, Key=k)["Body"].read())

    def _launch(
        self, hp: dict[str, Any], hosts: list[str], trees: dict[str, Path], streams: dict[str, str]
    ) -> None:
        """Start the ranks the way the framework container's launcher would."""
        base = {
            "PATH": os.environ.get("PATH", ""),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            **self.request.get("Environment", {}),
        }
        self.threads: list[threading.Thread] = []
        per_host = int(hp.get("sagemaker_mpi_num_of_processes_per_host", 1))
        if hp.get("sagemaker_torch_distributed_enabled"):
            per_host = self.platform.gpus_per_host
        world = per_host * len(hosts)

        def sm_env(host: str) -> dict[str, str]:
            ml = trees[host]
            channels = {
                f"SM_CHANNEL_{c['ChannelName'].upper()}": str(
                    ml / "input" / "data" / c["ChannelName"]
                )
                for c in self.request.get("InputDataConfig", [])
            }
            return {
                **channels,
                "SM_INPUT_CONFIG_DIR": str(ml / "input" / "config"),
                "SM_MODEL_DIR": str(ml / "model"),
                "SM_OUTPUT_DIR": str(ml / "output"),
                "SM_OUTPUT_DATA_DIR": str(ml / "output" / "data"),
                "SM_CHANNELS": json.dumps(
                    sorted(json.loads((ml / "input/config/inputdataconfig.json").read_text()))
                ),
                "SM_CURRENT_HOST": host,
                "SM_HOSTS": json.dumps(hosts),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(self.platform.free_port()),
            }

        master = sm_env(hosts[0])["MASTER_PORT"]
        for node, host in enumerate(hosts):
            env = {**base, **sm_env(host)}
            env["MASTER_PORT"] = master
            if hp.get("sagemaker_mpi_enabled"):
                if node:
                    continue  # mpirun runs on algo-1; every rank's output lands in its stream
                for rank in range(world):
                    r_node, local = divmod(rank, per_host)
                    r_env = {
                        **base,
                        **sm_env(hosts[r_node]),
                        "MASTER_PORT": master,
                        "OMPI_COMM_WORLD_RANK": str(rank),
                        "OMPI_COMM_WORLD_SIZE": str(world),
                        "OMPI_COMM_WORLD_LOCAL_RANK": str(local),
                        "OMPI_COMM_WORLD_LOCAL_SIZE": str(per_host),
                        "OMPI_COMM_WORLD_NODE_RANK": str(r_node),
                    }
                    self._start(trees[hosts[r_node]], r_env, streams[host])
            elif hp.get("sagemaker_torch_distributed_enabled"):
                for local in range(per_host):
                    self._start(
                        trees[host],
                        {
                            **env,
                            "RANK": str(node * per_host + local),
                            "LOCAL_RANK": str(local),
                            "WORLD_SIZE": str(world),
                            "LOCAL_WORLD_SIZE": str(per_host),
                            "GROUP_RANK": str(node),
                        },
                        streams[host],
                    )
            else:
                self._start(trees[host], env, streams[host])

    def _start(self, ml: Path, env: dict[str, str], stream: str) -> None:
        proc = subprocess.Popen(
            [sys.executable, "jd_entry.py"],
            cwd=ml / "code",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        if self.stopping:  # a stop that came while the job launched (stop() sets it first,
            proc.terminate()  # then ends the processes it finds: this one, or not yet listed)
        thread = threading.Thread(target=self._pump, args=(proc, stream), daemon=True)
        thread.start()
        self.threads.append(thread)

    def _pump(self, proc: subprocess.Popen[bytes], stream: str) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.platform.put_log(stream, line)

    def stop(self) -> None:
        self.stopping = True
        if self.fake.training_job_status == "InProgress":
            self.secondary("Stopping", "Stopping the training job", "Stopping")
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()

    def _finish(self, trees: dict[str, Path], stopped: bool = False, failed: bool = False) -> None:
        if stopped:
            self.secondary("Stopped", "Training job stopped", "Stopped")
            return
        if failed:
            reasons = [
                (ml / "output" / "failure").read_text().strip()
                for ml in trees.values()
                if (ml / "output" / "failure").exists()
            ]
            self.fake.failure_reason = "AlgorithmError: " + (
                "; ".join(reasons) or "the training script exited with a non-zero code"
            )
            self.secondary("Failed", self.fake.failure_reason, "Failed")
            return
        self.secondary("Uploading", "Uploading generated training model")
        body = io.BytesIO()
        with tarfile.open(fileobj=body, mode="w:gz") as tar:
            for ml in trees.values():  # every host's model dir, merged as SageMaker does
                for path in sorted((ml / "model").rglob("*")):
                    if path.is_file():
                        tar.add(path, arcname=path.relative_to(ml / "model").as_posix())
        uri = (
            f"{self.request['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{self.name}"
            "/output/model.tar.gz"
        )
        bucket, key = uri[5:].split("/", 1)
        self.platform.s3.put_object(Bucket=bucket, Key=key, Body=body.getvalue())
        self.fake.model_artifacts = {"S3ModelArtifacts": uri}
        keep = int(self.request["ResourceConfig"].get("KeepAlivePeriodInSeconds", 0))
        if keep:
            self.fake.warm_pool_status = {
                "Status": "Available",
                "ResourceRetainedBillableTimeInSeconds": 0,
            }
        self.secondary("Completed", "Training job completed", "Completed")


class LocalSageMaker:
    """moto's server plus this platform; ``endpoint`` is what the backend is pointed at."""

    def __init__(self, workdir: Path, gpus_per_host: int = 1) -> None:
        self.workdir, self.gpus_per_host = workdir, gpus_per_host
        self.jobs: dict[str, Job] = {}
        self.requests: list[dict[str, Any]] = []
        self._log_lock = threading.Lock()
        self.ingested: dict[str, float] = {}

    def free_port(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def put_log(self, stream: str, message: str) -> None:
        with self._log_lock:
            self.ingested[message] = time.monotonic()  # for benchmarks/sagemaker_latency.py
            self.logs.put_log_events(
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                logEvents=[{"timestamp": int(time.time() * 1000), "message": message}],
            )

    def client(self, name: str) -> Any:
        return boto3.client(
            name,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="platform",
            aws_secret_access_key="platform",  # noqa: S106
            config=Config(retries={"max_attempts": 1}),
        )

    @contextmanager
    def running(self) -> Iterator[LocalSageMaker]:
        from moto.core.common_types import TYPE_RESPONSE  # noqa: F401  (moto is importable)
        from moto.sagemaker.responses import SageMakerResponse
        from moto.server import ThreadedMotoServer

        platform = self
        original = SageMakerResponse.create_training_job

        def create(response: Any) -> Any:
            result = original(response)
            request = dict(response._get_params())
            platform.requests.append(request)
            fake = response.sagemaker_backend.training_jobs[request["TrainingJobName"]]
            fake.training_job_status, fake.secondary_status = "InProgress", "Starting"
            fake.secondary_status_transitions = [
                {
                    "Status": "Starting",
                    "StartTime": _now(),
                    "StatusMessage": "Preparing the instances",
                }
            ]
            fake.model_artifacts = None
            fake.final_metric_data_list = []
            job = Job(platform, fake, request)
            platform.jobs[job.name] = job
            threading.Thread(target=job.run, daemon=True).start()
            return result

        def stop(response: Any) -> Any:
            from moto.core.responses import ActionResult

            name = response._get_param("TrainingJobName")
            platform.jobs[name].stop()
            return ActionResult({})

        def update(response: Any) -> Any:
            from moto.core.responses import ActionResult

            name = response._get_param("TrainingJobName")
            keep = response._get_param("ResourceConfig", {}).get("KeepAlivePeriodInSeconds")
            fake = platform.jobs[name].fake
            if keep == 0 and getattr(fake, "warm_pool_status", None):
                fake.warm_pool_status = {
                    "Status": "Terminated",
                    "ResourceRetainedBillableTimeInSeconds": 1,
                }
            return ActionResult({"TrainingJobArn": fake.arn})

        SageMakerResponse.create_training_job = create  # type: ignore[method-assign, assignment]
        SageMakerResponse.stop_training_job = stop  # type: ignore[attr-defined]
        SageMakerResponse.update_training_job = update  # type: ignore[attr-defined]
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            self.endpoint = f"http://{host}:{port}"
            self.s3, self.logs = self.client("s3"), self.client("logs")
            self.logs.create_log_group(logGroupName=LOG_GROUP)
            yield self
        finally:
            for job in self.jobs.values():
                job.stop()
            server.stop()
            SageMakerResponse.create_training_job = original  # type: ignore[method-assign]
            del SageMakerResponse.stop_training_job  # type: ignore[attr-defined]
            del SageMakerResponse.update_training_job  # type: ignore[attr-defined]
