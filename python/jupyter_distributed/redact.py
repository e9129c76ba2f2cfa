"""One rule for what looks like a secret, used wherever a value could be shown or stored.

SageMaker refuses such ``--env`` values (a job's environment is visible in DescribeTrainingJob);
``local`` and ``mpi`` pass them to the ranks but mask them in ``--dry-run``, in the stored spec
(and so in ``GET runs``) and in ``%distributed config``: the name is shown, the value is not.

A value is masked by its name (``DB_PASS``, ``API_TOKEN``, ...) and, inside any text, by its
form (:func:`mask_text`): the password of a URL (``postgres://user:<redacted>@db``) and
``-x NAME=value`` in MPI options where ``NAME`` looks secret (``-x NCCL_DEBUG=INFO`` stays).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    # PASS and PWD as words of the name (DB_PASS, MY_PWD), PASSWORD/PASSWD anywhere (PGPASSWORD);
    # not BYPASS_CACHE or COMPASS
    r"SECRET|PASSW(OR)?D|(^|_)(PASS|PWD)($|_)|TOKEN|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH"
    r"|(^|_)KEY($|_)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"^(AKIA|ASIA)[A-Z0-9]{16}$|^-----BEGIN|^(ghp|gho|xox[bp]|sk)[-_]")
# scheme://user:password@host: the password ends at the last "@" before the path
_URL_PASSWORD = re.compile(r"(://[^/\s:@'\"\\]*:)[^/\s'\"\\]*@")
# mpirun's -x NAME=value (also -xNAME=value), the value bare or quoted
_MPI_EXPORT = re.compile(
    r"""(?<![\w-])(-x\s*)([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|"[^"]*"|[^\s'"\\]*)"""
)


def secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def looks_secret(name: str, value: str) -> bool:
    """True when the variable's name or its value looks like a credential."""
    return secret_name(name) or bool(_SECRET_VALUE.search(value))


def _export(match: re.Match[str]) -> str:
    flag, name, _value = match.groups()
    return f"{flag}{name}={REDACTED}" if secret_name(name) else match.group(0)


def mask_text(text: str) -> str:
    """``text`` with URL passwords and secret-named ``-x NAME=value`` values masked."""
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", text)
    if "-x" in text:
        text = _MPI_EXPORT.sub(_export, text)
    return text


def mask_json(value: Any) -> Any:
    """A copy of a JSON value with :func:`mask_text` applied to every string in it."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {k: mask_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_json(v) for v in value]
    return value


def redact_env(pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` pairs with secret-looking values replaced by :data:`REDACTED` (and a
    URL's password masked in the others)."""
    return tuple((k, REDACTED if looks_secret(k, v) else mask_text(v)) for k, v in pairs)
