"""One rule for what looks like a secret, used wherever a value could be shown or stored.

SageMaker refuses such ``--env`` values (a job's environment is visible in DescribeTrainingJob);
``local`` and ``mpi`` pass them to the ranks but mask them in ``--dry-run``, in the stored spec
(and so in ``GET runs``) and in ``%distributed config``: the name is shown, the value is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"SECRET|PASSW|TOKEN|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|(^|_)KEY($|_)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"^(AKIA|ASIA)[A-Z0-9]{16}$|^-----BEGIN|^(ghp|gho|xox[bp]|sk)[-_]")


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def looks_secret(name: str, value: str) -> bool:
    """True when the variable's name or its value looks like a credential."""
    return secret_name(name) or bool(_SECRET_VALUE.search(value))


def redact_env(pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` pairs with secret-looking values replaced by :data:`REDACTED`."""
    return tuple((k, REDACTED if looks_secret(k, v) else v) for k, v in pairs)
