"""A rank's whole lines leave from the thread that prints them (issue 26: the cost we add to a
training step): once its output goes on a Unix cell socket, a print is handed on before it
returns, with no capture reader woken for it; anything still on its way through the pipe (a
partial line, what C code wrote) keeps its place, and a flood is still gathered into a few
messages. Run in a child process: the capture takes over its file descriptors 1 and 2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, os, sys, threading, time
    from jupyter_distributed.worker.capture import FdCapture

    got = []  # (stream, thread, texts)
    cap = FdCapture(
        lambda s, lines: got.append((s, threading.current_thread().name, [t for _, t in lines]))
    )
    cap.start()
    cap.direct()
    out = {}
    time.sleep(0.01)
    print("one line")
    out["at_once"] = list(got)  # handed on before print returned
    print("to stderr", file=sys.stderr)
    out["stderr"] = got[-1]
    time.sleep(0.01)
    got.clear()
    os.write(1, b"from C\\n")  # (on its way through the pipe)
    print("after C")
    sys.stdout.write("half ")
    sys.stdout.flush()
    print("and the rest")
    print("\\rredrawn")
    cap.sync()
    out["ordered"] = [t for s, _, texts in got if s == "stdout" for t in texts]
    time.sleep(0.01)
    got.clear()
    for i in range(20000):
        print(f"line {i}")
    cap.sync()
    out["flood"] = [len(texts) for _, _, texts in got]
    out["flood_texts"] = [t for _, _, texts in got for t in texts]
    os.write(cap.saved["stdout"], json.dumps(out).encode())
    """
)


def test_a_print_leaves_from_the_printing_thread_and_keeps_its_place() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, timeout=60, check=True
    )
    got = json.loads(done.stdout)
    assert got["at_once"] == [["stdout", "MainThread", ["one line"]]]
    assert got["stderr"] == ["stderr", "MainThread", ["to stderr"]]
    assert got["ordered"] == ["from C", "after C", "half and the rest", "\rredrawn"]
    assert got["flood_texts"] == [f"line {i}" for i in range(20000)]  # every line, in order
    assert len(got["flood"]) < 20000 / 20  # batched: 20+ lines a message on average
