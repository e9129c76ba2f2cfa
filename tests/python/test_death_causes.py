"""The witnesses of an out-of-memory kill, read from fake cgroup files (v1 and v2), and a death's
cause as data (its JSON round trip and how RunFailed shows it)."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

from jupyter_distributed.cluster.deaths import explain, oom_cause
from jupyter_distributed.errors import RankFailure, RunFailed
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import RankCoords
from jupyter_distributed.memcg import Counters, MemorySample, counters

NO_LOG = "/nonexistent/kmsg"  # the kernel log unreadable: the counters decide


def _v1(path: Path, oom_kill: int | None, failcnt: int, limit: int = 256 << 20) -> str:
    path.mkdir(exist_ok=True)
    oom = "oom_kill_disable 0\nunder_oom 0\n" + (
        f"oom_kill {oom_kill}\n" if oom_kill is not None else ""
    )
    (path / "memory.oom_control").write_text(oom)
    (path / "memory.failcnt").write_text(f"{failcnt}\n")
    (path / "memory.limit_in_bytes").write_text(f"{limit}\n")
    return str(path)


def _v2(path: Path, oom_kill: int, limit: str = "max") -> str:
    path.mkdir(exist_ok=True)
    (path / "memory.events").write_text(f"low 0\nhigh 0\nmax 3\noom 1\noom_kill {oom_kill}\n")
    (path / "memory.max").write_text(f"{limit}\n")
    return str(path)


def _info(memory: MemorySample | None, host: str = "") -> RankInfo:
    info = RankInfo(3, host or socket.gethostname(), 4242, "running", RankCoords(3, 3, 0, 3, 0, 0))
    info.memory = memory
    return info


def test_counters_of_v1_and_v2(tmp_path: Path) -> None:
    tmp = tmp_path
    assert counters(_v1(tmp / "a", 2, 7)) == Counters(256.0, 2, 7)
    assert counters(_v2(tmp / "b", 1, str(512 << 20))) == Counters(512.0, 1, None)
    assert counters(_v2(tmp / "c", 0)) == Counters(None, 0, None)  # "max": no limit of its own
    assert counters("") == Counters()


def test_a_grown_oom_kill_counter_is_an_oom_kill_and_an_unmoved_one_is_not(tmp_path: Path) -> None:
    def v1(n: int) -> str:
        return _v1(tmp_path / "v1", n, 0)

    def v2(n: int) -> str:
        return _v2(tmp_path / "v2", n)

    for make in (v1, v2):
        cgroup = make(0)
        sample = MemorySample(250.0, 256.0, cgroup, counters(cgroup))
        assert oom_cause(_info(sample), NO_LOG) == ""  # kill -9: nothing moved
        make(1)
        cause = oom_cause(_info(sample), NO_LOG)
        assert cause == "the out-of-memory killer (RSS 250 MiB of 256 MiB just before)"


def test_v1_without_the_counter_needs_failures_near_the_limit(tmp_path: Path) -> None:
    cgroup = _v1(tmp_path / "old", None, 5)
    near = MemorySample(240.0, 256.0, cgroup, counters(cgroup))
    far = MemorySample(20.0, 256.0, cgroup, counters(cgroup))
    _v1(tmp_path / "old", None, 9)
    assert oom_cause(_info(near), NO_LOG).startswith("the out-of-memory killer (RSS 240 MiB")
    assert oom_cause(_info(far), NO_LOG) == ""


def test_on_another_host_only_the_last_sample_speaks_and_says_probably() -> None:
    near = MemorySample(22 * 1024.0, 23.4 * 1024, "/sys/fs/cgroup/memory/x", Counters())
    cause = oom_cause(_info(near, host="elsewhere.invalid"), NO_LOG)
    assert cause == (
        "SIGKILL, probably from the out-of-memory killer (RSS 22.0 GiB of 23.4 GiB just before)"
    )
    far = MemorySample(2 * 1024.0, 23.4 * 1024, "", Counters())
    assert oom_cause(_info(far, host="elsewhere.invalid"), NO_LOG) == ""
    assert oom_cause(_info(None, host="elsewhere.invalid"), NO_LOG) == ""


def test_a_death_carries_its_cause_and_last_lines_through_json_and_shows_them(
    tmp_path: Path,
) -> None:
    cgroup = _v2(tmp_path / "cg", 0, str(23 << 30))
    info = _info(MemorySample(21.3 * 1024, 23 * 1024.0, cgroup, counters(cgroup)), host="vm")
    info.host = socket.gethostname()
    info.lines.extend(f"step {i}" for i in range(30))
    _v2(tmp_path / "cg", 1, str(23 << 30))
    died = RankFailure(3, 1.0, info.host, 4242, kind="exit", signal=signal.SIGKILL)
    failure = explain(died, info, "", "", NO_LOG)
    assert RankFailure.from_json(failure.to_json()) == failure
    assert failure.summary.endswith(
        "was killed by the out-of-memory killer (RSS 21.3 GiB of 23.0 GiB just before)"
    )
    assert failure.last_lines == tuple(f"step {i}" for i in range(10, 30))  # the last 20
    shown = RunFailed([failure])._render_traceback_()
    assert "last 20 line(s) of rank 3:" in shown and "  | step 29" in shown
    # a clean exit has no cause; older JSON (no new keys) still reads
    assert explain(RankFailure(3, 1.0, kind="exit", exit_code=0), info, "", "").last_lines == ()
    assert "cause" not in RankFailure(3, 1.0).to_json()
