"""Item values as HTML a person can read, for the admin's timeline page.

A value becomes a ``Block``: a text with its real line breaks, JSON
pretty-printed and coloured by token (keys, strings, numbers, literals), or a
diff coloured by line; a block longer than its fold shows its first lines and
folds the rest. A search's words are marked (``<mark>``) the way the search
matched them (``timeline.search.base.query_terms``: whole words, any case,
a quoted phrase as its words in order). Every piece of text is escaped here,
before any markup is added, so an item's ``<script>`` is shown, never run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString

from timeline.search.base import query_terms

#: A rendered block is cut here; an item may be up to a MiB.
MAX_RENDERED_CHARS = 20_000
#: A tool call's input or output shows this many lines first, then folds the middle...
TOOL_FOLD_AFTER_LINES = 8
#: ...and shows this many last lines (a test run's failure summary, a command's last error).
TOOL_TAIL_LINES = 8
#: A message shows this many lines, the rest folded.
TEXT_FOLD_AFTER_LINES = 20
#: The keys whose text is a diff.
DIFF_KEYS = frozenset({"unifiedDiff", "diff", "patch"})

_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\btrue\b|\bfalse\b|\bnull\b')
_KEY_AFTER = re.compile(r"\s*:")


def search_pattern(query: str) -> re.Pattern | None:
    """What ``query`` matches in a text, as the search matches rows (None: no word in it)."""
    terms = query_terms(query)
    if not terms:
        return None
    # Longest first, so a phrase wins over one of its words.
    alternatives = sorted((r"\W+".join(re.escape(word) for word in words) for words in terms), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def marked(text: str, pattern: re.Pattern | None) -> SafeString:
    """``text`` escaped, its matches of ``pattern`` in ``<mark>``."""
    if pattern is None:
        return SafeString(escape(text))
    parts: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        parts.append(escape(text[position : match.start()]))
        parts.append(f'<mark class="tl-mark">{escape(match.group())}</mark>')
        position = match.end()
    parts.append(escape(text[position:]))
    return SafeString("".join(parts))


def _span(css: str, text: str, pattern: re.Pattern | None) -> str:
    return f'<span class="{css}">{marked(text, pattern)}</span>'


def json_line(line: str, pattern: re.Pattern | None = None) -> SafeString:
    """One line of indented JSON, its tokens in ``<span class="tl-j-…">``."""
    parts: list[str] = []
    position = 0
    for token in _JSON_TOKEN.finditer(line):
        parts.append(escape(line[position : token.start()]))
        text = token.group()
        if text.startswith('"'):
            css = "tl-j-key" if _KEY_AFTER.match(line, token.end()) else "tl-j-str"
        elif text[0] in "-0123456789":
            css = "tl-j-num"
        else:
            css = "tl-j-lit"
        # Keys are not a row's text (the search reads string values only): never marked.
        parts.append(_span(css, text, None if css == "tl-j-key" else pattern))
        position = token.end()
    parts.append(escape(line[position:]))
    return SafeString("".join(parts))


def diff_line(line: str, pattern: re.Pattern | None = None) -> SafeString:
    """One line of a unified diff, coloured by what it does."""
    if line.startswith(("+++", "---")):
        css = "tl-d-file"
    elif line.startswith("@@"):
        css = "tl-d-hunk"
    elif line.startswith("+"):
        css = "tl-d-add"
    elif line.startswith("-"):
        css = "tl-d-del"
    else:
        return marked(line, pattern)
    return SafeString(_span(css, line, pattern))


@dataclass(frozen=True)
class Block:
    """A value shown as lines: ``head`` and ``tail`` always, ``rest`` between them folded (``folded_lines`` of them)."""

    label: str
    #: "text", "json", "diff" or "value" (a one-line scalar).
    kind: str
    head: SafeString
    rest: SafeString
    folded_lines: int
    #: Whether the search's words are in ``head`` or ``rest``.
    marked: bool = False
    rest_marked: bool = False
    truncated: bool = False
    #: The last lines, shown after the fold (empty when nothing is folded or the value keeps no tail).
    tail: SafeString = SafeString("")


def _clip(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_RENDERED_CHARS:
        return text, False
    return text[:MAX_RENDERED_CHARS], True


def _lines_block(
    label: str, kind: str, lines: list[SafeString], fold_after: int, truncated: bool, keep_tail: int = 0
) -> Block:
    """The first ``fold_after`` lines, the last ``keep_tail`` ones, and the middle folded between them
    (nothing folded when it all fits)."""
    if len(lines) <= fold_after + keep_tail:
        head, rest, tail = lines, [], []
    else:
        head, rest, tail = (
            lines[:fold_after],
            lines[fold_after : len(lines) - keep_tail],
            lines[len(lines) - keep_tail :],
        )
    head_html, rest_html, tail_html = (SafeString("\n".join(part)) for part in (head, rest, tail))
    return Block(
        label=label,
        kind=kind,
        head=head_html,
        rest=rest_html,
        tail=tail_html,
        folded_lines=len(rest),
        marked=any("<mark" in part for part in (head_html, rest_html, tail_html)),
        rest_marked="<mark" in rest_html,
        truncated=truncated,
    )


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def text_block(
    label: str, text: str, *, pattern=None, fold_after=TEXT_FOLD_AFTER_LINES, kind="text", keep_tail=0
) -> Block:
    """``text`` with its own line breaks (``kind`` "diff" colours it as one)."""
    text, truncated = _clip(text.rstrip("\n"))
    render = diff_line if kind == "diff" else marked
    lines = [render(line, pattern) for line in text.split("\n")]
    return _lines_block(label, kind, lines, fold_after, truncated, keep_tail)


def json_block(label: str, value: Any, *, pattern=None, fold_after=TOOL_FOLD_AFTER_LINES, keep_tail=0) -> Block:
    """``value`` as indented, coloured JSON."""
    text, truncated = _clip(pretty_json(value))
    lines = [json_line(line, pattern) for line in text.split("\n")]
    return _lines_block(label, "json", lines, fold_after, truncated, keep_tail)


def _parsed_json(text: str) -> Any:
    """The object or array ``text`` holds, or None when it is not one."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_RENDERED_CHARS:
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _looks_like_diff(text: str) -> bool:
    return text.startswith(("diff --git ", "--- ", "@@ ")) and "\n" in text


