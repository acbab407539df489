from __future__ import annotations

import datetime as dt

import pytest

from legacy import jsonl, paseo
from legacy.problems import RecordError
from legacy.records import agent_files, parse_agent, parse_project, parse_time, parse_workspace

BASE_AGENT = {
    "id": "a1",
    "provider": "codex",
    "cwd": "/srv/x",
    "createdAt": "2024-01-01T00:00:00Z",
    "updatedAt": "2024-01-01T00:00:00Z",
}


class TestTimes:
    def test_z_offsets_and_naive_times_are_utc(self):
        assert parse_time({"t": "2024-01-02T03:04:05.678Z"}, "t") == dt.datetime(
            2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC
        )
        assert parse_time({"t": "2024-01-02T03:04:05"}, "t").tzinfo == dt.UTC
        assert parse_time({"t": "2024-01-02T05:04:05+02:00"}, "t") == parse_time({"t": "2024-01-02T03:04:05Z"}, "t")

    @pytest.mark.parametrize("value", ["soon", 1700000000, ""])
    def test_bad_times_are_refused(self, value):
        with pytest.raises(RecordError, match="t "):
            parse_time({"t": value}, "t")


class TestRecords:
    def test_project_kinds_map_and_unknown_keys_are_ignored(self):
        record = {
            "projectId": "p",
            "rootPath": "/a//b/",
            "kind": "non_git",
            "createdAt": "2024-01-01T00:00:00Z",
            "updatedAt": "2024-01-01T00:00:00Z",
            "archivedAt": None,
            "projectKey": "k",
            "customName": "c",
        }
        project = parse_project(record)
        assert (project.directory, project.kind, project.display_name) == ("/a/b", "directory", "b")

    def test_workspace_kinds_map(self):
        base = {
            "workspaceId": "w",
            "projectId": "p",
            "cwd": "/a",
            "createdAt": "2024-01-01T00:00:00Z",
            "updatedAt": "2024-01-01T00:00:00Z",
        }
        assert [parse_workspace({**base, "kind": k}).kind for k in ("local_checkout", "directory", "worktree")] == [
            "checkout",
            "directory",
            "worktree",
        ]
        with pytest.raises(RecordError, match="kind must be one of"):
            parse_workspace({**base, "kind": "checkout"})

    def test_agent_defaults(self):
        agent = parse_agent(BASE_AGENT)
        assert agent.fields["lifecycle"] == "closed"
        assert agent.fields["persistence"] == {} and agent.fields["labels"] == {}
        assert agent.archived_at is None and agent.cwd == "/srv/x"

    @pytest.mark.parametrize(
        "change, reason",
        [
            ({"id": "bad id"}, "id: An agent id is"),
            ({"provider": None}, "provider is required"),
            ({"cwd": "relative"}, "cwd: Directory must be an absolute path."),
            ({"cwd": ""}, "cwd must not be empty"),
            ({"cwd": 7}, "cwd must be a string, not int"),
            ({"cwd": None}, "cwd is required"),
            ({"labels": {"a": 1}}, "labels must map strings to strings"),
            ({"lastStatus": "sleeping"}, "lastStatus must be one of"),
            ({"requiresAttention": "yes"}, "requiresAttention must be true or false"),
            ({"attentionReason": "bored"}, "attentionReason must be one of"),
            ({"config": []}, "config must be a JSON object"),
            ({"title": "x" * 513}, "title: Ensure this value has at most 512 characters"),
            ({"updatedAt": None}, "updatedAt is required"),
        ],
    )
    def test_invalid_agents_say_why(self, change, reason):
        with pytest.raises(RecordError, match=reason.replace("(", r"\(")):
            parse_agent({**BASE_AGENT, **change})


class TestAgentFiles:
    def test_both_layouts_tmp_leftovers_and_strays(self, tmp_path):
        agents = tmp_path / "agents"
        (agents / "srv-x").mkdir(parents=True)
        for name in (
            "srv-x/a1.json",
            "a2.json",
            "srv-x/.agent.tmp-1",
            ".agent.tmp-2.json",
            "README",
            "srv-x/notes.txt",
        ):
            (agents / name).write_text("{}")
        files, leftovers, others = agent_files(agents)
        assert [p.relative_to(agents).as_posix() for p in files] == ["a2.json", "srv-x/a1.json"]
        assert [p.relative_to(agents).as_posix() for p in leftovers] == [".agent.tmp-2.json", "srv-x/.agent.tmp-1"]
        assert [p.relative_to(agents).as_posix() for p in others] == ["README", "srv-x/notes.txt"]


