"""The kinds of value an environment variable can hold: each parses one string strictly.

A kind's ``parse`` returns the value or raises ``ValueError``; ``allowed`` says,
in the words docs/configuration.md and the error message use, what it accepts.
``samples`` gives a value it accepts and values it refuses, for the test that
walks every variable (tests/chartr/test_config.py).
"""

from __future__ import annotations

import ipaddress
import re
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import environ

TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")


class Kind:
    allowed = ""

    def parse(self, raw: str) -> Any:
        raise NotImplementedError

    def samples(self) -> tuple[str, tuple[str, ...]]:
        """``(a value it accepts, values it refuses)``."""
        raise NotImplementedError


class Boolean(Kind):
    allowed = "`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` (any case)"

    def parse(self, raw: str) -> bool:
        lowered = raw.lower()
        if lowered in TRUE:
            return True
        if lowered in FALSE:
            return False
        raise ValueError

    def samples(self):
        return "Yes", ("ture", "2", "-1", "ok")


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass
class Integer(Kind):
    minimum: int
    maximum: int
    unit: str = ""

    @property
    def allowed(self) -> str:
        unit = f" ({self.unit})" if self.unit else ""
        return f"an integer from {self.minimum} to {self.maximum}{unit}"

    def parse(self, raw: str) -> int:
        if not re.fullmatch(r"[+-]?[0-9]+", raw):
            raise ValueError
        value = int(raw)
        if not self.minimum <= value <= self.maximum:
            raise ValueError
        return value

    def samples(self):
        return str(self.maximum), (str(self.minimum - 1), str(self.maximum + 1), "1.5", f"{self.minimum}x")


@dataclass
class Seconds(Kind):
    """A duration: a plain decimal number of seconds, no unit suffix."""

    minimum: float
    maximum: float

    @property
    def allowed(self) -> str:
        return f"seconds, a number from {number_text(self.minimum)} to {number_text(self.maximum)} (no unit suffix)"

    def parse(self, raw: str) -> float:
        if not re.fullmatch(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)", raw):
            raise ValueError
        value = float(raw)
        if not self.minimum <= value <= self.maximum:
            raise ValueError
        return value

    def samples(self):
        too_small = "-1" if self.minimum == 0 else number_text(self.minimum / 2)
        return number_text(self.maximum), (too_small, number_text(self.maximum + 1), "5m", "5s", "nan")


@dataclass
class Choice(Kind):
    values: Sequence[str]
    any_case: bool = False

    @property
    def allowed(self) -> str:
        names = ", ".join(f"`{value}`" for value in self.values)
        return f"one of {names}" + (" (any case)" if self.any_case else "")

    def parse(self, raw: str) -> str:
        value = raw.lower() if self.any_case else raw
        if value not in self.values:
            raise ValueError
        return value

    def samples(self):
        first = self.values[0]
        refused = [first + "x", first[:-1] or "x"]
        if not self.any_case:
            refused.append(first.capitalize() if first != first.capitalize() else first.upper())
        return (first.upper() if self.any_case else first), tuple(refused)


@dataclass
class Text(Kind):
    """Free text matching ``pattern`` (a description of it in ``allowed``)."""

    allowed: str = "any text"
    pattern: str = r".+"
    valid: str = "value"
    invalid: tuple[str, ...] = ("\n",)

    def parse(self, raw: str) -> str:
        if not re.fullmatch(self.pattern, raw):
            raise ValueError
        return raw

    def samples(self):
        return self.valid, self.invalid


class AbsolutePath(Kind):
    allowed = "an absolute path (`~` allowed)"

    def parse(self, raw: str) -> str:
        if not raw.startswith(("/", "~")) or "\n" in raw:
            raise ValueError
        return raw

    def samples(self):
        return "/srv/chartr", ("relative/dir", "./here")


class Program(Kind):
    allowed = "a program name on `PATH` or an absolute path to one"

    def parse(self, raw: str) -> str:
        if not re.fullmatch(r"[^\s]+", raw) or ("/" in raw and not raw.startswith("/")):
            raise ValueError
        return raw

    def samples(self):
        return "python3", ("python 3", "bin/python")


@dataclass
class CommaList(Kind):
    """Comma-separated items, each of kind ``item``; surrounding spaces ignored."""

    item: Kind
    noun: str = "items"
    valid: str = ""
    invalid: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        return f"comma-separated {self.noun}, each {self.item.allowed}"

    def parse(self, raw: str) -> list:
        parts = [part.strip() for part in raw.split(",")]
        if any(not part for part in parts):
            raise ValueError
        return [self.item.parse(part) for part in parts]

    def samples(self):
        return self.valid, self.invalid or ("a,,b",)


