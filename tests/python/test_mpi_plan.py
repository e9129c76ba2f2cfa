"""The mpi backend's pure parts: options, their merge, the mpirun line, mpirun's reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.backends.mpi.backend import MpiBackend
from jupyter_distributed.backends.mpi.log import MpirunLog
from jupyter_distributed.backends.mpi.options import (
    MpiOptions,
    default_options,
    merge_options,
    parse_hostfile,
    user_options,
)
from jupyter_distributed.errors import SpecError
from jupyter_distributed.layout import Layout
from jupyter_distributed.spec import Spec

DEFAULTS = [("--oversubscribe",), ("--bind-to", "none"), ("--mca", "btl", "self,vader,tcp")]


def test_merge_keeps_defaults_and_appends_user_options() -> None:
    merged = merge_options(DEFAULTS, user_options("--report-bindings -x FOO=1"))
    assert merged == [
        "--oversubscribe",
        "--bind-to",
        "none",
        "--mca",
        "btl",
        "self,vader,tcp",
        "--report-bindings",
        "-x",
        "FOO=1",
    ]


def test_merge_passes_a_repeated_default_once() -> None:
    merged = merge_options(DEFAULTS, user_options("--oversubscribe -oversubscribe"))
    assert merged.count("--oversubscribe") + merged.count("-oversubscribe") == 1


def test_merge_lets_the_user_value_replace_ours() -> None:
    merged = merge_options(DEFAULTS, user_options("--bind-to core -mca btl tcp,self"))
    assert merged == ["--oversubscribe", "--bind-to", "core", "-mca", "btl", "tcp,self"]


def test_merge_tells_mca_parameters_apart() -> None:
    merged = merge_options(DEFAULTS, user_options("--mca btl_tcp_if_include lo"))
    assert merged[-6:] == ["--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-np 4", "-np is set from your settings; use -n/--procs-per-node"),
        ("--host a,b", "use --hosts"),
        ("--hostfile f", "use --hostfile"),
        ("--mca btl", "--mca takes a name and a value"),
        ("stray --oversubscribe", "'stray' is not an option"),
        ("--mca btl 'tcp", "cannot split"),
    ],
)
def test_bad_user_options_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        MpiOptions(mpi_options=text)
    assert "\n" not in str(info.value)


def test_defaults_allow_root_only_as_root() -> None:
    assert ("--allow-run-as-root",) in default_options(True, 2)
    assert ("--allow-run-as-root",) not in default_options(False, 2)
    assert ("--map-by", "ppr:2:node") in default_options(False, 2)


def test_hostfile_is_read_in_order(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("# cluster\nnode-a slots=4\n\nnode-b   # second\n")
    assert parse_hostfile(str(path)) == ("node-a", "node-b")
    with pytest.raises(SpecError, match="cannot read"):
        parse_hostfile(str(tmp_path / "missing"))


@pytest.mark.parametrize(
    ("options", "nodes", "message"),
    [
        (MpiOptions(), 2, "--nodes 2 with --backend mpi needs the hosts"),
        (MpiOptions(hosts=("a",)), 2, "only 1 host"),
    ],
)
def test_plan_needs_a_host_per_node(options: MpiOptions, nodes: int, message: str) -> None:
    spec = Spec(layout=Layout(nodes=nodes, procs_per_node=1), backend="mpi", options=options)
    with pytest.raises(SpecError, match=message):
        MpiBackend().plan(spec)


def test_plan_renders_the_mpirun_line() -> None:
    options = MpiOptions(
        hosts=("10.0.0.1", "10.0.0.2", "10.0.0.3"), mpi_options="--mca btl tcp,self --oversubscribe"
    )
    spec = Spec(
        layout=Layout(nodes=2, procs_per_node=2),
        backend="mpi",
        options=options,
        env=(("MY_FLAG", "1"),),
    )
    plan = MpiBackend().plan(spec)
    command = list(plan.command)
    assert command[0] == "mpirun"
    assert command.count("--oversubscribe") == 1
    assert command[command.index("-np") + 1] == "4"
    assert command[command.index("--host") + 1] == "10.0.0.1:2,10.0.0.2:2"
    exported = {command[i + 1] for i, t in enumerate(command) if t == "-x"}
    assert {"JUPYTER_DISTRIBUTED_BOOTSTRAP", "JUPYTER_DISTRIBUTED_MPI", "MY_FLAG"} <= exported
    assert command[-2:] == ["-m", "jupyter_distributed.worker"]
    assert [r.host for r in plan.ranks] == ["10.0.0.1"] * 2 + ["10.0.0.2"] * 2
    text = plan.render()
    assert "command:      mpirun " in text and "node 1 (10.0.0.2)" in text


@pytest.mark.parametrize(
    ("mpi_options", "hosts", "local"),
    [
        ("", ["a", "a", "a", "b", "b", "b"], [0, 1, 2, 0, 1, 2]),
        ("--map-by slot", ["a", "a", "a", "b", "b", "b"], [0, 1, 2, 0, 1, 2]),
        ("--map-by node", ["a", "b", "a", "b", "a", "b"], [0, 0, 1, 1, 2, 2]),
        ("--map-by=node:PE=1", ["a", "b", "a", "b", "a", "b"], [0, 0, 1, 1, 2, 2]),
        ("--bynode", ["a", "b", "a", "b", "a", "b"], [0, 0, 1, 1, 2, 2]),
    ],
)
def test_each_rank_is_planned_on_the_host_its_map_by_puts_it(
    mpi_options: str, hosts: list[str], local: list[int]
) -> None:
    """A rank's host and relay follow mpirun's --map-by (node: dealt round the hosts)."""
    options = MpiOptions(hosts=("a", "b"), mpi_options=mpi_options)
    spec = Spec(layout=Layout(nodes=2, procs_per_node=3), backend="mpi", options=options)
    plan = MpiBackend().plan(spec)
    assert [r.host for r in plan.ranks] == hosts
    assert [r.coords.node_rank for r in plan.ranks] == [ord(h) - ord("a") for h in hosts]
    assert [r.coords.local_rank for r in plan.ranks] == local


@pytest.mark.parametrize(
    ("mpi_options", "message"),
    [
        ("--map-by core", "--map-by core does not say which host each rank is on"),
        ("--map-by ppr:1:node", "use node, slot or ppr:3:node"),
        ("--rank-by node", "--rank-by changes which host each rank is on"),
    ],
)
def test_a_placement_that_hides_the_host_is_one_line_error(mpi_options: str, message: str) -> None:
    options = MpiOptions(hosts=("a", "b"), mpi_options=mpi_options)
    spec = Spec(layout=Layout(nodes=2, procs_per_node=3), backend="mpi", options=options)
    with pytest.raises(SpecError, match=message):
        MpiBackend().plan(spec)
    one_host = Spec(layout=Layout(nodes=1, procs_per_node=3), backend="mpi",
                    options=MpiOptions(mpi_options=mpi_options))  # fmt: skip
    assert [r.coords.node_rank for r in MpiBackend().plan(one_host).ranks] == [0, 0, 0]


def test_dry_run_through_the_magic(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic(
        "distributed", '--backend mpi -n 2 --mpi-options "--bind-to core" --dry-run', "print(rank)"
    )
    out = capsys.readouterr().out
    assert "--bind-to core" in out and "--bind-to none" not in out and "-np 2" in out
    with pytest.raises(
        UsageError, match="--hosts applies to --backend mpi, not local; add --backend mpi or"
    ):
        shell.run_cell_magic("distributed", "-n 2 --hosts a,b", "pass")


def test_mpirun_log_names_the_first_dead_rank_and_keeps_rank_output() -> None:
    log = MpirunLog()
    for line in """[1,0]<stdout>:starting
[1,1]<stderr>:Traceback: oops
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[17029,1],1]
  Exit code:    3
--------------------------------------------------------------------------
mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed).
""".splitlines():
        log.feed(line + "\n")
    assert log.failures() == [(1, 3), (2, -9)]
    assert log.tail(1) == "Traceback: oops"
    assert log.tail(0) == "starting"
    assert "signal 9" in log.tail(None)


def test_hostfile_through_the_magic(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-a slots=2\nnode-b slots=2\nnode-c\n")
    line = f"--backend mpi --nodes 2 --procs-per-node 2 --hostfile {hostfile} --dry-run"
    shell.run_cell_magic("distributed", line, "pass")
    out = capsys.readouterr().out
    assert "--host node-a:2,node-b:2" in out and f"hostfile:     {hostfile}" in out
    with pytest.raises(UsageError, match="either --hosts or --hostfile"):
        shell.run_cell_magic("distributed", f"--backend mpi --hosts a --hostfile {hostfile}", "1")
