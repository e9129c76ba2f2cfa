"""Entry point of a rank: connect to the kernel, set up, then execute cells until told to stop."""

from __future__ import annotations

if __name__ == "__main__":  # (the rank's process, not the fork server's child: see guard.py)
    from ..pids import die_with_parent as _die_with_parent
    from .guard import guard_group as _guard_group

    _die_with_parent()
    _guard_group()  # before the imports below: the guardian is a small copy of this process

import atexit
import dataclasses
import json
import os
import signal
import socket
import sys
import time
from typing import Any

from ..layout import Layout
from ..pids import die_with_parent, pid_alive
from ..protocol.commands import Shutdown, StackRequest
from ..protocol.header import Message
from ..protocol.reports import Heartbeat, Hello, Live, Stacks, Stage
from ..protocol.signing import BOOTSTRAP_ENV, Buffer, Signer, cell_name, rank_name
from ..protocol.stacks import left_file
from .capture import FdCapture
from .cellsocket import CellSocket
from .channel import Channel
from .debugger import Asker, Debugger
from .descriptors import make_room
from .guard import end_descendants, guard_group, leave_leftovers, note_busy, note_idle, settled
from .leave import leave
from .mpi import MpiSetupError, setup_comm
from .rankenv import RankEnv
from .report import ChannelReporter
from .runtime import Runtime
from .sampler import GPU, memory_sample
from .slurm import export_master_addr
from .stacks import (
    current_stacks,
    flight_summary,
    install_crash,
    install_dump,
    on_stage,
    remove_files,
    set_stage,
    stage,
)
from .strategies import StrategyError, setup

_exit = os._exit  # (Python's own: see FdCapture.hand_on_at_exit)
EXIT_CLOSE = 1.0  # seconds at most that os._exit in a cell waits for the channel to send

# seconds a cell's running state is held back before the I/O thread's next look sends it: a
# cell that ends first says it ran with its end (one message, not two)
STATE_AFTER = 0.02
# seconds between two sends of report() samples by the I/O thread: at 0.1 s, half the samples of
# a loop that prints every 0.2 s left alone, each a store transaction (issue 26); the panel's
# update p95 stays within 1 s
SAMPLES_EVERY = 0.2
BEAT = 1.0  # seconds between heartbeats, idle or not (the kernel's liveness and memory picture)
REST_AFTER = 1.0  # seconds without a cell, a held-back state or samples before the I/O rests
# a cell that has run QUIET_AFTER seconds, holds nothing back and has shown no text without a
# newline for QUIET_AFTER: the I/O thread looks every QUIET_EVERY, not every 100 ms (a training
# step on a busy core pays for each wake-up; a print without a newline still shows within it)
QUIET_AFTER = 1.0
QUIET_EVERY = 0.5


