"""Lines that are not quite text or not quite flags end in one line that says what to change:
lone surrogates, a flag given ``--`` as its value, numbers of thousands of digits, a quote
IPython splits differently, and a FIFO or ``/dev/zero`` given as a file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from .core_helpers import shell  # noqa: F401

HEX = "0x" + "f" * 4000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("-n 1 --env A=\ud800 --dry-run", "holds '\\\\ud800' at character 14"),
        ("-n 1 --push x\udc80y --dry-run", "holds '\\\\udc80' at character 14"),
        ("--nprocs=--", "--nprocs=-- gives --nprocs no value; write --nprocs VALUE"),
        ("-n-- --dry-run", "-n-- gives -n no value"),
        ("--nodes=-- --procs-per-node 2", "--nodes=-- gives --nodes no value"),
        (f"--sweep a={HEX} --dry-run", "integer of 4002 characters; at most 100 digits"),
        ("--sweep a=" + "9" * 5000 + ",1 --dry-run", "integer of 5000 characters"),
        ('--sweep="lr --quiet "x --dry-run', "No closing quotation"),
    ],
)
def test_odd_cell_lines_give_one_line_errors(shell: Any, line: str, message: str) -> None:  # noqa: F811
    with pytest.raises(UsageError, match=message) as refused:
        shell.run_cell_magic("distributed", line, "pass")
    assert "\n" not in str(refused.value)
    str(refused.value).encode()  # printable: the surrogate itself is never echoed


@pytest.mark.parametrize(
    "line",
    ["runs \ud800", "logs \udfff", "on -n 2 --env A=\ud800", "probe -n\udc80", "runs -n=--"],
)
def test_odd_line_commands_give_one_line_errors(shell: Any, line: str) -> None:  # noqa: F811
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("distributed", line)
    assert "\n" not in str(refused.value)
    str(refused.value).encode()


def test_a_quoted_sweep_of_a_long_number_is_text(shell: Any, capsys: Any) -> None:  # noqa: F811
    shell.run_cell_magic("distributed", f"--sweep a='{HEX}',1 --dry-run", "pass")
    assert "sweep:        2 combination(s)" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["fifo", "zero", "directory", "binary", "large"])
@pytest.mark.parametrize("flag", ["--hostfile", "--requirements"])
def test_a_file_flag_takes_only_a_small_text_file(
    shell: Any,  # noqa: F811
    tmp_path: Path,
    flag: str,
    kind: str,
) -> None:
    path = {"zero": Path("/dev/zero"), "directory": tmp_path}.get(kind, tmp_path / kind)
    if kind == "fifo":
        os.mkfifo(path)  # a reader waits for a writer that never comes
    elif kind == "binary":
        path.write_bytes(b"numpy\0\xff")
    elif kind == "large":
        path.write_bytes(b"# padding\n" * 200_000)
    backend = "mpi" if flag == "--hostfile" else "sagemaker"
    line = f"--backend {backend} {flag} {path} --dry-run"
    why = {"fifo": "not a regular file", "zero": "not a regular file"}
    why |= {"directory": "not a regular file", "binary": "not a text file", "large": "bytes"}
    with pytest.raises(UsageError, match=f"{flag} {path}: .*{why[kind]}") as refused:
        shell.run_cell_magic("distributed", line, "pass")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_packaging_a_job_never_reads_a_fifo_or_a_device(tmp_path: Path, kind: str) -> None:
    from jupyter_distributed.backends.sagemaker import package
    from jupyter_distributed.backends.sagemaker.options import SageMakerOptions
    from jupyter_distributed.errors import SpecError
    from jupyter_distributed.spec import Spec

    path = Path("/dev/zero") if kind == "zero" else tmp_path / "fifo"
    if kind == "fifo":
        os.mkfifo(path)
    spec = Spec(backend="sagemaker", options=SageMakerOptions())
    with pytest.raises(SpecError, match=f"--requirements {path}: not a regular file"):
        package.build(spec, "run-1", "pass", None, str(path))
