"""Picks the live transport from settings (``CHARTR_LIVE_TRANSPORT``: auto, local, postgres, redis)."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.utils.module_loading import import_string

from kernel.live_transport import effective_transport
from timeline.live.transports.base import LiveTransport

#: Transport name -> class. Dotted paths, so only the chosen backend's client library is imported.
TRANSPORT_CLASSES = {
    "local": "timeline.live.transports.local.LocalTransport",
    "postgres": "timeline.live.transports.postgres.PostgresTransport",
    "redis": "timeline.live.transports.redis.RedisTransport",
}


def transport_name() -> str:
    """The configured transport, ``auto`` resolved (kernel.live_transport)."""
    return effective_transport(settings.CHARTR_LIVE_TRANSPORT, settings.CHARTR_REDIS_URL, connections["default"].vendor)


def default_channel_name() -> str:
    """The pub/sub channel, derived from the database so that deployments sharing
    one Redis (pub/sub ignores Redis database numbers) do not hear each other."""
    configured = getattr(settings, "CHARTR_LIVE_CHANNEL", "")
    if configured:
        return configured
    db = settings.DATABASES["default"]
    identity = "|".join(str(db.get(key, "")) for key in ("ENGINE", "NAME", "HOST", "PORT"))
    return "chartr_live_" + hashlib.sha256(identity.encode()).hexdigest()[:16]


def make_transport(name: str | None = None, *, origin: str, channel_name: str | None = None) -> LiveTransport:
    """The transport called ``name`` (default: from settings) for the process ``origin``.

    chartr.config refuses an unknown ``CHARTR_LIVE_TRANSPORT`` at start; one set
    otherwise (``override_settings``) is refused here, never taken for local.
    """
    wanted = name or transport_name()
    path = TRANSPORT_CLASSES.get(wanted)
    if path is None:
        raise ImproperlyConfigured(f"CHARTR_LIVE_TRANSPORT={wanted!r}: expected one of {', '.join(TRANSPORT_CLASSES)}.")
    transport_class = import_string(path)
    return transport_class(channel_name=channel_name or default_channel_name(), origin=origin)
