"""Backends own their flags; settings come from traitlets; bounds and secrets (issues 8 and 9)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from jupyter_client.manager import KernelManager

from jupyter_distributed.backends import followable, plugins

from .core_helpers import shell  # noqa: F401

pytestmark = pytest.mark.timeout(120)


def test_flags_of_another_backend_are_refused_in_one_line(shell: Any) -> None:  # noqa: F811
    with pytest.raises(UsageError) as refused:
        shell.run_cell_magic(
            "distributed", "-n 2 --instance-type ml.p3.2xlarge --spot --max-wait 5", "pass"
        )
    message = str(refused.value)
    assert "\n" not in message
    assert "--instance-type, --spot, --max-wait apply to --backend sagemaker, not local" in message


def test_every_backend_flag_comes_from_its_options_and_is_in_the_help(shell: Any) -> None:  # noqa: F811
    doc = shell.find_cell_magic("distributed").__doc__ or ""
    for plugin in plugins():
        for flag in plugin.flags():
            assert flag.flag in doc, (plugin.name, flag.flag)
        for command in plugin.commands:
            assert command.usage in doc
    assert followable() == {"sagemaker"}


def test_config_magic_changes_the_cap_and_config_line_shows_where(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    shell.run_line_magic("config", "Distributed.max_world_size = 3")
    try:
        with pytest.raises(UsageError, match="world size 4 is over the cap of 3"):
            shell.run_cell_magic("distributed", "-n 4 --dry-run", "pass")
        shell.run_line_magic("distributed", "config")
        out = capsys.readouterr().out
        assert "Distributed.max_world_size" in out and "3  (config" in out
        assert "DistributedSageMaker.role" in out
    finally:
        shell.run_line_magic("config", "Distributed.max_world_size = 1024")


def test_a_changed_setting_reaches_the_next_run_of_the_same_line(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    """The spec of a line is kept between runs of a cell, never past a change of settings."""
    shell.run_line_magic("config", "Distributed.nprocs = 2")
    try:
        shell.run_cell_magic("distributed", "--dry-run", "pass")
        assert "world size:   2 =" in capsys.readouterr().out
        shell.run_line_magic("config", "Distributed.nprocs = 3")
        shell.run_cell_magic("distributed", "--dry-run", "pass")
        assert "world size:   3 =" in capsys.readouterr().out
        shell.run_line_magic("config", "Distributed.max_world_size = 2")
        with pytest.raises(UsageError, match="world size 3 is over the cap of 2"):
            shell.run_cell_magic("distributed", "--dry-run", "pass")
    finally:
        shell.run_line_magic("config", "Distributed.max_world_size = 1024")
        shell.run_line_magic("config", "Distributed.nprocs = 2")


def test_environment_fallback_and_secrets_are_never_printed(
    shell: Any,  # noqa: F811
    capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jupyter_distributed.settings import Distributed

    monkeypatch.setenv("JUPYTER_DISTRIBUTED_MAX_WORLD_SIZE", "5")
    settings = Distributed()
    assert settings.max_world_size == 5
    assert (
        "Distributed.max_world_size",
        "5",
        "environment JUPYTER_DISTRIBUTED_MAX_WORLD_SIZE",
    ) in (settings.sources())


def test_secret_env_is_masked_in_dry_run_and_store_but_ranks_get_it(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    line = "-n 1 --env AWS_SECRET_ACCESS_KEY=s3cr3t-value --env API_TOKEN=tok --env PLAIN=ok"
    shell.run_cell_magic("distributed", line + " --dry-run", "pass")
    out = capsys.readouterr().out
    assert "s3cr3t-value" not in out and "tok " not in out
    assert "AWS_SECRET_ACCESS_KEY=<redacted>" in out and "PLAIN=ok" in out
    shell.run_cell_magic(
        "distributed",
        line + " --pull seen",
        "import os\nseen = os.environ['AWS_SECRET_ACCESS_KEY']",
    )
    assert shell.user_ns["seen"] == ["s3cr3t-value"]
    store = shell.user_ns["_jd_session"].store
    run = store.runs(limit=1)[0]
    assert "s3cr3t-value" not in json.dumps(run.spec)
    assert ["AWS_SECRET_ACCESS_KEY", "<redacted>"] in run.spec["env"]
    assert ["PLAIN", "ok"] in run.spec["env"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("-n 10000000 --dry-run", "over the cap of 1024"),
        ("-n 2 --targets 0-100000000 --dry-run", "rank 100000000 does not exist"),
        ("-n 2 --targets 99999999999999999999999 --dry-run", "does not exist"),
        ("-n 99999999999999999999 --dry-run", "argument -n/--nprocs"),
        ("-n 2 --mpi-options '--bind-to", "No closing quotation"),
        ("-n 600 --dry-run", "add --oversubscribe"),
        ("-n 2 --timeout nan --dry-run", "--timeout"),
    ],
)
def test_bounds_give_one_line_errors(shell: Any, line: str, message: str) -> None:  # noqa: F811
    if "600" in line and (os.cpu_count() or 1) * 4 >= 600:
        pytest.skip("this machine has cores for 600 ranks")
    with pytest.raises(UsageError, match=message) as refused:
        shell.run_cell_magic("distributed", line, "pass")
    assert "\n" not in str(refused.value)


def test_oversubscribe_and_large_dry_runs_are_summarised(shell: Any, capsys: Any) -> None:  # noqa: F811
    shell.run_cell_magic(
        "distributed", "--nodes 4 --procs-per-node 200 --oversubscribe --dry-run", "pass"
    )
    out = capsys.readouterr().out
    assert "world size:   800" in out
    assert out.count("\n") < 80 and "more rank(s)" in out


def test_hostfile_must_be_a_small_regular_text_file(shell: Any, tmp_path: Path) -> None:  # noqa: F811
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)))
    big = tmp_path / "big"
    big.write_text("host\n" * 300_000)
    for path, message in (
        (binary, "not a text file"),
        (big, "bytes; a hostfile lists host names"),
        (tmp_path, "not a regular file"),
    ):
        with pytest.raises(UsageError, match=message):
            shell.run_cell_magic("distributed", f"--backend mpi -n 1 --hostfile {path}", "pass")


def test_line_magic_integers_are_bounded(shell: Any) -> None:  # noqa: F811
    for line in ("runs -n -5", "runs -n 0", f"logs x --rank {2**64}", "logs x --rank -1"):
        with pytest.raises(UsageError):
            shell.run_line_magic("distributed", line)


def test_pickling_that_raises_system_exit_does_not_escape_push(shell: Any) -> None:  # noqa: F811
    class Exiting:
        def __reduce__(self) -> Any:
            raise SystemExit(3)

    shell.user_ns["bad"] = Exiting()
    with pytest.raises(UsageError, match="cannot send 'bad' to the ranks: SystemExit"):
        shell.run_cell_magic("distributed", "-n 1 --push bad", "pass")


def _kernel_output(env: dict[str, str], code: str) -> str:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env)
    try:
        client = km.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        texts: list[str] = []

        def keep(msg: dict[str, Any]) -> None:
            content = msg["content"]
            texts.append(content.get("text", "") + content.get("evalue", ""))

        client.execute_interactive(code, timeout=60, output_hook=keep)
        client.stop_channels()
        return "".join(texts)
    finally:
        km.shutdown_kernel(now=True)


def test_a_trait_in_ipython_config_takes_effect_in_a_real_kernel(tmp_path: Path) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(
        "c.Distributed.max_world_size = 3\nc.DistributedMPI.mpirun = 'my-mpirun'\n"
    )
    env = {
        **os.environ,
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    out = _kernel_output(
        env,
        "%load_ext jupyter_distributed\n"
        "try:\n"
        "    get_ipython().run_cell_magic('distributed', '-n 4 --dry-run', 'pass')\n"
        "except Exception as e:\n"
        "    print('refused:', e)\n"
        "get_ipython().run_cell_magic('distributed', '--backend mpi -n 2 --dry-run', 'pass')\n",
    )
    assert "refused: world size 4 is over the cap of 3" in out
    assert "command:      my-mpirun " in out


async def test_a_server_trait_sets_the_history_path(jp_serverapp: Any, tmp_path: Path) -> None:
    from jupyter_distributed.server.handlers import SETTINGS_KEY

    history = jp_serverapp.web_app.settings[SETTINGS_KEY]["history"]
    assert Path(history.store.path) == tmp_path / "configured.sqlite3"


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_distributed": True}},
        "Distributed": {"store_path": str(tmp_path / "configured.sqlite3")},
    }


def test_interrupt_grace_setting_decides_when_a_stuck_rank_is_killed(
    shell: Any,  # noqa: F811
    capsys: Any,
) -> None:
    """A rank that ignores the interrupt is killed after ``Distributed.interrupt_grace``."""
    shell.run_line_magic("config", "Distributed.interrupt_grace = 0.5")
    try:
        res = shell.run_cell(
            "%%distributed -n 2 --timeout 1\n"
            "import signal, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "time.sleep(30)\n"
        )
        assert not res.success
        err = capsys.readouterr().err
        assert "did not stop within 0.5s" in err, err
    finally:
        shell.run_line_magic("config", "Distributed.interrupt_grace = 2.0")
