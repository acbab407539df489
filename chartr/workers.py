"""gunicorn's uvicorn worker, taught to drain before it stops (``CHARTR_WORKER_CLASS``'s default).

On SIGTERM, uvicorn on its own stops accepting at once, then waits for the
requests in flight; an open live stream never finishes by itself, so it is
cut when gunicorn's grace period runs out. Behind a load balancer that is
too abrupt. This worker, on the first SIGTERM:

1. starts draining (``kernel.draining``): ``/readyz`` answers 503 from now
   on, new live streams are refused with 503 (a balancer retries them on
   another instance), open streams end cleanly so their clients reconnect
   with ``Last-Event-ID``, and every response says ``Connection: close`` so
   the balancer keeps no idle connection to this instance;
2. keeps serving everything else for ``CHARTR_DRAIN_SECONDS`` (default 0),
   the time a balancer needs to see ``/readyz`` fail and stop sending;
3. then stops as uvicorn does on a signal (``Server.handle_exit``): stops
   accepting, lets the requests in flight finish (within gunicorn's
   ``CHARTR_GRACEFUL_TIMEOUT``), and exits.

A SIGTERM however often it comes is one stop: sent to the process group
(systemd's default ``KillMode=control-group``), each worker hears it itself
and again from the master, and drains as if it heard it once. SIGINT (Ctrl-C)
skips what is left of the wait (and also ends the streams and fails
readiness, without waiting).

Nothing of uvicorn is overridden: ``run`` (gunicorn's entry point of a custom
worker) starts uvicorn's ``Server``, and once it listens for signals puts
``Stop``'s handlers on the event loop in front of them (``add_signal_handler``),
calling the server's ``handle_exit`` when the drain is over. The limits on
connections are uvicorn's own settings: ``timeout_keep_alive`` (gunicorn's
``keepalive``), ``backlog`` (gunicorn's) and ``limit_concurrency`` (gunicorn's
``worker_connections``, a 503 past it); heads, bodies and their time are the
proxy's (deploy/nginx/chartr.conf, docs/deploy.md#limits).
"""

from __future__ import annotations

import asyncio
import signal
import sys

from gunicorn.arbiter import Arbiter
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

from chartr import config
from kernel import draining
from kernel.logs import access_log


def drain_seconds() -> float:
    """``CHARTR_DRAIN_SECONDS`` (gunicorn.conf.py has put ``chartr.env`` in the environment already)."""
    return config.value("CHARTR_DRAIN_SECONDS")


class Stop:
    """What SIGTERM and SIGINT do to one worker's uvicorn ``server`` (see the module's docstring)."""

    def __init__(self, server: Server, *, drain_seconds: float):
        self.server = server
        self.drain_seconds = drain_seconds
        self.drain: asyncio.TimerHandle | None = None

    def listen(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.heard, sig)

    def heard(self, sig: int) -> None:
        # Every stop ends the open streams and fails readiness; only SIGTERM waits first.
        draining.start_draining()
        if sig == signal.SIGTERM:
            if self.drain is not None or self.server.should_exit:
                # The same stop heard twice: a SIGTERM to the process group (systemd's default)
                # reaches the worker itself and again through the master. It changes nothing.
                return
            self.drain = asyncio.get_running_loop().call_later(self.drain_seconds, self.server.handle_exit, sig, None)
            return
        if self.drain is not None:
            self.drain.cancel()
        self.server.handle_exit(sig, None)


class DrainingUvicornWorker(UvicornWorker):
    # uvicorn's Config, as uvicorn's deployment docs pass it to the worker. Each request's task
    # starts in an empty context; the access log is kernel/logs.py's, which writes the same line
    # to the same handlers with tokens redacted.
    CONFIG_KWARGS = {
        **UvicornWorker.CONFIG_KWARGS,
        "reset_contextvars": True,
        "access_log": False,
        # chartr serves no WebSocket.
        "ws": "none",
        # Django's ASGI handler speaks no lifespan protocol: "auto" would try it and log
        # "ASGI 'lifespan' protocol appears unsupported" at every start.
        "lifespan": "off",
    }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        access_log.write_to(self.log.access_log.handlers)
        # Open connections (idle, streams and requests alike) per worker; past it uvicorn answers 503.
        self.config.limit_concurrency = self.cfg.worker_connections

    def run(self) -> None:
        # UvicornWorker.run, serving through serve_draining.
        with asyncio.Runner(loop_factory=self.config.get_loop_factory()) as runner:
            runner.run(self.serve_draining())

    async def serve_draining(self) -> None:
        self.config.app = self.wsgi
        server = Server(self.config)
        loop = asyncio.get_running_loop()
        # As UvicornWorker does: gunicorn's SIGQUIT (a quick stop) reaches the worker's own handler.
        loop.add_signal_handler(signal.SIGQUIT, self.handle_exit, signal.SIGQUIT, None)
        # The listeners' own sockets, as gunicorn's asgi worker hands them to its loop: the event
        # loop closes each as it stops accepting, and uvicorn's close after it is then a no-op.
        # Handed gunicorn's wrappers, that second close hit the closed descriptor and logged
        # "Error while closing socket [Errno 9] Bad file descriptor" at every stop.
        serving = asyncio.ensure_future(server.serve(sockets=[listener.sock for listener in self.sockets]))
        # serve() takes SIGTERM and SIGINT in its first step; the drain goes in front of it then.
        await asyncio.sleep(0)
        Stop(server, drain_seconds=drain_seconds()).listen(loop)
        await serving
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
