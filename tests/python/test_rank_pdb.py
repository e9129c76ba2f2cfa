"""pdb, input() and post-mortem on a rank, through a real kernel whose notebook answers stdin
(jupyter_client with ``allow_stdin``), as JupyterLab's input box does."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

pytestmark = pytest.mark.timeout(300)

Answer = Callable[[str], str | None]  # prompt -> the line typed (None: press stop instead)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelManager, Any]]:
    with started_kernel(tmp_path_factory.mktemp("pdb") / "history.sqlite3") as pair:
        yield pair


@contextmanager
def started_kernel(store: Path) -> Iterator[tuple[KernelManager, Any]]:
    """A kernel with the extension loaded (in this thread's network namespace and with the
    process's environment, so an engine's fixture decides where its ranks go)."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, "JUPYTER_DISTRIBUTED_STORE": str(store)})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    reply = kc.execute_interactive("%load_ext jupyter_distributed", timeout=60)
    assert reply["content"]["status"] == "ok"
    try:
        yield km, kc
    finally:
        kc.execute_interactive("%distributed stop", timeout=60)
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _run(
    kernel: tuple[KernelManager, BlockingKernelClient],
    code: str,
    answers: list[str | None] | None = None,
    think: float = 0.0,
) -> tuple[dict[str, Any], list[str], str]:
    """Execute ``code``; answer each input request with the next of ``answers`` (None:
    interrupt the kernel, as the stop button does) after ``think`` seconds. Returns the
    reply's content, the prompts and the text shown."""
    km, kc = kernel
    prompts: list[str] = []
    shown: list[str] = []
    queue = list(answers or [])

    def on_stdin(msg: dict[str, Any]) -> None:
        prompts.append(msg["content"]["prompt"])
        time.sleep(think)  # (the user reading the prompt)
        answer = queue.pop(0) if queue else "c"
        if answer is None:
            km.interrupt_kernel()
        else:
            kc.input(answer)

    def on_output(msg: dict[str, Any]) -> None:
        content = msg["content"]
        shown.append(content.get("text", "") or str(content.get("data", {}).get("text/plain", "")))
        if msg["msg_type"] == "error":
            shown.append(" ".join([content["ename"], content["evalue"], *content["traceback"]]))

    reply = kc.execute_interactive(
        code,
        allow_stdin=answers is not None,
        stdin_hook=on_stdin,
        output_hook=on_output,
        timeout=120,
    )
    return reply["content"], prompts, "".join(shown)


CELL = "%%distributed -n 2\n"
BREAK_ON_1 = "x = rank * 10 + 1\nif rank == 1:\n    breakpoint()\ny = x + 1\nprint('done', y)\n"


@pytest.mark.parametrize(
    "cell",
    [
        pytest.param(CELL, id="local"),
        pytest.param(
            "%%distributed -n 2 --backend mpi\n",
            id="mpi",
            marks=pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun"),
        ),
    ],
)
def test_breakpoint_on_rank_1_prompts_in_the_notebook(kernel: Any, cell: str) -> None:
    code = cell + BREAK_ON_1
    reply, prompts, text = _run(kernel, code, ["p x", "c"])
    assert reply["status"] == "ok", text
    assert prompts == ["(Pdb rank 1) ", "(Pdb rank 1) "]
    assert "[rank 1] 11" in text  # p x: rank 1's x, tagged with its rank
    assert "[rank 0] done 2" in text and "[rank 1] done 12" in text


def test_pdb_steps_into_a_function_called_by_the_cell(kernel: Any) -> None:
    code = CELL + (
        "def f(a):\n    breakpoint()\n    b = a * 2\n    return b\n"
        "if rank == 0:\n    print('f', f(3))\n"
    )
    reply, prompts, text = _run(kernel, code, ["n", "p b", "w", "u", "p rank", "d", "c"])
    assert reply["status"] == "ok", text
    assert len(prompts) == 7 and set(prompts) == {"(Pdb rank 0) "}
    assert "[rank 0] 6" in text  # after n: b = 3 * 2
    assert "<module>()" in text and "f()" in text  # w: the cell's frame, then f
    assert "runtime.py" not in text  # (from the cell up: not the rank's own frames)
    assert "[rank 0] 0" in text  # u: the cell's frame, where rank is 0
    assert "[rank 0] f 6" in text