class _Ticker:
    """Periodic work on the channel's I/O thread: metrics, heartbeats, orphan checks. As a cell
    starts, every 100 ms; once it has run quietly for a while (:meth:`_quiet`), when samples are
    due or every ``QUIET_EVERY``; once the rank has had nothing to do for ``REST_AFTER``, only
    at each heartbeat (:meth:`Channel.rest`): an idle rank's I/O thread wakes once a second, not
    ten times."""

    def __init__(self, boot: dict[str, Any]) -> None:
        self.runtime: Runtime | None = None
        self.kernel_pid = int(boot.get("kernel_pid") or 0)
        self.same_host = boot.get("kernel_host") == socket.gethostname()
        self.last_metrics = self.last_beat = self.last_busy = 0.0
        self.cpu = (time.monotonic(), sum(os.times()[:2]))
        self.channel: Channel | None = None
        self.capture: FdCapture | None = None

    def __call__(self) -> None:
        if self.runtime is None or self.channel is None:
            return
        if self.capture is not None:  # (a print without a newline: shown within a look)
            self.capture.flush()
        self.channel.flush_later(STATE_AFTER)
        now = time.monotonic()
        # samples every SAMPLES_EVERY, unless lines took them along meanwhile (worker/report.py)
        if now - max(self.last_metrics, self.runtime.flushed) >= SAMPLES_EVERY - 0.01:
            self.last_metrics = now
            self.runtime.flush_metrics()
        if self.runtime.in_cell or self.runtime.samples or self.channel.holding():
            self.last_busy = now
        if now - self.last_beat >= BEAT - 0.01:  # (a rest's wait may end a little early)
            self.last_beat = _next_beat(now) - BEAT
            if self.same_host and self.kernel_pid and not pid_alive(self.kernel_pid):
                _exit(0)
            wall0, cpu0 = self.cpu
            cpu = sum(os.times()[:2])
            self.cpu = (now, cpu)
            percent = 100.0 * (cpu - cpu0) / max(now - wall0, 1e-6)
            gpu = GPU.sample(self.runtime.gpu_device)
            memory = memory_sample()
            self.channel.send(
                Heartbeat(
                    self.runtime.run_id, time.time(), round(percent, 1), memory.pop("rss_mb"),
                    gpu.get("gpu_util"), gpu.get("gpu_mem_mb"), **memory,
                )
            )  # fmt: skip
        resting = now - self.last_busy >= REST_AFTER
        beat = max(0.0, self.last_beat + BEAT - now)
        self.channel.rest(beat if resting else self._quiet(self.runtime, self.channel, now, beat))
        if resting:  # (the guardian may sleep too, where nothing of the user's runs)
            runtime = self.runtime
            note_idle(REST_AFTER, lambda: runtime.in_cell)

    def _quiet(self, runtime: Runtime, channel: Channel, now: float, beat: float) -> float | None:
        """In a running cell with nothing pending but samples, in how many seconds the next
        look is due (the next samples', a heartbeat, at most ``QUIET_EVERY``); None: 100 ms."""
        shown = self.capture.partial_at if self.capture is not None else 0.0
        if (
            not runtime.in_cell
            or channel.holding()
            or now - max(runtime.cell_started, shown) < QUIET_AFTER
        ):
            return None
        due = min(beat, QUIET_EVERY)
        if runtime.samples:
            due = min(due, max(self.last_metrics, runtime.flushed) + SAMPLES_EVERY - now)
        return max(0.0, due)


def _next_beat(now: float) -> float:
    """(monotonic, from ``now``) When the heartbeat after one sent now is due: on a whole BEAT
    of the wall clock, at least half a BEAT on. A host's ranks thus beat together, and their
    kernel (or relay) wakes fewer times for them than once for each (an idle local cluster of 8
    ranks: the kernel's I/O thread ~6.6 wake-ups a second, not ~8.5; issue 26)."""
    left = BEAT - time.time() % BEAT
    return now + (left if left >= BEAT / 2 else left + BEAT)


def _kernel_address(
    boot: dict[str, Any], rank: int
) -> tuple[str, str | None, dict[str, str] | None]:
    """Where this rank's two connections go, and the CurveZMQ keys they use: its node's relay
    where the cluster has relays (both over ZeroMQ, see ``cluster/relay.py``; a Unix socket on
    this host in a directory of mode 0700, so without CurveZMQ, which the relay uses upward),
    else the kernel's address and cell socket (CurveZMQ where the kernel is over TCP). Its
    relay is the bootstrap's ``relay_of`` where the ranks' nodes are not the layout's blocks
    (Slurm's ``-m cyclic``, Ray's placement), else its block's."""
    relays = boot.get("relays")
    if not relays:
        return str(boot["address"]), boot.get("cells"), boot.get("curve")
    relay_of = boot.get("relay_of")
    node = relay_of[rank] if relay_of else Layout.from_json(boot["layout"]).coords(rank).node_rank
    return str(relays[str(node)]), None, None


