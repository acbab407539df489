"""Bad input names the file and the line, and nothing is imported."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claude_code.models import ClaudeCodeSession
from legacy.models import ImportRun
from portability.format import canonical
from registry.models import Project
from snapshots.models import AgentSnapshot
from tests.portability.builders import build_instance
from timeline.models import TimelineRow
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def exported(tmp_path) -> list[str]:
    """The lines of an export (with tokens) of the built instance; the database is emptied after it."""
    build_instance()
    out = tmp_path / "instance.jsonl"
    call_command("export_instance", str(out), "--with-tokens")
    Project.objects.all().delete()
    ApiToken.objects.all().delete()
    ImportRun.objects.all().delete()
    return out.read_text().splitlines(keepends=True)


def _line_of(lines: list[str], kind: str, nth: int = 0) -> int:
    """The index of the ``nth`` line of ``kind``."""
    return [i for i, line in enumerate(lines) if json.loads(line).get("type") == kind][nth]


def _import_fails(tmp_path, lines: list[str], match: str) -> str:
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(lines))
    with pytest.raises(CommandError) as failed:
        call_command("import_instance", str(path))
    assert str(path) in str(failed.value) and "Nothing was imported" in str(failed.value)
    assert failed.match(match), str(failed.value)
    assert not Project.objects.exists() and not AgentSnapshot.objects.exists() and not ApiToken.objects.exists()
    return str(failed.value)


def _edit(lines: list[str], index: int, **changes) -> list[str]:
    record = json.loads(lines[index])
    record.update(changes)
    for key in [k for k, v in changes.items() if v is _DROP]:
        del record[key]
    return [*lines[:index], json.dumps(record) + "\n", *lines[index + 1 :]]


_DROP = object()


def test_a_file_that_is_not_an_export_is_refused_at_line_1(tmp_path, exported):
    _import_fails(tmp_path, ['{"type": "chartr.timeline", "version": 1}\n'], r":1: not a chartr instance export")


def test_another_format_version_is_refused(tmp_path, exported):
    _import_fails(tmp_path, _edit(exported, 0, version=2), r":1: format version 2 is not supported")


def test_invalid_json_names_its_line(tmp_path, exported):
    index = _line_of(exported, "agent")
    edited = [*exported[:index], "{not json\n", *exported[index + 1 :]]
    _import_fails(tmp_path, edited, rf":{index + 1}: invalid JSON")


def test_an_unknown_key_names_its_line(tmp_path, exported):
    index = _line_of(exported, "project", 1)
    _import_fails(tmp_path, _edit(exported, index, colour="red"), rf":{index + 1}: project: unknown key\(s\): colour")


def test_a_missing_key_names_its_line(tmp_path, exported):
    index = _line_of(exported, "agent", 2)
    _import_fails(tmp_path, _edit(exported, index, provider=_DROP), rf":{index + 1}: agent: missing key\(s\): provider")


def test_a_value_of_the_wrong_type_names_its_line(tmp_path, exported):
    index = _line_of(exported, "workspace")
    _import_fails(tmp_path, _edit(exported, index, created_at=12), rf":{index + 1}: workspace: created_at must be")


def test_a_reference_to_a_record_not_in_the_file_names_its_line(tmp_path, exported):
    index = _line_of(exported, "agent")
    _import_fails(tmp_path, _edit(exported, index, workspace=999), rf":{index + 1}: agent: workspace 999 is not in")


def test_a_parent_not_in_the_file_names_its_line(tmp_path, exported):
    index = _line_of(exported, "agent", 1)
    _import_fails(
        tmp_path, _edit(exported, index, parent="gone"), rf":{index + 1}: agent: parent 'gone' is not an agent"
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"item_type": ""}, "item_type must be a string of 1 to 64 characters, not ''"),
        ({"committed_at": "2026-01-02T03:04:05"}, "committed_at must be an ISO 8601 time with its UTC offset"),
        ({"turn_id": "t" * 257}, "turn_id must be null or a string of at most 256 characters"),
        ({"item": []}, r"item must be a JSON object, not \[\]"),
        ({"revision": 0}, "revision must be a positive integer, not 0"),
    ],
)
def test_a_bad_row_key_names_the_key_and_its_line(tmp_path, exported, changes, message):
    index = _line_of(exported, "row", 2)
    _import_fails(tmp_path, _edit(exported, index, **changes), rf":{index + 1}: row: {message}")


def test_rows_out_of_order_name_their_line(tmp_path, exported):
    index = _line_of(exported, "row", 3)
    seq = json.loads(exported[index - 1])["seq"]
    _import_fails(tmp_path, _edit(exported, index, seq=seq), rf":{index + 1}: row: seq must be an integer above {seq}")


def test_a_duplicate_key_refused_by_the_database_names_the_lines(tmp_path, exported):
    first, second = _line_of(exported, "project"), _line_of(exported, "project", 1)
    edited = _edit(exported, second, id=json.loads(exported[first])["id"])
    _import_fails(tmp_path, edited, rf": lines {first + 1}-\d+: the database refused it")


def test_a_file_cut_short_is_refused(tmp_path, exported):
    _import_fails(tmp_path, exported[:-3], r"ends before its 'end' record: the file is incomplete")
    _import_fails(
        tmp_path, [*exported[:-1], exported[-1].rstrip("\n")], rf":{len(exported)}: the last line is cut short"
    )


def test_a_changed_row_fails_the_content_hash_of_its_agent(tmp_path, exported):
    index = _line_of(exported, "row", 5)
    record = json.loads(exported[index])
    record["item"]["text"] = "edited"
    edited = [*exported[:index], json.dumps(record) + "\n", *exported[index + 1 :]]
    _import_fails(tmp_path, edited, r"does not read back as exported: content hash")


def test_counts_that_do_not_match_are_refused(tmp_path, exported):
    end = json.loads(exported[-1])
    end["counts"]["row"] += 1
    _import_fails(tmp_path, [*exported[:-1], json.dumps(end) + "\n"], rf":{len(exported)}: the end record counts")


def test_tokens_in_an_export_made_without_them_are_refused(tmp_path, exported):
    index = _line_of(exported, "api_token")
    _import_fails(tmp_path, _edit(exported, 0, with_tokens=False), rf":{index + 1}: an api_token record in an export")


def test_a_timeline_of_an_agent_not_in_the_file_names_its_line(tmp_path, exported):
    index = _line_of(exported, "timeline")
    _import_fails(tmp_path, _edit(exported, index, agent_id="nobody"), rf":{index + 1}: Agent nobody does not exist")


def test_a_timeline_range_that_cannot_be_is_refused(tmp_path, exported):
    index = _line_of(exported, "timeline")
    _import_fails(
        tmp_path,
        _edit(exported, index, min_seq=0),
        rf":{index + 1}: Timeline of \S+: min_seq 0 is outside 1..head_seq \+ 1",
    )


def _revision(**changes) -> str:
    record = {
        "type": "row_revision",
        "seq": 7,
        "revision": 1,
        "replaced_at": "2026-01-02T03:04:05+00:00",
        "committed_at": "2026-01-01T03:04:05+00:00",
        "item_type": "user_message",
        "item": {"type": "user_message", "text": "before"},
        "turn_id": None,
        "provider_message_id": None,
        "provider_timeline_item_id": None,
    }
    record.update(changes)
    return json.dumps(record) + "\n"


def _before_the_end_of(lines: list[str], agent_id: str, *added: str) -> tuple[list[str], int]:
    end = next(
        i
        for i, line in enumerate(lines)
        if json.loads(line).get("type") == "timeline_end" and json.loads(line)["agent_id"] == agent_id
    )
    return [*lines[:end], *added, *lines[end:]], end + 1


def test_an_earlier_version_of_a_seq_that_holds_no_row_names_its_line(tmp_path, exported):
    # "carried" holds seqs 5, 6 and 9: no row at 7.
    lines, lineno = _before_the_end_of(exported, "carried", _revision())
    _import_fails(tmp_path, lines, rf":{lineno}: .*earlier version of seq 7, which holds no row")


def test_an_earlier_version_with_a_bad_revision_names_its_line(tmp_path, exported):
    lines, lineno = _before_the_end_of(exported, "carried", _revision(seq=5, revision=0))
    _import_fails(tmp_path, lines, rf":{lineno}: row_revision: revision must be a positive integer")


def test_a_token_written_before_expiries_existed_imports_without_one(tmp_path, exported):
    index = _line_of(exported, "api_token")
    path = tmp_path / "older.jsonl"
    path.write_text("".join(_edit(exported, index, expires_at=_DROP)))

    call_command("import_instance", str(path))

    assert ApiToken.objects.filter(expires_at__isnull=True).count() == ApiToken.objects.count() > 0


def _rehashed(records: list[dict]) -> list[str]:
    """``records`` as an export's lines, each agent's ``timeline_end`` hash computed over its records as
    they stand (docs/portability.md, The content hash)."""
    agents = {record["agent_id"]: record for record in records if record.get("type") == "agent"}
    digest = None
    for record in records:
        if record.get("type") == "timeline":
            digest = hashlib.sha256()
            digest.update((canonical(agents[record["agent_id"]]) + "\n").encode())
        if record.get("type") == "timeline_end":
            record["sha256"], digest = digest.hexdigest(), None
        elif digest is not None:
            digest.update((canonical(record) + "\n").encode())
    return [canonical(record) + "\n" for record in records]


def _as_written_before_sessions(lines: list[str]) -> list[str]:
    """The export as chartr wrote it before Claude Code sessions were carried: no such record, and no
    count of them in the header or the end record (the agents and their hashes are unchanged)."""
    records = [json.loads(line) for line in lines]
    records = [record for record in records if record.get("type") != "claude_code_session"]
    for counted in (records[0], records[-1]):
        assert counted["counts"].pop("claude_code_session") == 4
    return [canonical(record) + "\n" for record in records]


def _as_written_before_parents(lines: list[str]) -> list[str]:
    """The export as chartr wrote it before agents had a ``parent`` (and so before Claude Code sessions
    were carried): no agent record has the key, and each agent's ``timeline_end`` hashes its record
    without it (the rest of the hash is unchanged)."""
    records = [json.loads(line) for line in _as_written_before_sessions(lines)]
    for record in records:
        if record.get("type") == "agent":
            record.pop("parent")  # a subagent's reads as null: the file could not say it
    return _rehashed(records)


def test_a_file_written_before_parents_existed_imports_and_its_hashes_hold(tmp_path, exported):
    path = tmp_path / "older.jsonl"
    path.write_text("".join(_as_written_before_parents(exported)))

    call_command("import_instance", str(path))

    assert AgentSnapshot.objects.count() == sum('"type":"agent"' in line for line in path.read_text().splitlines())
    assert not AgentSnapshot.objects.filter(parent__isnull=False).exists()


def test_a_hash_written_without_parent_does_not_cover_a_record_that_has_it(tmp_path, exported):
    older = _as_written_before_parents(exported)
    index = _line_of(older, "agent")
    _import_fails(tmp_path, _edit(older, index, parent=None), r"does not read back as exported: content hash")


def test_an_empty_turn_id_a_database_holds_moves_with_its_row(tmp_path, exported):
    """The API refuses an empty turn id, but an earlier JSONL import stored some: the move keeps them."""
    records = [json.loads(line) for line in exported]
    index = _line_of(exported, "row", 2)
    records[index]["turn_id"] = ""
    agent_id = next(r["agent_id"] for r in reversed(records[:index]) if r.get("type") == "timeline")
    path = tmp_path / "empty-turn.jsonl"
    path.write_text("".join(_rehashed(records)))

    call_command("import_instance", str(path))

    assert TimelineRow.objects.get(agent_id=agent_id, seq=records[index]["seq"]).turn_id == ""


def test_a_file_written_before_sessions_were_carried_imports_and_its_hashes_hold(tmp_path, exported, capsys):
    path = tmp_path / "older.jsonl"
    path.write_text("".join(_as_written_before_sessions(exported)))

    call_command("import_instance", str(path))

    assert "content hash of each of 11 agent(s)" in capsys.readouterr().out
    assert AgentSnapshot.objects.count() == 11 and not ClaudeCodeSession.objects.exists()


def test_a_session_of_an_agent_not_in_the_file_names_its_line(tmp_path, exported):
    index = _line_of(exported, "claude_code_session", 2)
    _import_fails(
        tmp_path,
        _edit(exported, index, agent="claude-code-gone"),
        rf":{index + 1}: claude_code_session: agent 'claude-code-gone' is not in the file before it",
    )


def test_a_session_key_the_api_would_refuse_names_its_line(tmp_path, exported):
    index = _line_of(exported, "claude_code_session", 1)
    _import_fails(tmp_path, _edit(exported, index, subpath="../up"), rf":{index + 1}: claude_code_session: Must be a")
    _import_fails(
        tmp_path, _edit(exported, index, namespace="a b"), rf":{index + 1}: claude_code_session: 1 to 64 characters"
    )


def test_a_session_value_of_the_wrong_type_names_its_line(tmp_path, exported):
    index = _line_of(exported, "claude_code_session")
    _import_fails(
        tmp_path,
        _edit(exported, index, summary_version=-1),
        rf":{index + 1}: claude_code_session: summary_version: ",
    )
    _import_fails(
        tmp_path, _edit(exported, index, mtime_ms="soon"), rf":{index + 1}: claude_code_session: mtime_ms must be"
    )
    _import_fails(
        tmp_path,
        _edit(exported, index, summary=_DROP),
        rf":{index + 1}: claude_code_session: missing key\(s\): summary",
    )


def test_a_summary_on_a_subagent_is_refused_by_the_database(tmp_path, exported):
    first = _line_of(exported, "claude_code_session")
    sub = next(
        i
        for i, line in enumerate(exported)
        if json.loads(line).get("type") == "claude_code_session" and json.loads(line)["subpath"]
    )
    _import_fails(
        tmp_path, _edit(exported, sub, summary={"x": 1}, summary_version=1), rf": lines {first + 1}-\d+: the database"
    )


def test_a_session_count_that_does_not_match_is_refused(tmp_path, exported):
    end = json.loads(exported[-1])
    end["counts"]["claude_code_session"] = 3
    _import_fails(tmp_path, [*exported[:-1], json.dumps(end) + "\n"], rf":{len(exported)}: the end record counts")
    index = _line_of(exported, "claude_code_session")
    _import_fails(tmp_path, [*exported[:index], *exported[index + 1 :]], rf":{len(exported) - 1}: the end record")


def test_a_session_that_does_not_read_back_as_written_is_refused(tmp_path, exported):
    # The same time in another offset: stored, but read back in UTC, so not the record the file holds.
    index = _line_of(exported, "claude_code_session", 3)
    created = dt.datetime.fromisoformat(json.loads(exported[index])["created_at"])
    shifted = created.astimezone(dt.timezone(dt.timedelta(hours=1))).isoformat()
    _import_fails(
        tmp_path,
        _edit(exported, index, created_at=shifted),
        r"the claude_code_session records do not read back as the file holds them",
    )
