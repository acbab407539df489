"""The README's "First steps", run as written against a server started the way `make serve` starts it.

Every ```sh and ```python block of that section runs in order in one bash (the Python block through
this interpreter), with two mechanical changes only: the server's real port for 8000 and this
interpreter for `.venv/bin/python`. The live stream's `curl -N` runs in the background until the
Python client's append reaches it, so the stream is proven to deliver the catch-up and a live row.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, Server, isolated_env, wait_for

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

README = REPO / "README.md"
SECTION = "## First steps"


def walkthrough_blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block in the README's first-steps section, in order."""
    text = README.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"```(sh|python)\n(.*?)```", text[start:end], flags=re.DOTALL)


def walkthrough_script(base_url: str, stream_out: Path) -> str:
    """One bash script running every block; the stream's curl goes to the background into ``stream_out``."""
    lines = ["set -euo pipefail"]
    for language, code in walkthrough_blocks():
        code = code.replace("http://127.0.0.1:8000", base_url).replace(".venv/bin/python", sys.executable)
        if language == "python":
            lines.append(f"{sys.executable} - <<'PYTHON'\n{code}PYTHON")
            continue
        for line in code.splitlines():
            if "/timeline/stream" in line:
                line = f"{line} > {stream_out} 2>&1 &"
            lines.append(line)
    return "\n".join(lines) + "\n"


def test_the_readme_walkthrough_creates_appends_reads_and_streams(tmp_path, scratch_db):
    blocks = walkthrough_blocks()
    assert [language for language, _ in blocks].count("python") == 1
    assert any("/timeline/stream" in code for language, code in blocks if language == "sh")
    database = scratch_db(migrated=True)
    env = isolated_env(tmp_path, CHARTR_COLLECTSTATIC="0", **database.env())
    stream_out = tmp_path / "stream.out"
    with Server(env, tmp_path / "serve.log", command="entrypoint") as server:
        # The first start's admin password is where the README says (the config dir's chartr/).
        assert (tmp_path / "config" / "chartr" / "initial-admin-password").is_file()
        walk = subprocess.Popen(
            ["bash", "-c", walkthrough_script(server.base_url, stream_out)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = walk.communicate(timeout=120)
            assert walk.returncode == 0, f"{out}\n{err}"
            assert '"agent_id":"agent-1"' in out.replace(" ", "")
            assert "Refunds are off by a cent" in out and "Looking at refunds.py" in out
            assert "['user_message', 'assistant_message', 'user_message']" in out
            assert "3 Run the tests" in out
            # The stream sent the two rows it caught up on, then the one the Python client appended.
            wait_for(lambda: "id: 3" in stream_out.read_text(), timeout=30, what="seq 3 on the README's stream")
            stream = stream_out.read_text()
            committed = re.findall(r"^id: (\d+)\nevent: committed$", stream, flags=re.MULTILINE)
            assert [int(seq) for seq in committed] == [1, 2, 3], stream
        finally:
            os.killpg(walk.pid, signal.SIGTERM)  # the background curl still follows the stream
            walk.wait(timeout=10)
    (head,) = database.query("SELECT head_seq FROM timeline_head WHERE agent_id = 'agent-1'")
    assert head == (3,)