def test_two_ranks_at_a_breakpoint_are_served_in_turn(kernel: Any) -> None:
    code = CELL + "breakpoint()\nz = rank\n"
    reply, prompts, text = _run(kernel, code, ["n", "p z", "c", "n", "p z", "c"])
    assert reply["status"] == "ok", text
    assert len(prompts) == 6
    first, second = prompts[0], prompts[3]
    assert {first, second} == {"(Pdb rank 0) ", "(Pdb rank 1) "}
    assert prompts == [first] * 3 + [second] * 3  # one rank until it continues, then the other
    assert "[rank 0] 0" in text and "[rank 1] 1" in text


def test_the_stop_button_at_a_pdb_prompt_frees_the_kernel_and_keeps_variables(
    kernel: Any,
) -> None:
    code = CELL + "kept = rank + 100\nif rank == 1:\n    breakpoint()\n    kept = -1\n"
    reply, prompts, text = _run(kernel, code, [None])
    assert prompts == ["(Pdb rank 1) "]
    assert reply["status"] == "error" and "interrupted" in text, text
    assert "terminating the cluster" not in text  # it left pdb: no kill after the grace
    reply, _, text = _run(kernel, CELL + "print('kept', kept)\n")
    assert reply["status"] == "ok", text
    assert "[rank 1] kept 101" in text and "[rank 0] kept 100" in text


def test_debug_opens_pdb_on_the_last_exception_of_a_rank(kernel: Any) -> None:
    code = CELL + "saved = [rank]\ndef f(a):\n    b = a - rank\n    return a / b\nf(1)\n"
    reply, _, text = _run(kernel, code)
    assert reply["status"] == "error" and "ZeroDivisionError" in text
    reply, prompts, text = _run(
        kernel, "%distributed debug --rank 1", ["p sorted(locals().items())", "u", "p saved", "q"]
    )
    assert reply["status"] == "ok", text
    assert prompts == ["(Pdb rank 1) "] * 4
    assert "[rank 1] [('a', 1), ('b', 0)]" in text  # f's frame, with its locals
    assert "[rank 1] [1]" in text  # u: the cell's frame, where saved lives


def test_debug_defaults_to_the_root_cause_and_says_when_nothing_failed(kernel: Any) -> None:
    code = CELL + "if rank == 1:\n    w = 5\n    1 / 0\n"
    _run(kernel, code)
    reply, prompts, text = _run(kernel, "%distributed debug", ["p w", "q"])
    assert prompts == ["(Pdb rank 1) "] * 2 and "[rank 1] 5" in text
    _run(kernel, CELL + "pass\n")
    reply, prompts, text = _run(kernel, "%distributed debug", [])
    assert reply["status"] == "ok"
    assert prompts == [] and "no exception to debug" in text


def test_input_on_a_rank_asks_the_notebook_or_says_it_has_no_stdin(kernel: Any) -> None:
    code = CELL + "if rank == 0:\n    name = input('name? ')\n    print('hi', name)\n"
    reply, prompts, text = _run(kernel, code, ["bob"])
    assert reply["status"] == "ok", text
    assert prompts == ["[rank 0] name? "]
    assert "[rank 0] hi bob" in text
    reply, prompts, text = _run(kernel, code)  # (allow_stdin false, as nbclient)
    assert reply["status"] == "error" and prompts == []
    assert "ranks have no stdin" in text


def test_break_stops_a_rank_at_the_first_line_of_the_cell(kernel: Any) -> None:
    code = "%%distributed -n 2 --break 1\nfirst = rank\nsecond = first + 1\n"
    reply, prompts, text = _run(kernel, code, ["p 'first' in dir()", "n", "p first", "c"])
    assert reply["status"] == "ok", text
    assert prompts == ["(Pdb rank 1) "] * 4
    assert "[rank 1] False" in text and "[rank 1] 1" in text


def test_timeout_does_not_count_the_time_at_a_pdb_prompt(kernel: Any) -> None:
    # (each rank's own line: this test is about --timeout, not collapsed output)
    code = "%%distributed -n 2 --timeout 3\nif rank == 1:\n    breakpoint()\nprint('end', rank)\n"
    reply, prompts, text = _run(kernel, code, ["c"], think=4)  # longer than --timeout
    assert reply["status"] == "ok", text
    assert prompts == ["(Pdb rank 1) "] and "[rank 1] end 1" in text
