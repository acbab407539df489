"""PostgreSQL connection parameters, mapped from a Django settings dict in one place.

Two consumers need them outside Django's own connection: the live stream's
``LISTEN`` connection (psycopg keyword arguments) and the data snapshot
tools ``pg_dump``/``pg_restore``/``psql`` (libpq environment variables, so a
password never appears on a command line).
"""

from __future__ import annotations

import os
from typing import Any

#: Django settings key -> libpq keyword.
_SETTINGS_KEYWORDS = {"NAME": "dbname", "USER": "user", "PASSWORD": "password", "HOST": "host", "PORT": "port"}
#: OPTIONS keys that are libpq keywords as well, and pass through unchanged.
_OPTION_KEYWORDS = ("sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout", "application_name")
#: libpq keyword -> the environment variable libpq reads for it.
_LIBPQ_ENV = {
    "dbname": "PGDATABASE",
    "user": "PGUSER",
    "password": "PGPASSWORD",
    "host": "PGHOST",
    "port": "PGPORT",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
}


def connection_keywords(settings_dict: dict[str, Any]) -> dict[str, str]:
    """libpq keywords for the database a Django settings dict describes; empty values left out."""
    keywords = {}
    for key, keyword in _SETTINGS_KEYWORDS.items():
        value = settings_dict.get(key)
        if value not in (None, ""):
            keywords[keyword] = str(value)
    options = settings_dict.get("OPTIONS") or {}
    for keyword in _OPTION_KEYWORDS:
        if options.get(keyword) not in (None, ""):
            keywords[keyword] = str(options[keyword])
    return keywords


def libpq_environment(settings_dict: dict[str, Any]) -> dict[str, str]:
    """This process's environment with the libpq variables set for ``settings_dict``, and the
    connection variables it leaves empty removed, so an inherited ``PGHOST`` cannot point a tool
    at another server."""
    env = dict(os.environ)
    keywords = connection_keywords(settings_dict)
    for keyword, variable in _LIBPQ_ENV.items():
        if keyword in keywords:
            env[variable] = keywords[keyword]
        elif keyword in ("dbname", "user", "password", "host", "port"):
            env.pop(variable, None)
    return env
