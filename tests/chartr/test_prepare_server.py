"""The static-files fingerprint that lets a restart skip collectstatic."""

from __future__ import annotations

import os

from chartr.management.commands.prepare_server import static_sources_fingerprint


def test_fingerprint_is_stable_and_changes_when_a_source_file_changes(settings, tmp_path):
    asset = tmp_path / "site.css"
    asset.write_text("body { color: black }")
    settings.STATICFILES_DIRS = [tmp_path]
    before = static_sources_fingerprint()
    assert static_sources_fingerprint() == before

    stat = asset.stat()
    os.utime(asset, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = static_sources_fingerprint()
    assert touched != before

    (tmp_path / "new.js").write_text("1")
    assert static_sources_fingerprint() not in (before, touched)