def main() -> int:
    boot = json.loads(os.environ.pop(BOOTSTRAP_ENV))
    die_with_parent()
    guardian = guard_group()  # before any thread: what the rank starts dies with it
    atexit.register(end_descendants, guardian)  # first in, so last out: after the user's own
    # A launcher's thread may have blocked SIGINT (Ray's actor threads do) and children inherit
    # the mask: unblock it, or an interrupt from the kernel could never stop a cell.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    export_master_addr()
    env = RankEnv.from_environ()
    if boot.get("relay_of") and not {"GROUP_RANK", "SLURM_NODEID"} & set(os.environ):
        # (mpirun's --map-by node: the kernel's plan knows each rank's node, the rank does not)
        env = dataclasses.replace(env, node_rank=int(boot["relay_of"][env.rank]))
    env.export()
    make_room(env.world_size)
    install_dump(str(boot.get("stacks_dir") or ""), env.rank)
    install_crash(str(boot.get("stacks_dir") or ""), env.rank)
    if boot.get("stacks_dir"):
        leave_leftovers(str(left_file(str(boot["stacks_dir"]), env.rank)))
    GPU.start()
    ticker = _Ticker(boot)
    address, cells, curve = _kernel_address(boot, env.rank)

    def on_message(message: Message, buffers: list[Buffer]) -> None:
        if isinstance(message, StackRequest):  # on the I/O thread, whatever the main one does
            channel.send(Stacks(message.request_id, current_stacks(), stage(), flight_summary()))
        else:
            runtime.on_message(message, buffers)

    channel = Channel(
        address,
        Signer(bytes.fromhex(boot["key"]), rank_name(env.rank)),
        on_message,
        ticker,
        curve,
    )
    cell = CellSocket(
        channel.context,
        address,
        Signer(bytes.fromhex(boot["key"]), cell_name(env.rank)),
        channel.sent,
        curve,
        cells,
    )
    reporter = ChannelReporter(channel, cell)
    runtime = Runtime(env, reporter)
    runtime.debugger = Debugger(Asker(env.rank, cell.send, cell.recv))
    runtime.debugger.install()
    ticker.runtime, ticker.channel = runtime, channel
    capture = FdCapture(
        lambda stream, lines: reporter.output(runtime.run_id, stream, lines),
        lambda stream, text, final: reporter.live(Live(runtime.run_id, stream, text, final)),
    )
    ticker.capture = capture
    channel.start()
    on_stage(lambda name, detail: channel.send(Stage(name, os.getpid(), detail)))
    set_stage("setup")
    capture.start()

    def sent_before_exit() -> None:  # (os._exit in the cell: queued messages leave first)
        cell.close()  # (first: the channel's close ends the context both are in)
        channel.close(EXIT_CLOSE)  # (the cell's state, held back, with them)

    capture.hand_on_at_exit(sent_before_exit)
    layout = Layout.from_json(boot["layout"])
    try:
        setup_comm(runtime.namespace)
        setup(layout, runtime.namespace)
    except (StrategyError, MpiSetupError) as exc:
        reporter.fatal(str(exc))
        cell.close()
        channel.close()
        return 2
    except Exception as exc:  # noqa: BLE001 (report any set-up failure to the kernel)
        reporter.fatal(f"{type(exc).__name__}: {exc}")
        cell.close()
        channel.close()
        return 2
    set_stage("ready")
    cell.send(  # (the kernel learns the cell socket from it, after the stages before it)
        Hello(
            env.rank,
            runtime.host,
            os.getpid(),
            sys.version.split()[0],
            layout.coords(env.rank).to_json(),
        )
    )
    if reporter.output_on_cell():  # (after the hello: output on the cell socket where it is Unix)
        reporter.with_samples = runtime.flush_metrics  # (a line takes the samples along)
    settled()

    def receive() -> tuple[Message, list[Buffer]]:
        message, buffers = cell.recv()
        if not isinstance(message, Shutdown):
            note_busy()  # (after a rest: the guardian looks again)
        return message, buffers

    runtime.serve(capture.sync, receive)
    capture.sync()
    cell.close()
    channel.close()
    leave(0, runtime.namespace, remove_files)  # (the user's atexit work runs; the teardown not)


if __name__ == "__main__":
    sys.exit(main())
