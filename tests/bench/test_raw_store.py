"""The bench's raw PostgreSQL baseline connects whatever psycopg options DATABASE_URL carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from bench.common import Environment
from bench.raw_store import RawStore

pytestmark = [pytest.mark.skipif("connection.vendor != 'postgresql'"), pytest.mark.django_db]


def test_the_raw_baseline_connects_with_prepare_threshold_in_the_url(monkeypatch, tmp_path: Path):
    # As Django reads ``?prepare_threshold=5`` from DATABASE_URL: an option of psycopg's, not a libpq keyword.
    monkeypatch.setitem(
        connection.settings_dict, "OPTIONS", {**connection.settings_dict["OPTIONS"], "prepare_threshold": 5}
    )
    url = f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}?prepare_threshold=5"
    environment = Environment(tmp_path, {"DATABASE_URL": url}, "postgresql", None, None)
    raw = RawStore(environment)
    try:
        assert raw.execute("SELECT current_database()").fetchone() == (connection.settings_dict["NAME"],)
    finally:
        raw.close()
