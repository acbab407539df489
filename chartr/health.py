"""Liveness and readiness probes for load balancers, orchestrators and the Docker HEALTHCHECK.

Both answer without authentication and say nothing beyond their status and,
for a failing readiness probe, a fixed reason code: no versions, no hostnames,
no exception text.

Probes usually arrive over plain http from the orchestrator with a Host header
(a pod or container IP) that ``ALLOWED_HOSTS`` rightly refuses, and production
settings redirect plain http to https. ``HealthProbeMiddleware`` therefore sits
first in the middleware stack and answers these two paths before host
validation and the HTTPS redirect; the URLconf routes them too, to the same
views, so they also resolve by name.
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from chartr.middleware import BothModesMiddleware
from kernel import draining
from kernel.migrations import is_migrated
from kernel.readiness import first_problem as dependency_problem

logger = logging.getLogger(__name__)

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"


def readiness(connection: BaseDatabaseWrapper | None = None) -> str | None:
    """``None`` when ready, else the reason code the probe reports."""
    if draining.is_draining():
        # Shutting down: the balancer must stop sending before this process stops accepting.
        return "shutting_down"
    connection = connection or connections[DEFAULT_DB_ALIAS]
    # Each backend (kernel/db_backends) knows what makes its storage unsafe; SQLite: a network filesystem.
    storage_problem = getattr(connection, "storage_problem", None)
    problem = storage_problem() if storage_problem is not None else None
    if problem is not None:
        logger.error("readyz: %s (%s)", problem, connection.settings_dict.get("NAME"))
        return problem
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        logger.warning("readyz: database unreachable", exc_info=True)
        return "database_unreachable"
    try:
        # ``manage.py migrate --check``; a migration missing from the middle of the history counts too.
        migrated = is_migrated(connection.alias)
    except DatabaseError:
        logger.warning("readyz: cannot read the migration history", exc_info=True)
        return "database_unreachable"
    if not migrated:
        return "migrations_pending"
    # What the apps depend on beside the database: the live transport's Redis or LISTEN connection.
    return dependency_problem()


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    reason = readiness()
    if reason is None:
        return JsonResponse({"status": "ready"})
    return JsonResponse({"status": "unavailable", "reason": reason}, status=503)


PROBES = {HEALTHZ_PATH: healthz, READYZ_PATH: readyz}


class HealthProbeMiddleware(BothModesMiddleware):
    """Works in both modes, so under ASGI the request never hops to a thread just to pass through."""

    def _probe_for(self, request: HttpRequest):
        probe = PROBES.get(request.path_info.rstrip("/") or "/")
        return probe if probe is not None and request.method in ("GET", "HEAD") else None

    def _call(self, request: HttpRequest):
        probe = self._probe_for(request)
        return probe(request) if probe is not None else self.get_response(request)

    async def _acall(self, request: HttpRequest):
        probe = self._probe_for(request)
        if probe is not None:
            return await sync_to_async(probe)(request)
        return await self.get_response(request)
