"""What ``CHARTR_LIVE_TRANSPORT`` means, decided once for the start-up checks and the live hub."""

from __future__ import annotations


def effective_transport(setting: str, redis_url: str, vendor: str) -> str:
    """``auto`` is redis when a Redis URL is set, else postgres on PostgreSQL, else local."""
    if setting != "auto":
        return setting
    if redis_url:
        return "redis"
    return "postgres" if vendor == "postgresql" else "local"
