"""The operator's time zone: every admin page renders its times in it, and names it.

The zone is, first to last: ``?tz=Area/City`` on the request, the
``chartr_tz`` cookie (set from the browser's own zone by
``chartr/static/chartr/admin.js`` on every admin page), else ``TIME_ZONE``
(``CHARTR_TIME_ZONE``). ``chartr.middleware.OperatorTimeZoneMiddleware``
activates it for admin requests, so Django's date filters and the admin's
date-times all use it; the API always answers in ``TIME_ZONE``.
"""

from __future__ import annotations

import zoneinfo
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpRequest

TZ_COOKIE = "chartr_tz"
#: Longer than any IANA name; longer values are ignored, never looked up.
MAX_ZONE_NAME = 64


def zone_named(name: str | None) -> zoneinfo.ZoneInfo | None:
    """The zone ``name`` names, or None for anything else."""
    if not name or len(name) > MAX_ZONE_NAME:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return None


def operator_zone(request: HttpRequest) -> zoneinfo.ZoneInfo:
    """The zone times are shown in: ``?tz=``, then the browser's (cookie), then ``TIME_ZONE``."""
    # The script writes the cookie with encodeURIComponent ("Europe%2FParis").
    for candidate in (request.GET.get("tz"), unquote(request.COOKIES.get(TZ_COOKIE, ""))):
        zone = zone_named(candidate)
        if zone is not None:
            return zone
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)
