"""Finding the transcripts of a Claude Code home, keyed as the SDK keys them, and its side files."""

from __future__ import annotations

import pytest

from claude_code.transcripts import NotAClaudeHome, find_transcripts, read_meta
from legacy.jsonl import read_lines
from tests.claude_code import home as claude_home


def _keys(found):
    return [(t.project_key, t.session_id, t.subpath) for t in found.transcripts]


MAIN = (claude_home.PROJECT_KEY, claude_home.SESSION_ID, "")
SUB = (claude_home.PROJECT_KEY, claude_home.SESSION_ID, f"subagents/agent-{claude_home.SUBAGENT_ID}")
OTHER = (claude_home.PROJECT_KEY, claude_home.OTHER_SESSION_ID, "")


def test_a_config_home_a_projects_dir_and_a_project_dir_find_the_same_transcripts(tmp_path):
    projects = claude_home.write_home(tmp_path)
    expected = sorted([MAIN, SUB, OTHER])
    for source in (tmp_path, projects, projects / claude_home.PROJECT_KEY):
        assert sorted(_keys(find_transcripts(source))) == expected


def test_one_session_file_brings_its_subagents(tmp_path):
    projects = claude_home.write_home(tmp_path)
    found = find_transcripts(projects / claude_home.PROJECT_KEY / f"{claude_home.SESSION_ID}.jsonl")
    assert _keys(found) == [MAIN, SUB]
    assert read_meta(found.transcripts[1]) == claude_home.SUBAGENT_META
    assert read_meta(found.transcripts[0]) is None


def test_every_side_file_is_named_with_why(tmp_path):
    claude_home.write_home(tmp_path)
    side = {f.path.relative_to(tmp_path).as_posix(): f.reason for f in find_transcripts(tmp_path).side_files}
    assert set(side) == {
        "todos",
        "file-history",
        "history.jsonl",
        f"projects/{claude_home.PROJECT_KEY}/{claude_home.SESSION_ID}/tool-results",
    }
    assert "prompt history" in side["history.jsonl"]
    assert "tool outputs" in side[f"projects/{claude_home.PROJECT_KEY}/{claude_home.SESSION_ID}/tool-results"]


def test_lines_carry_their_numbers_and_a_cut_last_line_is_marked(tmp_path):
    path = claude_home.write_transcript(tmp_path / "p" / "s.jsonl", claude_home.other_session())
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n" + '{"type":"user","mess')
    (transcript,) = find_transcripts(path).transcripts
    lines = list(read_lines(transcript.path))
    assert [line.lineno for line in lines] == [1, 2, 3, 5]
    assert lines[0].value == claude_home.other_session()[0]
    assert lines[-1].error and lines[-1].truncated


@pytest.mark.parametrize("name", ["missing", "notes.txt"])
def test_a_path_that_is_no_claude_home_is_refused(tmp_path, name):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(NotAClaudeHome):
        find_transcripts(tmp_path / name)
