"""An invalid legacy file reports all of its problems at once, each on its line."""

from __future__ import annotations

import json

import pytest

from legacy.located import value_lines
from legacy.problems import LegacyImportInvalid
from legacy.services import import_legacy
from tests.legacy.builders import paseo_file_name, paseo_row
from tests.legacy.conftest import dump_database

pytestmark = pytest.mark.django_db


def problems_of(home) -> list[tuple[str, str, str]]:
    before = dump_database()
    with pytest.raises(LegacyImportInvalid) as exc:
        import_legacy(source=home.root)
    assert dump_database() == before
    return [(p.path.removeprefix(str(home.root) + "/"), p.location, p.reason) for p in exc.value.problems]


def test_every_problem_of_a_project_record_on_its_own_line(legacy_home):
    legacy_home.project("p1", "/srv/one")
    # A record without rootPath, with a bad kind and a bad time: [1], written from line 11.
    legacy_home.project("p2", "/srv/two", kind="svn", createdAt="yesterday")
    del legacy_home.projects[1]["rootPath"]
    legacy_home.save()
    assert problems_of(legacy_home) == [
        ("projects/projects.json", "line 11 [1]", "rootPath is required"),
        ("projects/projects.json", "line 13 [1]", "kind must be one of 'git', 'non_git', not 'svn'"),
        ("projects/projects.json", "line 15 [1]", "createdAt is not an ISO 8601 time: 'yesterday'"),
    ]


def test_a_directory_of_the_wrong_type_names_its_key(legacy_home):
    legacy_home.project("p1", "/srv/one")
    legacy_home.workspace("w1", "p1", "/srv/one")
    legacy_home.workspaces[0]["cwd"] = 7
    legacy_home.save()
    ((path, location, reason),) = problems_of(legacy_home)
    assert (path, location, reason) == ("projects/workspaces.json", "line 5 [0]", "cwd must be a string, not int")


def test_every_problem_of_an_agent_file_on_its_own_line(legacy_home):
    path = legacy_home.agent(
        "a1", "/srv/one", provider=None, lastStatus="sleeping", labels={"a": 1}, requiresAttention="yes"
    )
    legacy_home.save()
    text = path.read_text().splitlines()

    def line_of(key: str) -> str:
        start = '  "' + key + '"'
        return "line " + str(next(n for n, line in enumerate(text, 1) if line.startswith(start)))

    statuses = "initializing, idle, running, error, closed"
    assert problems_of(legacy_home) == [
        ("agents/srv-one/a1.json", line_of("provider"), "provider is required"),
        ("agents/srv-one/a1.json", line_of("labels"), "labels must map strings to strings"),
        ("agents/srv-one/a1.json", line_of("lastStatus"), f"lastStatus must be one of {statuses}, not 'sleeping'"),
        ("agents/srv-one/a1.json", line_of("requiresAttention"), "requiresAttention must be true or false"),
    ]


def test_a_missing_key_is_reported_on_the_record_s_line(legacy_home):
    legacy_home.agent("a1", "/srv/one")
    path = next((legacy_home.root / "agents").rglob("a1.json"))
    record = json.loads(path.read_text())
    del record["cwd"], record["createdAt"]
    path.write_text(json.dumps(record, indent=2))
    assert [problem[1:] for problem in problems_of(legacy_home)] == [
        ("line 1", "createdAt is required"),
        ("line 1", "cwd is required"),
    ]


def test_every_bad_row_of_a_paseo_history_file_on_its_line(legacy_home):
    legacy_home.agent("a1", "/srv/one")
    rows = [paseo_row(1), {**paseo_row(2), "timestamp": "soon"}, paseo_row(3), {**paseo_row(4), "seq": 0}]
    document = {"version": 1, "epoch": "ep", "rows": rows}
    path = legacy_home.write_file(
        legacy_home.root / "agent-timelines" / paseo_file_name("a1"), json.dumps(document, indent=2)
    )
    legacy_home.save()
    text = path.read_text().splitlines()
    timestamp_line = next(n for n, line in enumerate(text, 1) if '"soon"' in line)
    seq_line = next(n for n, line in enumerate(text, 1) if '"seq": 0' in line)
    assert [problem[1:] for problem in problems_of(legacy_home)] == [
        (f"line {timestamp_line}", "rows[1].timestamp must be an ISO 8601 time or epoch milliseconds, not 'soon'"),
        (f"line {seq_line}", "rows[3].seq must be a positive integer, not 0"),
    ]


def test_value_lines_finds_keys_elements_and_the_last_of_a_repeated_key():
    text = '[\n  {"a": 1,\n   "b": {"c": [1,\n 2]}},\n  "x", {"a": 1, "a":\n 2}\n]'
    lines = value_lines(text)
    assert lines[()] == 1 and lines[(0,)] == 2 and lines[(0, "a")] == 2 and lines[(0, "b")] == 3
    assert lines[(0, "b", "c")] == 3 and (0, "b", "c", 1) not in lines  # three levels down, no further
    assert lines[(1,)] == 5 and lines[(2,)] == 5 and lines[(2, "a")] == 5
    assert value_lines('{"k":\n\n 1}')[("k",)] == 1  # a member is on its key's line
    assert value_lines('{"k": 1,\n "k": 2}')[("k",)] == 2


def test_a_file_lists_twenty_problems_then_how_many_more(legacy_home):
    for n in range(25):
        legacy_home.project(f"p{n}", f"/srv/p{n}", kind="svn")
    legacy_home.agent("a1", "/srv/p0")
    # Every row's seq is off by one from the row before it: each line is a problem.
    legacy_home.timeline("a1", [{"seq": 2 * n + 2} for n in range(25)])
    legacy_home.save()
    found = problems_of(legacy_home)
    for path in ("projects/projects.json", "timelines/a1.jsonl"):
        listed = [(location, reason) for where, location, reason in found if where == path]
        assert len(listed) == 21
        assert listed[-1] == ("", "and 5 more problem(s) not listed")
