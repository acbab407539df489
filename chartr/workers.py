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
3. then stops as uvicorn does: stops accepting, lets the requests in flight
   finish (within gunicorn's ``CHARTR_GRACEFUL_TIMEOUT``), and exits.

A SIGTERM however often it comes is one stop: sent to the process group
(systemd's default ``KillMode=control-group``), each worker hears it itself
and again from the master, and drains as if it heard it once. SIGINT (Ctrl-C)
or SIGQUIT skips what is left of the wait (and also ends the streams and fails
readiness, without waiting).

Each connection goes through ``chartr.connection_limits`` first: gunicorn's
``worker_connections``, ``limit_request_line``, ``limit_request_fields`` and
``limit_request_field_size`` (gunicorn.conf.py sets them from ``CHARTR_*``),
and the time to send a head (``CHARTR_HEADER_TIMEOUT``), hold for it as they
do for gunicorn's own workers; uvicorn's ``timeout_keep_alive`` is gunicorn's
``keepalive`` and its ``h11_max_incomplete_event_size`` ``CHARTR_MAX_HEADER_BYTES``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from types import FrameType

from gunicorn.arbiter import Arbiter
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

from chartr import config
from chartr.connection_limits import PROBE_ROOM, Limits, limited
from chartr.logs import access_log
from kernel import draining


def connection_limits(cfg) -> Limits:
    """gunicorn's limits (``cfg``, its public settings) and chartr's own for the head's bytes and time."""
    return Limits(
        max_connections=cfg.worker_connections,
        request_line_bytes=cfg.limit_request_line or config.value("CHARTR_MAX_REQUEST_LINE_BYTES"),
        header_fields=cfg.limit_request_fields,
        header_field_bytes=cfg.limit_request_field_size or config.value("CHARTR_MAX_HEADER_FIELD_BYTES"),
        header_bytes=config.value("CHARTR_MAX_HEADER_BYTES"),
        header_timeout=config.value("CHARTR_HEADER_TIMEOUT"),
    )


def drain_seconds() -> float:
    """``CHARTR_DRAIN_SECONDS`` (gunicorn.conf.py has put ``chartr.env`` in the environment already)."""
    return config.value("CHARTR_DRAIN_SECONDS")


class DrainingServer(Server):
    """uvicorn's server with a drain period between SIGTERM and the end of accepting."""

    def __init__(self, config, *, drain_seconds: float):
        super().__init__(config)
        self.drain_seconds = drain_seconds
        self.drain_deadline: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Every stop ends the open streams and fails readiness; only SIGTERM waits first.
        draining.start_draining()
        if sig == signal.SIGTERM:
            if self.drain_deadline is not None or self.should_exit:
                # The same stop heard twice: a SIGTERM to the process group (systemd's default)
                # reaches the worker itself and again through the master. It changes nothing.
                return
            self.drain_deadline = time.monotonic() + self.drain_seconds
            if self.drain_seconds > 0:
                return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.drain_deadline is not None and time.monotonic() >= self.drain_deadline:
            return True
        return await super().on_tick(counter)


class DrainingUvicornWorker(UvicornWorker):
    # uvicorn starts each request's task in an empty context, so chartr's wrapper
    # needs no task of its own for that (chartr/serving.py), and leaves the access
    # log to chartr/logs.py, which writes the same line to the same handlers.
    CONFIG_KWARGS = {
        **UvicornWorker.CONFIG_KWARGS,
        "reset_contextvars": True,
        "access_log": False,
        # chartr serves no WebSocket; an upgrade would also swap each connection's protocol
        # past the limits (chartr/connection_limits.py), which count it until it closes.
        "ws": "none",
        # Django's ASGI handler speaks no lifespan protocol: "auto" would try it and log
        # "ASGI 'lifespan' protocol appears unsupported" at every start.
        "lifespan": "off",
    }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        access_log.write_to(self.log.access_log.handlers)
        self.limits = connection_limits(self.cfg)
        # uvicorn's own cap, a backstop only: it counts idle connections too, so at the cap
        # it would refuse every request, the probes' too. LimitedProtocol refuses first and
        # still lets the probes through, up to PROBE_ROOM of them over the cap.
        self.config.limit_concurrency = self.limits.max_connections + PROBE_ROOM
        self.config.h11_max_incomplete_event_size = self.limits.header_bytes

    def run(self) -> None:
        # UvicornWorker.run, serving through DrainingServer in place of uvicorn's Server.
        with asyncio.Runner(loop_factory=self.config.get_loop_factory()) as runner:
            runner.run(self.serve_draining())

    async def serve_draining(self) -> None:
        self.config.app = self.wsgi
        # Loaded here, not in serve(), so each connection's protocol can be wrapped in the limits.
        self.config.load()
        self.config.http_protocol_class = limited(self.config.http_protocol_class, self.limits)
        server = DrainingServer(self.config, drain_seconds=drain_seconds())
        # As UvicornWorker does: gunicorn's SIGQUIT (a quick stop) reaches the worker's own handler.
        asyncio.get_running_loop().add_signal_handler(signal.SIGQUIT, self.handle_exit, signal.SIGQUIT, None)
        # The listeners' own sockets, as gunicorn's asgi worker hands them to its loop: the event
        # loop closes each as it stops accepting, and uvicorn's close after it is then a no-op.
        # Handed gunicorn's wrappers, that second close hit the closed descriptor and logged
        # "Error while closing socket [Errno 9] Bad file descriptor" at every stop.
        await server.serve(sockets=[listener.sock for listener in self.sockets])
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