class HostName(Kind):
    allowed = "a host name, an IP address, `[IPv6]`, `.domain` or `*`"

    def parse(self, raw: str) -> str:
        if not re.fullmatch(r"\*|\.?[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]", raw):
            raise ValueError
        return raw


class Origin(Kind):
    allowed = "an origin with its scheme, e.g. `https://chartr.example.com`"

    def parse(self, raw: str) -> str:
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError
        return raw


class BindAddress(Kind):
    allowed = "`HOST:PORT`, `[IPv6]:PORT`, `unix:/path` or `fd://N`"

    def parse(self, raw: str) -> str:
        if re.fullmatch(r"unix:/\S+|fd://[0-9]+", raw):
            return raw
        match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})", raw)
        if match is None or int(match[2]) > 65535:
            raise ValueError
        return raw


class ProxyAddress(Kind):
    allowed = "an IP address or network (CIDR), or `*` alone"

    def parse(self, raw: str) -> str:
        ipaddress.ip_network(raw, strict=False)
        return raw


class ProxyList(CommaList):
    def __init__(self):
        super().__init__(ProxyAddress(), noun="addresses", valid="10.0.0.2,192.168.0.0/16", invalid=("10.0.0.300",))

    allowed = "`*`, or comma-separated IP addresses or networks (CIDR)"

    def parse(self, raw: str) -> str:
        if raw == "*":
            return raw
        super().parse(raw)
        return raw


class Rate(Kind):
    """``<requests>/<period>``, as ``tokens/throttling.py`` counts it."""

    PERIODS = ("s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day")
    allowed = (
        "`<requests>/<period>`, requests at least 1, period `s`, `m`, `h` or `d` (or `second`, `minute`, `hour`, `day`)"
    )

    def parse(self, raw: str) -> str:
        match = re.fullmatch(r"([0-9]+)/([a-z]+)", raw)
        if match is None or int(match[1]) < 1 or match[2] not in self.PERIODS:
            raise ValueError
        return raw

    def samples(self):
        return "600/m", ("600", "0/m", "600/w", "10/minutes", "ten/m")


class RedisURL(Kind):
    allowed = "`redis://[:password@]host[:port][/db]`, `rediss://...` (TLS) or `unix:///path`"

    def parse(self, raw: str) -> str:
        parts = urlsplit(raw)
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ValueError from None
        if parts.scheme in ("redis", "rediss"):
            if not parts.hostname or parts.path.strip("/") and not parts.path.strip("/").isdigit():
                raise ValueError
        elif parts.scheme != "unix" or not parts.path:
            raise ValueError
        return raw

    def samples(self):
        return "redis://127.0.0.1:6379/0", ("127.0.0.1:6379", "redsi://localhost", "redis://localhost:99999/0")


class DatabaseURL(Kind):
    allowed = "`sqlite:////absolute/path` or `postgres://user:password@host:port/name`"

    def parse(self, raw: str) -> dict:
        if urlsplit(raw).scheme not in ("sqlite", "postgres", "postgresql", "pgsql", "psql"):
            raise ValueError
        try:
            return environ.Env.db_url_config(raw)
        except Exception:
            raise ValueError from None

    def samples(self):
        return "postgres://chartr@db.example:5432/chartr", ("mysql://u@h/x", "postgress://u@h/x", "/data/db.sqlite3")


class TimeZone(Kind):
    allowed = "an IANA time zone name, e.g. `UTC` or `Europe/Paris`"

    def parse(self, raw: str) -> str:
        try:
            zoneinfo.ZoneInfo(raw)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError from None
        return raw

    def samples(self):
        return "Europe/Paris", ("Mars/Olympus", "utc+2")


class WorkerClass(Kind):
    """gunicorn's own worker names, or a dotted path to a worker class."""

    NAMES = ("sync", "eventlet", "gevent", "tornado", "gthread", "asgi")
    allowed = "`gthread`, `sync`, `asgi` (gunicorn's names) or a dotted path to a worker class"

    def parse(self, raw: str) -> str:
        if raw not in self.NAMES and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", raw):
            raise ValueError
        return raw

    def samples(self):
        return "gthread", ("gthreads", "chartr.workers.", "uvicorn worker")
