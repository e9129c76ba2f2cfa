"""A real Slurm cluster for the tests: munged, slurmctld and two ``slurmd -N`` nodes on
127.0.0.1, in a network namespace of its own, every file in one temporary directory.

Partitions: ``debug`` (node1, node2; the default) and ``one`` (node2 only, so a test can fill
it and see a job queue). Daemons are stopped by PID; ``SLURM_CONF`` points at our slurm.conf.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from .netns import NetNs
from .netns import missing as netns_missing

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scontrol", "squeue", "scancel")
NODES = ("node1", "node2")
CPUS = 4

CONF = """\
ClusterName=jdtest
SlurmctldHost={host}(127.0.0.1)
MailProg=/bin/true
SlurmctldPort={ctld_port}
SlurmdPort={node_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge/munge.socket.2
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool-%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MessageTimeout=5
{nodes}
PartitionName=debug Nodes={all} Default=YES MaxTime=INFINITE State=UP
PartitionName=one Nodes={last} MaxTime=INFINITE State=UP
"""


def missing() -> str:
    """Why a Slurm cluster cannot run here; empty when it can."""
    for tool in DAEMONS:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    return netns_missing()


class SlurmCluster:
    def __init__(self, root: Path, nodes: int = len(NODES)) -> None:
        """``nodes`` ``slurmd -N`` daemons (node1, node2, ..): two for the tests, more for
        ``benchmarks/bench_slurm_nodes.py``."""
        self.dir = root
        self.nodes = tuple(f"node{i + 1}" for i in range(nodes))
        self.ns = NetNs("slurm", veth=True)
        self.procs: list[subprocess.Popen[bytes]] = []
        try:
            self._configure()
            self._start()
        except BaseException:
            self.stop()
            raise

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def _configure(self) -> None:
        d = self.dir
        d.chmod(0o755)  # munged checks every directory above its socket
        (d / "munge").mkdir(mode=0o755)
        (d / "munge-key").mkdir(mode=0o700)
        (d / "state").mkdir()
        key = d / "munge-key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        nodes = "\n".join(
            f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n} Port={17101 + i} "
            f"CPUs={CPUS} State=UNKNOWN"
            for i, n in enumerate(self.nodes)
        )
        self.conf = d / "slurm.conf"
        self.conf.write_text(
            CONF.format(
                dir=d,
                host=socket.gethostname(),
                ctld_port=17100,
                node_port=17101,
                nodes=nodes,
                all=",".join(self.nodes),
                last=self.nodes[-1],
            )
        )

    def _spawn(self, *argv: str, log: str) -> subprocess.Popen[bytes]:
        with (self.dir / log).open("ab") as out:
            proc = subprocess.Popen(
                self.ns.command(*argv),
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def _start(self) -> None:
        d = self.dir
        self._spawn(
            "munged",
            "-F",
            "--force",
            f"--socket={d}/munge/munge.socket.2",
            f"--key-file={d}/munge-key/munge.key",
            f"--pid-file={d}/munge/munged.pid",
            f"--log-file={d}/munged.log",
            f"--seed-file={d}/munge/munged.seed",
            log="munged.out",
        )
        self._wait(lambda: (d / "munge" / "munge.socket.2").exists(), "munged")
        self._spawn("slurmctld", "-D", "-i", "-f", str(self.conf), log="slurmctld.out")
        for name in self.nodes:
            self._spawn("slurmd", "-D", "-N", name, "-f", str(self.conf), log=f"slurmd-{name}.out")
        self._wait(self._nodes_idle, "the slurmd nodes", 30.0 + len(self.nodes))

    def _nodes_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
        states = dict(line.split() for line in out.splitlines() if line.strip())
        return all(states.get(n, "").startswith("idle") for n in self.nodes)

    def _wait(self, ready: object, what: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if ready():  # type: ignore[operator]
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.1)
        logs = {p.name: p.read_text()[-600:] for p in self.dir.glob("*.log")}
        logs.update({p.name: p.read_text()[-600:] for p in self.dir.glob("*.out")})
        raise RuntimeError(f"{what} did not come up: {logs}")

    def jobs(self) -> list[str]:
        """``JOBID STATE REASON`` of every job Slurm still knows as pending or running."""
        out = self.run("squeue", "-h", "-o", "%i %T %r", check=False).stdout
        return [line for line in out.splitlines() if line.strip()]

    def wait_idle(self, within: float = 15.0) -> None:
        """Until no job is left and both nodes are idle again."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and (self.jobs() or not self._nodes_idle()):
            time.sleep(0.1)

    def task_pids(self) -> set[int]:
        """Processes started as tasks of this cluster's jobs (their environment says so)."""
        mine = f"SLURM_CONF={self.conf}".encode()
        pids = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mine in environ and any(v.startswith(b"SLURM_PROCID=") for v in environ):
                pids.add(int(entry.name))
        return pids

    def relay_pids(self, module: str = "relay") -> set[int]:
        """The node relays among :meth:`task_pids` (the tasks of a cluster's second step);
        ``module`` "aggregator": the aggregators (a third step's)."""
        out = set()
        for pid in self.task_pids():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[1:3] == [b"-m", f"jupyter_distributed.cluster.{module}".encode()]:
                out.add(pid)
        return out

    def rank_pids(self) -> set[int]:
        """The ranks: :meth:`task_pids` less each rank's guardian (its child) and the relays."""
        pids = self.task_pids() - self.relay_pids() - self.relay_pids("aggregator")
        parents = {}
        for pid in pids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        return {p for p in pids if parents.get(p) not in pids}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm client command in the cluster's namespace."""
        return subprocess.run(
            self.ns.command(*argv),
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=check,
            timeout=30,
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.ns.delete()