class TestJsonlLines:
    def test_only_an_unterminated_last_line_counts_as_truncated(self, tmp_path):
        path = tmp_path / "t.jsonl"
        path.write_bytes(b'{"a": 1}\n\n{broken\n{"b": 2}\n{"c": 3')
        lines = list(jsonl.read_lines(path))
        assert [(line.lineno, line.value, line.error is not None, line.truncated) for line in lines] == [
            (1, {"a": 1}, False, False),
            (3, None, True, False),
            (4, {"b": 2}, False, False),
            (5, None, True, True),
        ]

    def test_a_complete_last_line_without_newline_is_a_row(self, tmp_path):
        path = tmp_path / "t.jsonl"
        path.write_bytes(b'{"a": 1}\n{"b": 2}')
        assert [line.value for line in jsonl.read_lines(path)] == [{"a": 1}, {"b": 2}]

    def test_invalid_utf8_is_an_error_not_a_crash(self, tmp_path):
        path = tmp_path / "t.jsonl"
        path.write_bytes(b'{"a": "\xff"}\n')
        (line,) = jsonl.read_lines(path)
        assert line.error and not line.truncated

    @pytest.mark.parametrize(
        "value, reason",
        [
            ({"type": "other"}, "line 1 must be the header"),
            ({"type": "chartr.timeline", "version": 2, "agent_id": "a", "epoch": "e"}, "unsupported format version 2"),
            ({"type": "chartr.timeline", "version": 1, "agent_id": "a b", "epoch": "e"}, "not a valid agent id"),
            ({"type": "chartr.timeline", "version": 1, "agent_id": "a", "epoch": "e" * 129}, "header epoch"),
        ],
    )
    def test_bad_headers(self, value, reason):
        with pytest.raises(RecordError, match=reason):
            jsonl.parse_header(value)

    @pytest.mark.parametrize(
        "value, reason",
        [
            ([], "a row must be a JSON object"),
            ({"seq": True}, "seq must be a positive integer"),
            ({"seq": 0}, "seq must be a positive integer"),
            ({"seq": 2}, "seq 2 where 1 was expected"),
            (
                {"seq": 1, "committed_at": "2024-01-01T00:00:00Z", "item_id": 5, "item": {"type": "t"}},
                "item_id must be",
            ),
            ({"seq": 1, "committed_at": "2024-01-01T00:00:00Z", "item": "text"}, "item must be a JSON object"),
            ({"seq": 1, "committed_at": "2024-01-01T00:00:00Z", "item": {"type": "t" * 65}}, 'item must have a "type"'),
            (
                {"seq": 1, "committed_at": "2024-01-01T00:00:00Z", "item": {"type": "t"}, "turn_id": ""},
                "turn_id must be null or a string of 1 to 256 characters, not ''",
            ),
            ({"seq": 1, "item": {"type": "t"}}, "committed_at is required"),
        ],
    )
    def test_bad_rows(self, value, reason):
        with pytest.raises(RecordError, match=reason):
            jsonl.parse_row(value, expected_seq=1)

    def test_a_row_time_without_its_offset_is_utc_and_its_keys_come_over(self):
        row = jsonl.parse_row(
            {
                "seq": 1,
                "committed_at": "2024-01-01T10:00:00",
                "item": {"type": "t"},
                "turn_id": "t1",
                "revert_token": None,
            },
            expected_seq=1,
        )
        assert row.committed_at == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
        assert (row.turn_id, row.revert_token_json, row.extra_json) == ("t1", "null", None)


class TestPaseoRows:
    def test_a_row_keeps_every_key_and_reads_paseo_times(self):
        row = paseo.parse_row(
            {
                "seq": 3,
                "timestamp": 1_700_000_000_000,
                "item": {"type": "t"},
                "turnId": "",
                "revertToken": None,
                "x": 1,
            },
            index=0,
        )
        assert row.committed_at == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
        assert (row.turn_id, row.revert_token_json, row.extra) == (None, "null", {"x": 1})
        naive = paseo.parse_row({"seq": 1, "timestamp": "2024-01-01T10:00:00", "item": {"type": "t"}}, index=0)
        assert naive.committed_at == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC) and naive.revert_token_json is None

    @pytest.mark.parametrize(
        "value, reason",
        [
            ({"seq": 0}, r"rows\[2\]\.seq must be a positive integer, not 0"),
            ({"turnId": 5}, r"rows\[2\]\.turnId must be null or a string of 1 to 256 characters, not 5"),
            ({"timestamp": 1e30}, r"rows\[2\]\.timestamp must be an ISO 8601 time or epoch milliseconds, not 1e\+30"),
            ({"timestamp": None}, r"rows\[2\]\.timestamp must be an ISO 8601 time or epoch milliseconds, not None"),
            ({"item": []}, r"rows\[2\]\.item must be a JSON object"),
        ],
    )
    def test_bad_rows_name_their_key(self, value, reason):
        with pytest.raises(RecordError, match=reason):
            paseo.parse_row({"seq": 1, "timestamp": "2024-01-01T00:00:00Z", "item": {"type": "t"}, **value}, index=2)
