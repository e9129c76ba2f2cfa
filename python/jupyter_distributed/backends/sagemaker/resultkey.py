"""The per-run key that signs a SageMaker job's results (HMAC-SHA256).

The results are the job's own only when they verify with it. It is no defence against running
code: the key reaches the container in the job's environment, which DescribeTrainingJob shows,
so results come back as data (:mod:`...protocol.datavalues`), and as pickles only with the
user's ``--trust-pickle`` (:mod:`.results`). At submit the kernel creates a random key, keeps
it in a 0600 file beside the history store (``<store dir>/result-keys/<run id>``, directory
0700) and hands it to the job's container in its environment (:data:`KEY_ENV`); each rank's
container signs its ``.pull`` file with it. The
kernel loads pulled values only when the signature verifies against its *own* copy of the key.
The Jupyter server never unpickles results at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

#: The container's environment variable that carries the key (hex).
KEY_ENV = "JD_RESULT_KEY"
#: The field of a rank's ``rank-N.json`` that holds the HMAC of its ``rank-N.pull``.
SIGNATURE_FIELD = "pull_hmac"


def _path(store_path: Path, run_id: str) -> Path:
    return store_path.parent / "result-keys" / run_id.replace("/", "_")


def new_key(store_path: Path, run_id: str) -> str:
    """Create and keep the key of ``run_id``; returns it as hex."""
    key = secrets.token_hex(32)
    path = _path(store_path, run_id)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with contextlib.suppress(OSError):
        path.parent.chmod(0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


def load_key(store_path: Path, run_id: str) -> bytes | None:
    """The key kept for ``run_id``, or None (a run from before keys, another host's run)."""
    try:
        return bytes.fromhex(_path(store_path, run_id).read_text().strip())
    except (OSError, ValueError):
        return None


def sign(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verified(key: bytes | None, data: bytes, signature: object) -> bool:
    return (
        key is not None
        and isinstance(signature, str)
        and hmac.compare_digest(sign(key, data), signature)
    )
