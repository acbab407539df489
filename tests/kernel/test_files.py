"""kernel.files.replaced_atomically: the target is replaced whole, or not at all."""

from __future__ import annotations

import pytest

from kernel.files import replaced_atomically


@pytest.mark.parametrize("sync", [True, False])
def test_the_file_written_replaces_the_target_and_nothing_else_is_left(tmp_path, sync):
    target = tmp_path / "out.jsonl.gz"
    target.write_text("old")
    with replaced_atomically(target, sync=sync) as tmp:
        assert tmp.parent == tmp_path and tmp.name.endswith(".gz") and tmp != target
        tmp.write_text("new")
        assert target.read_text() == "old"
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl.gz"]


def test_an_error_keeps_the_target_and_removes_the_temporary_file(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), replaced_atomically(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("cut short")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
