"""Where the kernel's control channel listens, and who can reach it.

- **ipc** (every rank on this machine: ``local``, ``mpi`` without other hosts): a Unix socket
  in a fresh directory of mode 0700, removed when the cluster stops (or swept, named after
  the kernel's pid, once a killed kernel is found dead). Other users cannot
  connect at all; the owner could read the cluster's secret anyway.
- **tcp** (ranks on other hosts): CurveZMQ encrypts every message and authenticates both ends.
  The kernel makes a server keypair and a client keypair per cluster; the ranks get the server's
  public key and the client keypair in the bootstrap environment, the way they get the secret.
  A ZAP handler admits only that client key, so a peer without it never gets past the
  handshake, and nothing on the wire (cell code, pickles) is readable.

On both, the kernel's socket refuses any frame over :data:`~..protocol.frames.MAX_FRAME`
before reading it (``zmq.MAXMSGSIZE``): an unauthenticated peer cannot make the kernel allocate
a large frame; ranks cut larger buffers into frames of that size.
"""

from __future__ import annotations

import ipaddress
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import zmq

from ..errors import LaunchError
from ..history.reaper import leftover_prefix
from ..protocol.frames import MAX_FRAME, MAX_HEADER
from .curve import curve_server


@dataclass(frozen=True)
class Transport:
    """How ranks reach the kernel: a property of the backend (its ``launch`` picks one)."""

    kind: Literal["ipc", "tcp"]
    bind_host: str = "127.0.0.1"
    connect_host: str | None = None  # the address ranks dial, when not bind_host

    @classmethod
    def ipc(cls) -> Transport:
        """Every rank is on this machine: a Unix socket only this user can reach."""
        return cls("ipc") if zmq.has("ipc") else cls("tcp")

    @classmethod
    def tcp(cls, bind_host: str = "127.0.0.1", connect_host: str | None = None) -> Transport:
        """Ranks on other hosts: TCP with CurveZMQ."""
        return cls("tcp", bind_host, connect_host)


@dataclass
class Listener:
    """A bound socket: the address ranks dial, what they need to get in, how to clean up."""

    address: str
    curve: dict[str, str] | None = None  # z85 keys: "server", "public", "secret"
    directory: Path | None = None  # ipc: ours, mode 0700 (the ranks' cell sockets go there too)
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            cleanup()
        self.cleanups.clear()


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def listen(ctx: zmq.Context[zmq.Socket[bytes]], sock: zmq.Socket[bytes], t: Transport) -> Listener:
    """Bind ``sock`` (the kernel's ROUTER, before any peer can connect) as ``t`` says."""
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME + MAX_HEADER)
    if t.kind == "ipc":
        return _listen_ipc(sock)
    listener = Listener("")
    if zmq.has("curve"):
        listener.curve = _curve_server(ctx, sock, listener)
    elif not _loopback(t.bind_host):
        raise LaunchError(
            "this pyzmq/libzmq has no CurveZMQ, so the control channel to other hosts could not "
            "be encrypted; install pyzmq's wheel (it bundles libsodium) and try again"
        )
    port = sock.bind_to_random_port(f"tcp://{t.bind_host}")
    listener.address = f"tcp://{t.connect_host or t.bind_host}:{port}"
    return listener


def _listen_ipc(sock: zmq.Socket[bytes]) -> Listener:
    prefix = leftover_prefix() + "ctl-"  # swept if the kernel dies (see reaper)
    directory = Path(tempfile.mkdtemp(prefix=prefix))  # mode 0700, ours
    if len(str(directory)) > zmq.IPC_PATH_MAX_LEN - 8:  # a long TMPDIR: Unix sockets are short
        shutil.rmtree(directory, ignore_errors=True)
        directory = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    listener = Listener(f"ipc://{directory}/ctl", directory=directory)
    listener.cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
    try:
        sock.bind(listener.address)
    except zmq.ZMQError:
        listener.close()
        raise
    return listener


def _curve_server(
    ctx: zmq.Context[zmq.Socket[bytes]], sock: zmq.Socket[bytes], listener: Listener
) -> dict[str, str]:
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    listener.cleanups.append(curve_server(ctx, sock, server_public, server_secret, client_public))
    return {
        "server": server_public.decode(),
        "public": client_public.decode(),
        "secret": client_secret.decode(),
    }
