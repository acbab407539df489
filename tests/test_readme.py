"""The README stays a short front page: what chartr is, the two commands, the first steps, then the docs.

tests/process/test_readme.py runs the first steps against a real server; this checks the shape.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
LIMIT = 12_000


def test_the_readme_is_short_and_says_what_chartr_is_first():
    assert len(README) <= LIMIT, f"README.md is {len(README)} characters (at most {LIMIT}): move reference to docs/"
    opening = README[:600]
    assert "chartr stores what a fleet of AI coding agents does" in opening


def test_its_first_two_commands_are_make_serve_and_make_test():
    first_block = re.search(r"```sh\n(.*?)```", README, flags=re.DOTALL)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands[:2] == ["make serve", "make test"]


def test_the_first_steps_walk_the_main_job_within_6000_characters():
    start = README.index("## First steps")
    end = README.index("\n## ", start + 1)
    assert end <= 6_000, f"the first steps end at character {end}"
    steps = README[start:end]
    for needle in (
        "create_api_token",
        "$API/projects",
        "$API/workspaces",
        "$API/agents",
        "agent-1/timeline",
        "timeline?direction=tail",
        "timeline/stream",
        "from chartr_client import",
        "chartr.follow(",
    ):
        assert needle in steps, needle


def test_every_link_the_readme_makes_exists():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith("http")]
    assert len(local) >= 10
    assert [link for link in local if not (REPO / link).exists()] == []
