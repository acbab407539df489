"""The agent's latest interaction request, as text an operator reads, at the top of its change page.

A permission or question an agent waits on is committed to its timeline as an
``interaction`` item whose ``request`` is whatever the agent sent: from Paseo,
its ``AgentPermissionRequest`` (``name``, ``kind``, ``title``, ``description``,
``input``, ``detail``, ``actions``, ...). ``describe_request`` turns any such
value into a heading and labelled blocks of plain text (real line breaks,
nested values indented, never JSON); the keys it knows come first, the others
after, none dropped. ``agent_request_section`` is registered with
``snapshots.admin.register_agent_page_section`` by ``TimelineConfig.ready()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow

#: The template the agent's change page includes at its top, with ``agent_request_section``'s variables.
AGENT_REQUEST_TEMPLATE = "admin/timeline/agent_request.html"
INTERACTION = "interaction"
#: A block of text is cut here (an item may be up to a MiB).
MAX_BLOCK_CHARS = 5_000
#: Paseo's request kinds, in an operator's words.
KIND_WORDS = {
    "tool": "permission to use a tool",
    "plan": "approval of a plan",
    "question": "an answer to a question",
    "mode": "permission to change mode",
    "other": "a decision",
}
#: Keys of a request shown in the heading or as their own block, in this order; the rest follow.
HEADING_KEYS = ("title", "name", "kind", "id", "provider")
BLOCK_KEYS = (("description", "Description"), ("detail", "Detail"), ("input", "Input"), ("actions", "Choices"))
INDENT = "  "


def _scalar(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def outline(value: Any, depth: int = 0) -> str:
    """Any JSON value as indented plain text: ``key: value`` lines, ``- `` for list entries,
    strings as they are (their line breaks kept, continuation lines indented)."""
    pad = INDENT * depth
    if isinstance(value, dict):
        if not value:
            return f"{pad}(empty)"
        return "\n".join(_entry(f"{key}:", item, depth) for key, item in value.items())
    if isinstance(value, list):
        if not value:
            return f"{pad}(none)"
        return "\n".join(_entry("-", item, depth) for item in value)
    return "\n".join(pad + line for line in _scalar(value).split("\n"))


def _entry(label: str, value: Any, depth: int) -> str:
    pad = INDENT * depth
    if label == "-" and isinstance(value, dict) and value:
        # A list of objects reads as "- key: value" with the object's other keys aligned below.
        first, *rest = outline(value, depth + 1).split("\n")
        return "\n".join([f"{pad}- {first.lstrip(' ')}", *rest])
    if isinstance(value, dict | list) and value:
        return f"{pad}{label}\n{outline(value, depth + 1)}"
    first, *rest = outline(value).split("\n")
    return "\n".join([f"{pad}{label} {first}", *(pad + INDENT + line for line in rest)])


def _choices(actions: Any) -> str:
    """Paseo's actions as "Allow (allow)" lines; anything else as an outline."""
    if isinstance(actions, list) and all(isinstance(a, dict) and "label" in a for a in actions):
        return "\n".join(f"- {a['label']}" + (f" ({a['behavior']})" if a.get("behavior") else "") for a in actions)
    return outline(actions)


@dataclass
class RequestText:
    heading: str
    #: What the agent waits for, in words ("permission to use a tool"), when the request says.
    kind: str = ""
    #: (label, text) blocks, shown as preformatted text.
    blocks: list[tuple[str, str]] = field(default_factory=list)
    truncated: bool = False

    def add(self, label: str, text: str) -> None:
        if len(text) > MAX_BLOCK_CHARS:
            text, self.truncated = text[:MAX_BLOCK_CHARS], True
        self.blocks.append((label, text))


def describe_request(request: Any) -> RequestText:
    """``request`` (an interaction item's) as a heading and blocks of readable text."""
    if not isinstance(request, dict):
        described = RequestText(heading="Request")
        described.add("Request", outline(request))
        return described
    title, name = request.get("title"), request.get("name")
    heading = " · ".join(_scalar(part) for part in (title, name) if part not in (None, "")) or "Request"
    kind = request.get("kind")
    described = RequestText(heading=heading, kind=KIND_WORDS.get(kind, _scalar(kind)) if kind else "")
    for key, label in BLOCK_KEYS:
        if request.get(key) not in (None, "", {}, []):
            described.add(label, _choices(request[key]) if key == "actions" else outline(request[key]))
    known = {*HEADING_KEYS, *(key for key, _ in BLOCK_KEYS)}
    rest = {key: value for key, value in request.items() if key not in known and value is not None}
    ids = {key: request[key] for key in ("id", "provider") if request.get(key) not in (None, "")}
    if rest:
        described.add("More", outline(rest))
    if ids:
        described.add("Request", outline(ids))
    return described


def agent_request_section(agent: AgentSnapshot, params: QueryDict) -> dict[str, Any]:
    """The variables of the change page's request section: the newest interaction request, described
    (its row read with one index probe, ``timeline_agent_type_idx``)."""
    row = TimelineRow.objects.filter(agent_id=agent.pk, item_type=INTERACTION).order_by("-seq").first()
    if row is None:
        return {"interaction_request": None}
    item = row.item if isinstance(row.item, dict) else {}
    return {
        "interaction_request": describe_request(item.get("request")),
        "interaction_row": row,
        # Whether the agent is likely waiting on it: it needs attention for a permission, or for no
        # reason given (the row's time is shown: a daemon may commit it just before or after).
        "interaction_waiting": agent.requires_attention
        and agent.attention_reason in (None, AgentSnapshot.AttentionReason.PERMISSION),
    }
