"""The one rule for what a stored directory looks like.

Stored directories are absolute, normalized POSIX paths. Redundant slashes
and a trailing slash are folded away (a client sending ``/a//b/`` means
``/a/b``); ``.`` and ``..`` segments are refused rather than resolved, because
resolving them lexically can name a different directory than the filesystem
would once symlinks are involved.
"""

from __future__ import annotations

import hashlib

from django.core.exceptions import ValidationError
from django.db.models import CheckConstraint, Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

MAX_DIRECTORY_LENGTH = 4096
#: A file name's limit (NAME_MAX is 255 on Linux and macOS): no real directory has a longer segment.
MAX_SEGMENT_LENGTH = 255
#: Length of ``directory_hash``: a sha256 in hex.
DIRECTORY_HASH_LENGTH = 64

# A segment of at most MAX_SEGMENT_LENGTH characters that is neither "." nor "..".
_SEGMENT = rf"(?=[^/]{{1,{MAX_SEGMENT_LENGTH}}}(?:/|$))(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+)"
#: What ``normalize_directory`` accepts (NUL and the whole length aside), for the OpenAPI schema.
DIRECTORY_PATTERN = rf"^/+(?:{_SEGMENT}/+)*(?:{_SEGMENT})?$"


def normalize_directory(raw: object) -> str:
    if not isinstance(raw, str):
        raise ValidationError("Directory must be a string.", code="invalid")
    if len(raw) > MAX_DIRECTORY_LENGTH:
        raise ValidationError(f"Directory must be at most {MAX_DIRECTORY_LENGTH} characters.", code="invalid")
    if "\x00" in raw:
        raise ValidationError("Directory must not contain NUL bytes.", code="invalid")
    if not raw.startswith("/"):
        raise ValidationError("Directory must be an absolute path.", code="invalid")
    segments = [segment for segment in raw.split("/") if segment]
    if any(segment in (".", "..") for segment in segments):
        raise ValidationError("Directory must not contain '.' or '..' segments.", code="invalid")
    if any(len(segment) > MAX_SEGMENT_LENGTH for segment in segments):
        raise ValidationError(
            f"Each segment of a directory must be at most {MAX_SEGMENT_LENGTH} characters (a file name's limit).",
            code="invalid",
        )
    return "/" + "/".join(segments)


def is_within(path: str, directory: str) -> bool:
    """``path`` is ``directory`` or below it; both normalized."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def directories_above(directory: str) -> list[str]:
    """The directories above ``directory``, deepest first (not the root: it contains everything)."""
    parts = directory.strip("/").split("/")
    return ["/" + "/".join(parts[:end]) for end in range(len(parts) - 1, 0, -1)]


def last_segment(directory: str) -> str:
    return directory.rstrip("/").rsplit("/", 1)[-1] or "/"


def directory_hash(directory: str) -> str:
    """The key that makes a directory unique and finds it: sha256 of its UTF-8, in hex.

    A directory may be PATH_MAX (4,096) characters, up to 16 KiB of UTF-8;
    PostgreSQL's btree cannot index a row over about 2,700 bytes, so an index
    on the directory itself refused long paths SQLite stored. Every database
    indexes 64 hex characters.
    """
    return hashlib.sha256(directory.encode("utf-8")).hexdigest()


def normalized_directory_check(field: str, name: str, *, max_length: int):
    """A CheckConstraint holding the shape of a normalized absolute path (as
    ``normalize_directory`` produces it) of at most ``max_length``.

    NUL bytes are not in it: PostgreSQL cannot store them in text at all and
    SQLite parameters reject them in DDL; the service refuses them first.
    """
    is_root = Q(**{field: "/"})
    shaped = (
        Q(**{f"{field}__startswith": "/"})
        & ~Q(**{f"{field}__endswith": "/"})
        & ~Q(**{f"{field}__contains": "//"})
        & ~Q(**{f"{field}__contains": "/./"})
        & ~Q(**{f"{field}__contains": "/../"})
        & ~Q(**{f"{field}__endswith": "/."})
        & ~Q(**{f"{field}__endswith": "/.."})
    )
    return CheckConstraint(
        condition=(is_root | shaped) & LessThanOrEqual(Length(field), max_length),
        name=name,
    )