def value_block(
    label: str, value: Any, *, pattern=None, fold_after=TOOL_FOLD_AFTER_LINES, keep_tail=TOOL_TAIL_LINES
) -> Block:
    """Whatever ``value`` is, as the block that reads best: a text keeps its lines (a diff
    coloured, a text that holds a JSON object or array pretty-printed), an object or an
    array is JSON, a number, a boolean or null one coloured token. A long one shows its
    first ``fold_after`` and last ``keep_tail`` lines, the middle folded."""
    if isinstance(value, str):
        parsed = _parsed_json(value)
        if parsed is not None:
            return json_block(label, parsed, pattern=pattern, fold_after=fold_after, keep_tail=keep_tail)
        kind = "diff" if label in DIFF_KEYS or _looks_like_diff(value) else "text"
        return text_block(label, value, pattern=pattern, fold_after=fold_after, kind=kind, keep_tail=keep_tail)
    if isinstance(value, dict | list):
        return json_block(label, value, pattern=pattern, fold_after=fold_after, keep_tail=keep_tail)
    return _lines_block(label, "value", [json_line(pretty_json(value), pattern)], fold_after, False)


def one_line(value: Any, limit: int = 100) -> str:
    """``value``'s first line, cut to ``limit`` characters (a summary's preview)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _strings(value: Any) -> list[str]:
    """Every string value inside ``value`` (keys left out, as the search leaves them out), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def snippet(value: Any, pattern: re.Pattern | None, *, around: int = 80) -> SafeString:
    """The text around the first match of ``pattern`` in ``value``'s strings, on one line, the words marked
    ("… the refund <mark>rounding</mark> is off by …"); the start of the text when nothing matches."""
    if isinstance(value, dict):
        value = {key: part for key, part in value.items() if key != "type"}  # the item's type is no text of it
    text = " ".join(" ".join(_strings(value)).split())
    match = pattern.search(text) if pattern is not None else None
    if match is None:
        return marked(text[: 2 * around] + ("…" if len(text) > 2 * around else ""), pattern)
    start, end = max(match.start() - around, 0), min(match.end() + around, len(text))
    return SafeString(("…" if start else "") + marked(text[start:end], pattern) + ("…" if end < len(text) else ""))
