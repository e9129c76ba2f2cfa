"""Secrets are masked by value as well as by name: in what ``--dry-run`` and ``%distributed
config`` print, in the spec stored with each run and in what the server serves of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
from jupyter_distributed.layout import Layout
from jupyter_distributed.redact import mask_text, redact_env
from jupyter_distributed.spec import Spec
from jupyter_distributed.textviews import dry_run

from .core_helpers import shell  # noqa: F401
from .test_server_api import API, Fetch, jp_server_config, store_path  # noqa: F401

SECRETS = ("hunter2", "pw9", "tok123", "sk-9", "letmein")
MPI_OPTIONS = "-x TOKEN=tok123 -x NCCL_DEBUG=INFO"
ENV = "--env DB_PASS=hunter2 --env DATABASE_URL=postgres://user:pw9@db:5432/x --env MY_PWD=letmein"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgres://user:pw9@db:5432/x", "postgres://user:<redacted>@db:5432/x"),
        ("http://ak:sk-9@127.0.0.1:9/a@b", "http://ak:<redacted>@127.0.0.1:9/a@b"),
        ("http://127.0.0.1:8080/path@x", "http://127.0.0.1:8080/path@x"),
        (MPI_OPTIONS, "-x TOKEN=<redacted> -x NCCL_DEBUG=INFO"),
        ("-xDB_PASS='a b' -x PATH -x A=1", "-xDB_PASS=<redacted> -x PATH -x A=1"),
        ("--mca btl self -x HF_AUTH='x'", "--mca btl self -x HF_AUTH=<redacted>"),
    ],
)
def test_values_masked_by_form(text: str, shown: str) -> None:
    assert mask_text(text) == shown


def test_env_masked_by_name_and_by_value() -> None:
    pairs = [("DB_PASS", "hunter2"), ("MY_PWD", "x"), ("URL", "mysql://u:pw9@h/db")]
    pairs += [("NCCL_DEBUG", "INFO")]
    assert redact_env(pairs) == (
        ("DB_PASS", "<redacted>"),
        ("MY_PWD", "<redacted>"),
        ("URL", "mysql://u:<redacted>@h/db"),
        ("NCCL_DEBUG", "INFO"),
    )


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_mpi_dry_run_masks_env_urls_and_exported_secrets(shell: Any, capsys: Any) -> None:  # noqa: F811
    line = f"-n 2 --backend mpi {ENV} --mpi-options '{MPI_OPTIONS}' --dry-run"
    shell.run_cell_magic("distributed", line, "pass")
    out = capsys.readouterr().out
    _clean(out)
    assert "-x TOKEN=<redacted> -x NCCL_DEBUG=INFO" in out
    assert "DB_PASS=<redacted>" in out and "postgres://user:<redacted>@db:5432/x" in out


def test_sagemaker_dry_run_masks_custom_mpi_options_and_the_endpoint(shell: Any) -> None:  # noqa: F811
    options = SageMakerOptions(
        role="arn:aws:iam::123456789012:role/R",
        bucket="jd-bucket",
        region="us-west-2",
        framework_version="2.3",
        mpi_options=MPI_OPTIONS,
        endpoint_url="http://ak:sk-9@127.0.0.1:9",
    )
    spec = Spec(layout=Layout(procs_per_node=2), backend="sagemaker", options=options)
    out = dry_run(shell.user_ns["_jd_session"], spec)
    _clean(out)
    assert "NCCL_DEBUG=INFO" in out
    stored = json.dumps(spec.to_json())
    _clean(stored)
    assert "http://ak:<redacted>@127.0.0.1:9" in stored and "NCCL_DEBUG=INFO" in stored


def test_config_masks_what_it_shows(shell: Any, capsys: Any) -> None:  # noqa: F811
    shell.run_line_magic(
        "config", "DistributedSageMaker.endpoint_url = 'http://ak:sk-9@127.0.0.1:9'"
    )
    shell.run_line_magic("config", f"DistributedMPI.default_mpi_options = '{MPI_OPTIONS}'")
    try:
        shell.run_line_magic("distributed", "config")
        out = capsys.readouterr().out
    finally:
        shell.run_line_magic("config", "DistributedSageMaker.endpoint_url = ''")
        shell.run_line_magic("config", "DistributedMPI.default_mpi_options = ''")
    _clean(out)
    assert "'http://ak:<redacted>@127.0.0.1:9'" in out
    assert "'-x TOKEN=<redacted> -x NCCL_DEBUG=INFO'" in out


async def test_stored_and_served_runs_are_masked(
    shell: Any,  # noqa: F811
    jp_fetch: Fetch,
    store_path: Path,  # noqa: F811 (the server reads the shell's store file)
) -> None:
    line = f"-n 1 --backend mpi {ENV} --mpi-options '{MPI_OPTIONS}' --pull seen"
    code = "import os\nseen = os.environ['DATABASE_URL'] + os.environ['DB_PASS']"
    shell.run_cell_magic("distributed", line, code)
    assert shell.user_ns["seen"] == ["postgres://user:pw9@db:5432/xhunter2"]  # ranks get them
    run = shell.user_ns["_jd_session"].store.runs(limit=1)[0]
    _clean(json.dumps(run.spec))
    assert run.spec["options"]["mpi_options"] == "-x TOKEN=<redacted> -x NCCL_DEBUG=INFO"
    served = json.loads((await jp_fetch(*API, "runs", run.id)).body)["run"]
    _clean(json.dumps(served))
    assert served["spec"] == run.spec


def test_a_name_with_pass_inside_a_word_is_not_a_secret() -> None:
    from jupyter_distributed.redact import redact_env

    pairs = [("BYPASS_CACHE", "1"), ("COMPASS_DIR", "/x"), ("PGPASSWORD", "pw"), ("DB_PWD", "y")]
    assert redact_env(pairs) == (
        ("BYPASS_CACHE", "1"),
        ("COMPASS_DIR", "/x"),
        ("PGPASSWORD", "<redacted>"),
        ("DB_PWD", "<redacted>"),
    )
