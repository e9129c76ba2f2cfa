"""Fuzz the magic's line (issue 9 §6, issue 22): >= 10,000 generated lines, launching disabled.

Every line must end in a one-line UsageError (or a printed dry run): no other exception, no
traceback, no line slower than 3 s. The seed is fixed so a failure reproduces
(``JD_FUZZ_SEED`` and ``JD_FUZZ_LINES`` run another seed or more lines by hand). Values include
lone surrogates, ``--flag=--``, numbers of thousands of digits, and a FIFO and ``/dev/zero``
given to every file flag."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.session import Session

from .core_helpers import shell  # noqa: F401

SEED = int(os.environ.get("JD_FUZZ_SEED", "20261123"))
LINES = int(os.environ.get("JD_FUZZ_LINES", "10000"))

FLAGS = [
    "-n", "--nodes", "--procs-per-node", "--backend", "--strategy", "--partitions",
    "--microbatches", "--pipeline", "--placement", "--optimize", "--tensor-parallel",
    "--parameter-servers", "--push", "--pull", "--targets", "--timeout", "--env", "--quiet",
    "--hosts", "--hostfile", "--mpi-options", "--oversubscribe", "--instance-type", "--role",
    "--bucket", "--region", "--image", "--spot", "--max-wait", "--max-run", "--keep-alive",
    "--input", "--no-wait", "--smddp", "--job-name", "--bogus", "-x", "--sweep",
    "--sweep-parallel", "--quick", "--sizes", "--threshold", "--requirements", "--dry-run",
    "--display", "--display-max-mb", "--dist-backend", "--checkpoint-s3",
    "--framework-version", "--py-version", "--slurm-options", "--resources", "--time",
]  # fmt: skip
FILE_FLAGS = ["--hostfile", "--requirements"]
# past Python's 4300 digits; rare and not much longer: IPython's $-expansion of a line is
# quadratic in its length (0.2 s at 4,400 characters, 2 s at 20,000)
LONG_NUMBERS = [
    "0x" + "f" * 4000, "9" * 4400, "-" + "9" * 4400, "1e" + "9" * 400, "0b" + "1" * 4400,
    "lr=0x" + "f" * 4000, "a=" + "9" * 4400 + ",1", "0-" + "9" * 4400,
]  # fmt: skip
NUMBER_FLAGS = ["--sweep", "-n", "--targets", "--timeout", "--display", "--max-run", "--nodes"]
LINE_COMMANDS = [
    "status", "runs", "logs", "attach", "cancel", "release", "config", "probe", "compare",
    "nope", "",
]  # fmt: skip


def _value(rng: random.Random, hostile: list[str]) -> str:
    return rng.choice(
        [
            str(rng.randint(-5, 10)),
            str(rng.choice([2**31, 2**63, 2**64, 10**30, -(2**63)])),
            "9" * rng.choice([20, 40, 400]),  # IPython's $-expansion is quadratic in line length
            rng.choice(["1.5", "nan", "inf", "-inf", "1e400", "0"]),
            rng.choice(["local", "mpi", "sagemaker", "slurm", "", "ddp", "model-parallel"]),
            rng.choice(["lr=1e-3,1e-2", "lr=", "x=1,1", "class=1", "a=[1],{}", "1K-256M", "4Q"]),
            rng.choice(["0-100000000", "0,2-3", "5-1", "-", "0-", ",,,", "a-b"]),
            rng.choice(["A=1", "AWS_SECRET_ACCESS_KEY=x", "RANK=1", "=", "K"]),
            rng.choice(["undefined_name", "x,y", "1x", "class", "naïve"]),
            rng.choice(['"unbalanced', "'", '"--mca a"', "ünïcødé", "\u202e", "\x00"]),
            rng.choice(["\ud800", "A=\udfff", "x\udc80y", "lr=1,\ud83d", "--"]),
            rng.choice(hostile),
        ]
    )


def _line(rng: random.Random, hostile: list[str]) -> str:
    words = []
    for _ in range(rng.randint(0, 6)):
        flag = rng.choice(FLAGS)
        if rng.random() < 0.05:  # a file flag given something that is not a small text file
            words += [rng.choice(FILE_FLAGS), rng.choice(hostile)]
        elif rng.random() < 0.003:
            words += [rng.choice(NUMBER_FLAGS), rng.choice(LONG_NUMBERS)]
        elif rng.random() < 0.05:
            words.append(f"{flag}=--")
        elif rng.random() < 0.1:
            words.append(f"{flag}={_value(rng, hostile)}")
        else:
            words.append(flag)
            if rng.random() < 0.8:
                words.append(_value(rng, hostile))
    return " ".join(words)


class NoLaunch(Session):
    def run_cell(self, spec: Any, code: str, user_ns: Any, *args: Any, **kwargs: Any) -> Any:
        user_ns["_jd_probe"] = []  # launching disabled (a probe gets no measurements)
        return None

    def run_sweep(self, *args: Any, **kwargs: Any) -> Any:
        return None


@pytest.mark.timeout(120)
def test_ten_thousand_generated_lines_give_one_line_errors(
    shell: Any,  # noqa: F811
    tmp_path: Path,
    capsys: Any,
) -> None:
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened for reading, it waits for a writer that never comes
    hostile = [str(binary), str(tmp_path), "/dev/zero", "/nonexistent", str(tmp_path / ("x" * 300))]
    hostile += [str(fifo), "/dev/stdin", "/proc/self/fd/0"]
    magics = shell.magics_manager.registry["DistributedMagics"]
    real = magics.session
    magics.session = NoLaunch(real.store)
    rng = random.Random(SEED)  # noqa: S311 (a reproducible fuzz, not a secret)
    offenders: list[str] = []
    try:
        for i in range(LINES):
            line = _line(rng, hostile)
            cell = i % 4 != 0
            if not cell and rng.random() < 0.5:
                line = rng.choice(LINE_COMMANDS) + " " + line
            start = time.monotonic()
            try:
                if cell:
                    shell.run_cell_magic("distributed", line, "pass")
                elif line.split()[:1] not in (["attach"], ["cancel"], ["release"]):
                    shell.run_line_magic("distributed", line)
            except UsageError as exc:
                if "\n" in str(exc).strip():
                    offenders.append(f"multi-line error for {ascii(line)[:300]}: {exc}")
            except Exception as exc:  # noqa: BLE001 (an offender, whatever it is)
                offenders.append(f"{type(exc).__name__} for {ascii(line)[:300]}: {exc}")
            if time.monotonic() - start > 3:
                offenders.append(f"slow ({time.monotonic() - start:.1f}s): {ascii(line)[:300]}")
            capsys.readouterr()
    finally:
        magics.session = real
    print(f"{LINES} lines, seed {SEED}: {len(offenders)} offenders")  # (shown with -s)
    assert offenders == [], f"{len(offenders)} offenders, first: {offenders[:5]!a}"
