"""File descriptors: a cluster past the kernel's limit is refused in one line before anything
starts (with the ranks that fit), one past the soft limit starts once the limit is raised, and
no descriptor wait uses ``select()`` (which fails past descriptor 1024)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jupyter_distributed.worker.descriptors import readable

pytestmark = pytest.mark.timeout(180)

SOURCE = Path(__file__).parents[2] / "python" / "jupyter_distributed"

# A kernel started under `ulimit -n` (set before anything opens), running two cells.
KERNEL = """
import resource, sys
soft, hard, ranks = (int(a) for a in sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "jupyter_distributed")
if sys.argv[4:]:
    ip.run_line_magic("config", f"Distributed.relays = {sys.argv[4]!r}")
for word in ("first", "second"):
    ip.run_cell(f"%%distributed -n {ranks} --oversubscribe\\nprint('{word} cell')")
print("soft limit now", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def kernel(soft: int, hard: int, ranks: int, relays: str = "") -> tuple[str, str]:
    """Run the kernel above (with ``Distributed.relays`` set where given); (its output, a
    marker every process it started carries)."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(SOURCE.parent), "JD_TEST_MARKER": marker}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            KERNEL,
            str(soft),
            str(hard),
            str(ranks),
            *([relays] * bool(relays)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    return done.stdout + done.stderr, marker


def carrying(marker: str) -> list[int]:
    """Processes still alive whose environment holds ``marker`` (orphans of the kernel)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_cluster_past_the_hard_limit_is_refused_in_one_line_naming_the_ranks_that_fit() -> None:
    out, marker = kernel(64, 64, 40)
    refusals = [line for line in out.splitlines() if "file descriptors" in line]
    assert len(refusals) == 2, out  # one line per cell, and nothing else about it
    assert "Traceback" not in out
    assert "40 ranks need about" in refusals[0] and "hard limit of 64" in refusals[0]
    assert "ulimit -n" in refusals[0]
    fit = int(re.search(r"(\d+) rank\(s\) fit", refusals[0]).group(1))  # type: ignore[union-attr]
    assert "first cell" not in out and "second cell" not in out  # no rank ran
    assert carrying(marker) == []  # nothing was started, so nothing is left
    # the ranks said to fit do fit under that very limit, cell after cell
    out, marker = kernel(64, 64, fit)
    assert fit >= 4
    assert f"[ranks 0-{fit - 1}] first cell" in out and f"[ranks 0-{fit - 1}] second cell" in out
    assert "file descriptors" not in out
    assert carrying(marker) == []


def test_behind_a_relay_a_rank_costs_the_kernel_its_pidfd_alone() -> None:
    star, _ = kernel(64, 64, 40)
    out, marker = kernel(64, 64, 40, relays="always")
    fits = [int(m) for m in re.findall(r"(\d+) rank\(s\) fit", star + out)]
    assert len(fits) == 4, star + out  # (one refusal per cell, star and relayed)
    assert fits[2] >= 2 * fits[0]  # 1 descriptor a rank behind a relay, against 3 without
    assert carrying(marker) == []
    out, marker = kernel(64, 64, fits[2], relays="always")  # they fit, cell after cell
    ranks = f"[ranks 0-{fits[2] - 1}]"
    assert f"{ranks} first cell" in out and f"{ranks} second cell" in out, out
    assert "file descriptors" not in out
    assert carrying(marker) == []


def test_a_cluster_past_the_soft_limit_starts_once_it_is_raised_towards_the_hard_one() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"this machine's hard limit ({hard}) leaves no room to raise")
    out, marker = kernel(28, hard, 4)  # 4 ranks need about 40 descriptors in the kernel
    assert "[ranks 0-3] first cell" in out and "[ranks 0-3] second cell" in out, out
    raised = int(out.rsplit("soft limit now", 1)[1].split()[0])
    assert 28 < raised <= (hard if hard != resource.RLIM_INFINITY else raised)
    assert carrying(marker) == []


def test_no_descriptor_wait_uses_select() -> None:
    users = [
        f"{path.relative_to(SOURCE)}:{n}"
        for path in SOURCE.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"select\.select\(|SelectSelector|selectors\.DefaultSelector", line)
    ]
    assert users == []


def test_a_rank_waits_on_a_descriptor_numbered_past_1024() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1600 and (hard == resource.RLIM_INFINITY or hard >= 1600):
        resource.setrlimit(resource.RLIMIT_NOFILE, (1600, hard))
    elif soft < 1600:
        pytest.skip("a hard limit under 1600 descriptors")
    r, w = os.pipe()
    high = os.dup2(r, 1500)
    try:
        assert readable([high], 0.01) == []
        os.write(w, b"x")
        assert readable([high], 1.0) == [high]  # select() raised ValueError here
    finally:
        for fd in (r, w, high):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
