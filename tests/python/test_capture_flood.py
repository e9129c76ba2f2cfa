"""A flood of prints leaves a rank in a few large batches (one message each), every line in
order; a line after a pause still goes at once. Run in a child process: the capture takes
over its file descriptors 1 and 2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    from jupyter_distributed.worker.capture import FdCapture

    batches = []
    cap = FdCapture(lambda stream, lines: batches.append((stream, time.monotonic(), lines)))
    cap.start()
    for i in range(20000):
        print(f"line {i}")
    cap.sync()
    time.sleep(0.05)
    flood = list(batches)
    batches.clear()
    printed = time.monotonic()
    print("after a pause")
    cap.sync()
    late = batches[0][1] - printed
    out = {
        "sizes": [len(lines) for _s, _t, lines in flood],
        "texts": [text for _s, _t, lines in flood for _t, text in lines],
        "late": late,
        "pause": [text for _s, _t, lines in batches for _t, text in lines],
    }
    os.write(cap.saved["stdout"], json.dumps(out).encode())
    """
)


def test_a_flood_leaves_in_few_batches_and_a_line_after_a_pause_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, timeout=60, check=True
    )
    got = json.loads(done.stdout)
    assert got["texts"] == [f"line {i}" for i in range(20000)]  # every line, in order
    assert len(got["sizes"]) < 20000 / 20  # batched: 20+ lines a message on average
    assert got["pause"] == ["after a pause"]
    assert got["late"] < 0.05  # not held back for a flood that is over
