"""The job's code package: the cell, the pushed values and our small runtime, as SageMaker's
``sourcedir.tar.gz``, uploaded to S3 with server-side encryption."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import cloudpickle

from ... import userfiles
from ...protocol.frames import pack_frames
from ...push import Pickled
from ...spec import Spec
from .options import MAX_REQUIREMENTS, REQUIREMENTS, SageMakerOptions
from .request import ENTRY_POINT

_PACKAGE = Path(__file__).resolve().parents[2]  # python/jupyter_distributed
#: The modules outside ``worker/`` and ``protocol/`` that the worker may import (the import
#: contracts and tests/python/test_architecture.py hold the worker to them): a rank needs them all.
SHARED_WITH_THE_WORKER = (
    "errors", "collapse", "risingmin", "layout", "pids", "memcg", "ioloop", "modelshapes",
)  # fmt: skip
# What a rank imports: the package marker, the shared modules, the protocol and the worker.
_RUNTIME_FILES = (
    "__init__.py",
    *(f"{name}.py" for name in SHARED_WITH_THE_WORKER),
    "protocol/*.py",
    "worker/*.py",
)

ENTRY_SOURCE = '''"""jupyter-distributed's SageMaker entry point: a rank, or a host's ranks."""
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "jd_runtime"))
from jupyter_distributed.worker.sagemaker_rank import main  # noqa: E402

sys.exit(main(ROOT))
'''


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def _frames(push: Pickled) -> bytes:
    return pack_frames(push.frames)


def build(
    spec: Spec, run_id: str, code: str, push: Pickled | None, requirements: str = ""
) -> bytes:
    """The gzipped tarball that SageMaker unpacks as the job's code directory."""
    job = {"run_id": run_id, "code": code, "layout": spec.layout.to_json(), "pull": list(spec.pull)}
    if isinstance(spec.options, SageMakerOptions) and spec.options.trust_pickle:
        job["pull_format"] = "pickle"  # else the ranks return data (protocol/datavalues.py)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        _add(tar, ENTRY_POINT, ENTRY_SOURCE.encode())
        _add(tar, "job.json", json.dumps(job).encode())
        if push is not None:
            _add(tar, "push.bin", _frames(push))
        if requirements:
            text = userfiles.read_text(
                "--requirements", requirements, MAX_REQUIREMENTS, REQUIREMENTS
            )
            _add(tar, "requirements.txt", text.encode())
        for pattern in _RUNTIME_FILES:
            for path in sorted(_PACKAGE.glob(pattern)):
                rel = path.relative_to(_PACKAGE.parent).as_posix()
                _add(tar, f"jd_runtime/{rel}", path.read_bytes())
        cp = Path(cloudpickle.__file__).parent
        for path in sorted(cp.glob("*.py")):
            _add(tar, f"jd_runtime/cloudpickle/{path.name}", path.read_bytes())
    return out.getvalue()


def upload(s3: Any, bucket: str, key: str, data: bytes) -> str:
    """Put the package (encrypted at rest) and return its ``s3://`` URI."""
    s3.put_object(Bucket=bucket, Key=key, Body=data, ServerSideEncryption="AES256")
    return f"s3://{bucket}/{key}"
