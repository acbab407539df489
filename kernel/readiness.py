"""Dependencies an app adds to the readiness probe, beside the database chartr/health.py checks itself.

An app registers a check (a callable returning ``None`` when its dependency
answers, else a reason code such as ``redis_unreachable``) from its
``AppConfig.ready``; ``/readyz`` answers 503 with the first reason any check
gives. It lives in ``kernel`` because chartr/health.py asks and an app (the
live stream's transport) answers, and neither may import the other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger("chartr.readiness")

Check = Callable[[], str | None]
_checks: list[Check] = []


def register(check: Check) -> None:
    """Add ``check`` to the readiness probe; registering it twice is a no-op."""
    if check not in _checks:
        _checks.append(check)


def first_problem() -> str | None:
    """The reason code of the first registered check that fails, else None. A check
    that raises counts as failing, with its name as the reason."""
    for check in list(_checks):
        try:
            problem = check()
        except Exception:
            logger.warning("readyz: %s raised", check.__qualname__, exc_info=True)
            return f"{check.__name__}_failed"
        if problem is not None:
            logger.warning("readyz: %s", problem)
            return problem
    return None
