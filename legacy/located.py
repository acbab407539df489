"""Every problem of a legacy file at once, each on its line.

A record's checks collect what is wrong with each of its keys (``Checks``)
instead of stopping at the first; ``file_problems`` turns them into one
``Problem`` per key, on the line where that key is written (the record's own
line when the key is missing). Lines are found only for a file with problems,
by walking its JSON a second time (``value_lines``).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legacy.problems import Problem, RecordError

#: Problems listed per file before the rest are summed up.
MAX_PROBLEMS_PER_FILE = 20

#: Where in a file's JSON: keys and array indexes from the top, ``()`` for the whole document.
JsonPath = tuple[str | int, ...]

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


class RecordErrors(RecordError):
    """Several problems of one record or file, each with the ``JsonPath`` it is about."""

    def __init__(self, errors: list[tuple[JsonPath, str]]):
        super().__init__("; ".join(message for _, message in errors))
        self.errors = errors


class Checks:
    """Runs a record's checks, keeping every failure with the key it is about."""

    def __init__(self) -> None:
        self.errors: list[tuple[JsonPath, str]] = []

    def run(self, key: str | JsonPath | None, check: Callable[..., Any], *args, **kwargs) -> Any:
        """``check(*args, **kwargs)``, or None when it fails (the failure is kept)."""
        try:
            return check(*args, **kwargs)
        except RecordErrors as exc:
            self.errors += exc.errors
        except RecordError as exc:
            self.errors.append((_path(key), str(exc)))
        return None

    def fail(self, key: str | JsonPath | None, message: str) -> None:
        self.errors.append((_path(key), message))

    def raise_any(self) -> None:
        if self.errors:
            raise RecordErrors(self.errors)


def _path(key: str | JsonPath | None) -> JsonPath:
    if key is None:
        return ()
    return (key,) if isinstance(key, str) else tuple(key)


def file_problems(path: Path, failures: list[tuple[JsonPath, str, RecordError]]) -> list[Problem]:
    """One ``Problem`` per error of each failure ``(prefix, label, error)``, on its line in
    ``path``, in the order of the lines: ``prefix`` is where the failed record sits in the
    file, ``label`` what follows the line (``[2]``: the record's index)."""
    if not failures:
        return []
    try:
        lines = value_lines(path.read_bytes().decode("utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        lines = {}
    located = []
    for prefix, label, exc in failures:
        for json_path, message in exc.errors if isinstance(exc, RecordErrors) else [((), str(exc))]:
            line = _nearest_line(lines, prefix + json_path)
            where = " ".join(part for part in (f"line {line}" if line else "", label) if part)
            located.append((line or 0, Problem(str(path), where, message)))
    located.sort(key=lambda pair: pair[0])
    return capped(path, [problem for _, problem in located])


def capped(path: Path, problems: list[Problem]) -> list[Problem]:
    """The first ``MAX_PROBLEMS_PER_FILE`` problems of the file ``path``, then how many more it has."""
    if len(problems) <= MAX_PROBLEMS_PER_FILE:
        return problems
    more = len(problems) - MAX_PROBLEMS_PER_FILE
    return [*problems[:MAX_PROBLEMS_PER_FILE], Problem(str(path), "", f"and {more} more problem(s) not listed")]


def _nearest_line(lines: dict[JsonPath, int], json_path: JsonPath) -> int | None:
    """The line of ``json_path``, or of the nearest enclosing value the file has."""
    for length in range(len(json_path), -1, -1):
        if json_path[:length] in lines:
            return lines[json_path[:length]]
    return None


def value_lines(text: str, *, depth: int = 3) -> dict[JsonPath, int]:
    """The line of every value down to ``depth`` levels of ``text`` (a valid JSON document);
    for an object's member, the line of its key. A repeated key keeps its last line, as
    ``json.loads`` keeps its last value."""
    newlines = [match.start() for match in re.finditer("\n", text)]
    lines: dict[JsonPath, int] = {}

    def line(position: int) -> int:
        return bisect.bisect_left(newlines, position) + 1

    def skip(position: int) -> int:
        return _SPACE.match(text, position).end()

    def walk(position: int, json_path: JsonPath, remaining: int) -> int:
        position = skip(position)
        lines.setdefault(json_path, line(position))
        opener = text[position : position + 1]
        if remaining and opener in ("[", "{"):
            closer, index = ("]" if opener == "[" else "}"), 0
            position = skip(position + 1)
            while text[position] != closer:
                if opener == "{":
                    key_line = line(position)
                    key, position = _DECODER.raw_decode(text, position)
                    position = skip(position) + 1  # the colon
                    lines[(*json_path, key)] = key_line
                    position = walk(position, (*json_path, key), remaining - 1)
                else:
                    position = walk(position, (*json_path, index), remaining - 1)
                index += 1
                position = skip(position)
                if text[position] == ",":
                    position = skip(position + 1)
            return position + 1
        return _DECODER.raw_decode(text, position)[1]

    walk(0, (), depth)
    return lines


def load_json(path: Path) -> Any:
    """The parsed file, or RecordError naming the line of a syntax error."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _JsonSyntax(exc) from None
    except ValueError as exc:  # e.g. an integer longer than Python's 4300-digit limit
        raise RecordError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise RecordError("invalid JSON: nested too deeply") from None


class _JsonSyntax(RecordError):
    def __init__(self, exc: json.JSONDecodeError):
        super().__init__(f"invalid JSON: {exc.msg} (column {exc.colno})")
        self.lineno = exc.lineno


def problems_of(path: Path, error: RecordError) -> list[Problem]:
    """The problems of a file that failed whole: its JSON syntax on the line it names, any other
    error on the lines of the keys it is about (``file_problems``)."""
    if isinstance(error, _JsonSyntax):
        return [Problem(str(path), f"line {error.lineno}", str(error))]
    return file_problems(path, [((), "", error)])


@dataclass
class ParsedArray:
    records: list = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: array indexes of invalid records, by the legacy id they claimed (if any)
    invalid_ids: set[str] = field(default_factory=set)


def parse_array_file(path: Path, parse, id_key: str) -> ParsedArray:
    result = ParsedArray()
    if not path.exists():
        return result
    try:
        items = load_json(path)
    except RecordError as exc:
        result.problems += problems_of(path, exc)
        return result
    if not isinstance(items, list):
        result.problems.append(Problem(str(path), "", f"expected a JSON array, found {type(items).__name__}"))
        return result
    failures = []
    for index, item in enumerate(items):
        try:
            record = parse(item)
        except RecordError as exc:
            failures.append(((index,), f"[{index}]", exc))
            if isinstance(item, dict) and isinstance(item.get(id_key), str):
                result.invalid_ids.add(item[id_key])
            continue
        record.source_file, record.location = str(path), f"[{index}]"
        result.records.append(record)
    result.problems += file_problems(path, failures)
    return result
