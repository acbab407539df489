"""chartr's environment, parsed in one place: every variable by its declared kind.

``load()`` reads every declared variable (``chartr.config.variables``) at once
and checks the rules that tie several together; ``value(name)`` reads one. A
value a variable does not accept, a ``CHARTR_*`` name chartr does not know, or a
combination that cannot work raises :class:`ConfigError` naming the variable,
the value and what is allowed. ``chartr/settings.py`` (so every ``manage.py``
command and the server's workers) and ``gunicorn.conf.py`` call ``load()``; an
empty value is the same as an unset one.

This module imports nothing of Django's but its exception, so gunicorn's
config can use it before Django is set up.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from chartr.config.variables import BY_NAME, NOT_ENVIRONMENT, VARIABLES, Variable
from kernel.live_transport import effective_transport

__all__ = ["ConfigError", "VARIABLES", "effective_transport", "load", "serves_asgi", "value"]

#: Worker processes by default when live updates cross processes: 2 per CPU, at most this.
MAX_DEFAULT_WORKERS = 8


class ConfigError(ImproperlyConfigured):
    """One or more environment variables are wrong; the message names each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        count = "a setting is" if len(problems) == 1 else f"{len(problems)} settings are"
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(
            f"chartr cannot start: {count} wrong (environment or <config dir>/chartr.env; docs/configuration.md):\n{lines}"
        )


def _parse(variable: Variable, environ: Mapping[str, str]) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, problem)`` when the variable refuses what it is set to."""
    raw = environ.get(variable.name, "")
    if raw == "":
        return variable.default, None
    try:
        return variable.kind.parse(raw), None
    except ValueError:
        return None, f"{variable.name}={raw!r}: expected {variable.kind.allowed}."


def value(name: str, environ: Mapping[str, str] = os.environ) -> Any:
    """One variable's value (its default when unset); raises ConfigError when it is wrong."""
    parsed, problem = _parse(BY_NAME[name], environ)
    if problem is not None:
        raise ConfigError([problem])
    return parsed


def _unknown(environ: Mapping[str, str]) -> list[str]:
    problems = []
    for name in sorted(environ):
        if not name.startswith("CHARTR_") or name in BY_NAME:
            continue
        if name in NOT_ENVIRONMENT:
            problems.append(f"{name} is a constant in chartr/settings.py, not an environment variable; unset it.")
            continue
        close = difflib.get_close_matches(name, BY_NAME, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        problems.append(f"{name} is set, but chartr has no such variable.{hint}")
    return problems


def database_vendor(database: dict | None) -> str:
    """``postgresql`` or ``sqlite`` for a parsed ``DATABASE_URL`` (None: the SQLite default)."""
    return "postgresql" if database and "postgresql" in database["ENGINE"] else "sqlite"


def serves_asgi(worker_class: str) -> bool:
    """Whether gunicorn's worker class serves chartr.asgi (and so the live streams)."""
    return "uvicorn" in worker_class.lower() or worker_class == "asgi"


def _combinations(values: dict[str, Any]) -> list[str]:
    """The rules that tie variables together; fills in the default ``CHARTR_WORKERS``."""
    problems = []
    vendor = database_vendor(values["DATABASE_URL"])
    setting, redis_url = values["CHARTR_LIVE_TRANSPORT"], values["CHARTR_REDIS_URL"]
    if setting == "redis" and not redis_url:
        problems.append("CHARTR_LIVE_TRANSPORT='redis' needs CHARTR_REDIS_URL, e.g. redis://127.0.0.1:6379/0.")
    if setting == "postgres" and vendor != "postgresql":
        problems.append(
            "CHARTR_LIVE_TRANSPORT='postgres' needs a PostgreSQL DATABASE_URL; on SQLite use 'redis' or 'auto'."
        )
    transport = effective_transport(setting, redis_url, vendor)
    workers = values["CHARTR_WORKERS"]
    if workers is None:
        values["CHARTR_WORKERS"] = 1 if transport == "local" else min(2 * (os.cpu_count() or 1), MAX_DEFAULT_WORKERS)
    elif workers > 1 and transport == "local" and serves_asgi(values["CHARTR_WORKER_CLASS"]):
        problems.append(
            f"CHARTR_WORKERS={workers} with the local live transport (SQLite without CHARTR_REDIS_URL, or "
            "CHARTR_LIVE_TRANSPORT='local'): provisional updates would reach only the streams of their own worker. "
            "Set CHARTR_LIVE_TRANSPORT=redis with CHARTR_REDIS_URL=redis://HOST:6379/0, or CHARTR_WORKERS=1."
        )
    return problems


def load(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Every declared variable's value by name; raises ConfigError listing every problem."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for variable in VARIABLES:
        parsed, problem = _parse(variable, environ)
        values[variable.name] = parsed
        if problem is not None:
            problems.append(problem)
    problems.extend(_unknown(environ))
    if not problems:
        problems.extend(_combinations(values))
    if problems:
        raise ConfigError(problems)
    return values
