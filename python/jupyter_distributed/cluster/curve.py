"""A CurveZMQ server socket that admits one client key: the kernel's control channel across
hosts (:mod:`.transport`) and an aggregator's socket for its node relays (:mod:`.aggregators`).
Light on purpose: the aggregator's process imports it."""

from __future__ import annotations

from collections.abc import Callable

import zmq


class _OneKey:
    """Admits only the cluster's client key (called by pyzmq's ZAP authenticator)."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def callback(self, domain: str, key: bytes) -> bool:
        return key == self.key


def curve_server(
    ctx: zmq.Context[zmq.Socket[bytes]],
    sock: zmq.Socket[bytes],
    public: bytes,
    secret: bytes,
    client: bytes,
) -> Callable[[], None]:
    """Make ``sock`` (before it binds) a CurveZMQ server with the keypair ``public``/``secret``
    that admits only the client key ``client``; returns what stops its authenticator."""
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_curve_callback("*", credentials_provider=_OneKey(client))
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    return auth.stop
