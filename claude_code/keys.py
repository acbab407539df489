"""A session key as the SDK names it, checked, and the agent it maps to.

``SessionKey`` is the SDK's ``{project_key, session_id, subpath?}`` plus chartr's ``namespace``
(the tenant a store is scoped to). The agent of a key has a deterministic id
(``agent_id_for``): the hooks, the importer and the API find the same agent from the key alone.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

#: The namespace ``import_claude_code`` writes to and a store without one reads.
DEFAULT_NAMESPACE = "default"
NAMESPACE_CHARACTERS = "A-Za-z0-9._:-"
MAX_NAMESPACE_LENGTH = 64
#: The SDK's project keys are at most 200 characters plus a hash suffix; a caller-defined one
#: (a tenant id, a project name) is any text without NUL up to this.
MAX_KEY_LENGTH = 255
#: Agents of Claude Code sessions carry this provider.
PROVIDER = "claude-code"
AGENT_ID_PREFIX = "claude-code-"
NAMESPACE_PATTERN = rf"^[{NAMESPACE_CHARACTERS}]+$"
#: One segment of a subpath: anything but '/', '\\', "." and "..".
_SEGMENT = r"(?:[^./\\][^/\\]*|\.[^./\\][^/\\]*|\.\.[^/\\]+)"
#: A subpath: empty (the main transcript) or relative segments joined by '/' (the API publishes it).
SUBPATH_PATTERN = rf"^(?:{_SEGMENT}(?:/{_SEGMENT})*)?$"
_SUBPATH = re.compile(SUBPATH_PATTERN)


def check_key_part(value: object, field: str, *, allow_empty: bool = False) -> str:
    """A project key or session id: a non-empty string of at most ``MAX_KEY_LENGTH``, no NUL."""
    if not isinstance(value, str):
        raise ValidationError({field: ["Must be a string."]}, code="invalid")
    if not value and not allow_empty:
        raise ValidationError({field: ["Must not be empty."]}, code="invalid")
    if len(value) > MAX_KEY_LENGTH:
        raise ValidationError({field: [f"At most {MAX_KEY_LENGTH} characters."]}, code="invalid")
    if "\x00" in value:
        raise ValidationError({field: ["Must not contain NUL."]}, code="invalid")
    return value


def check_namespace(value: object) -> str:
    value = check_key_part(value, "namespace")
    if len(value) > MAX_NAMESPACE_LENGTH or not re.fullmatch(NAMESPACE_PATTERN, value):
        raise ValidationError(
            {"namespace": [f"1 to {MAX_NAMESPACE_LENGTH} characters of letters, digits, '.', '_', ':' and '-'."]},
            code="invalid",
        )
    return value


def check_subpath(value: object) -> str:
    """``""`` (the main transcript) or a relative path such as ``subagents/agent-<id>``."""
    value = check_key_part(value, "subpath", allow_empty=True)
    if not _SUBPATH.fullmatch(value):
        raise ValidationError(
            {"subpath": ["Must be a relative path: no leading or doubled '/', no '.' or '..' segment, no '\\'."]},
            code="invalid",
        )
    return value


@dataclass(frozen=True)
class SessionKey:
    """One transcript: a session's main one (``subpath == ""``) or one of its subagents'."""

    project_key: str
    session_id: str
    subpath: str = ""
    namespace: str = DEFAULT_NAMESPACE

    @classmethod
    def checked(
        cls, *, project_key: object, session_id: object, subpath: object = "", namespace: object = DEFAULT_NAMESPACE
    ) -> SessionKey:
        """The key from untrusted parts; ``ValidationError`` naming the part that is wrong."""
        return cls(
            project_key=check_key_part(project_key, "project_key"),
            session_id=check_key_part(session_id, "session_id"),
            subpath=check_subpath("" if subpath is None else subpath),
            namespace=check_namespace(DEFAULT_NAMESPACE if namespace is None else namespace),
        )

    @property
    def is_main(self) -> bool:
        return self.subpath == ""

    def main(self) -> SessionKey:
        return SessionKey(self.project_key, self.session_id, "", self.namespace)

    @property
    def agent_id(self) -> str:
        return agent_id_for(self)


def agent_id_for(key: SessionKey) -> str:
    """The agent id of ``key``: ``claude-code-`` and 40 hex digits of a sha256 over the four parts.

    A hash, because two project keys (or namespaces) may hold the same session id; NUL separates
    the parts, which none of them may contain.
    """
    joined = "\x00".join((key.namespace, key.project_key, key.session_id, key.subpath))
    return AGENT_ID_PREFIX + hashlib.sha256(joined.encode()).hexdigest()[:40]
