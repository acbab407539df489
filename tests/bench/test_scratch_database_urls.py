"""The scratch databases of the benches and process tests, when DATABASE_URL carries a
psycopg option libpq does not know (``prepare_threshold``): the admin URL psycopg connects
with leaves it out, and the scratch database's URL, which chartr runs on, keeps it."""

from __future__ import annotations

from tests.support.processes import ScratchDatabase, libpq_url, postgres_admin_url

URL = "postgres://postgres@db.example:5432/chartr_x?prepare_threshold=0&sslmode=prefer"


def test_libpq_url_keeps_libpqs_options_only():
    assert libpq_url(URL) == "postgres://postgres@db.example:5432/chartr_x?sslmode=prefer"
    assert libpq_url("postgres://postgres@db.example/chartr_x") == "postgres://postgres@db.example/chartr_x"


def test_the_admin_url_leaves_out_what_psycopg_cannot_connect_with(monkeypatch, tmp_path):
    monkeypatch.delenv("CHARTR_TEST_POSTGRES_URL", raising=False)
    monkeypatch.setenv("DATABASE_URL", URL)
    assert postgres_admin_url() == "postgres://postgres@db.example:5432/postgres?sslmode=prefer"
    scratch = ScratchDatabase("postgresql", tmp_path, purpose="bench")
    assert scratch.admin_url == postgres_admin_url()
    assert scratch.url == f"postgres://postgres@db.example:5432/{scratch.name}?prepare_threshold=0&sslmode=prefer"
