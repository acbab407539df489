"""`migrate_safely` serialises migrations across processes that start at once."""

from __future__ import annotations

import fcntl
import os
import sys
import time

import pytest

from chartr.migration_lock import ADVISORY_LOCK_KEY, sqlite_lock_path
from tests.support.processes import Process, isolated_env, manage, run_engine, wait_for

WAITING = "Another process is applying migrations; waiting"


def migrate_safely(env: dict[str, str], log_path) -> Process:
    return Process([sys.executable, "manage.py", "migrate_safely"], env, log_path)


def test_two_concurrent_starts_on_a_fresh_sqlite_data_dir_both_succeed(tmp_path):
    # What two replicas run before gunicorn: migrate_safely, then ensure_initial_admin.
    env = isolated_env(tmp_path)
    command = [sys.executable, "manage.py", "prepare_server", "--no-collectstatic"]
    first = Process(command, env, tmp_path / "first.log")
    second = Process(command, env, tmp_path / "second.log")
    codes = (first.wait(timeout=90), second.wait(timeout=90))
    outputs = (first.output, second.output)
    assert codes == (0, 0), outputs
    # Exactly one applied everything; the other found nothing left to apply.
    assert sorted("Applying" in out for out in outputs) == [False, True], outputs
    assert any("No migrations to apply" in out for out in outputs), outputs
    assert sum(out.count("Created superuser 'admin'") for out in outputs) == 1, outputs
    assert (tmp_path / "data" / ".locks" / "migrate").is_file()
    check = manage("migrate", "--check", env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    superusers = manage(
        "shell", "-v", "0", "-c",
        "from django.contrib.auth.models import User; print(User.objects.filter(is_superuser=True).count())",
        env=env,
    )  # fmt: skip
    assert superusers.stdout.strip() == "1", superusers.stderr


def test_migrate_safely_waits_while_another_process_holds_the_sqlite_lock(tmp_path):
    env = isolated_env(tmp_path)
    lock_path = sqlite_lock_path(tmp_path / "data" / "chartr.sqlite3")
    assert lock_path == tmp_path / "data" / ".locks" / "migrate"
    lock_path.parent.mkdir(parents=True)
    holder = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    waiter = migrate_safely(env, tmp_path / "waiter.log")
    try:
        wait_for(lambda: WAITING in waiter.output, timeout=60, what="the waiting message")
        time.sleep(0.5)
        assert waiter.popen.poll() is None and "Applying" not in waiter.output
    finally:
        os.close(holder)
    assert waiter.wait(timeout=90) == 0, waiter.output
    assert "Applying registry.0001_initial" in waiter.output


@pytest.mark.postgres
def test_migrate_safely_waits_for_the_advisory_lock_on_postgres(tmp_path, scratch_db):
    if run_engine() != "postgresql":
        pytest.skip("PostgreSQL advisory lock; runs in the PostgreSQL pass (DATABASE_URL=postgres://...)")
    import psycopg

    fresh = scratch_db("postgresql", purpose="migrate_lock")
    holder = psycopg.connect(fresh.url, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
        env = isolated_env(tmp_path, **fresh.env())
        waiter = migrate_safely(env, tmp_path / "waiter.log")
        second = None
        try:
            wait_for(lambda: WAITING in waiter.output, timeout=60, what="the waiting message")
            second = migrate_safely(env, tmp_path / "second.log")
            wait_for(lambda: WAITING in second.output, timeout=60, what="the second waiting message")
            assert waiter.popen.poll() is None and "Applying" not in waiter.output
        finally:
            holder.close()  # ends the session, which releases the lock
        assert waiter.wait(timeout=90) == 0, waiter.output
        assert second.wait(timeout=90) == 0, second.output
        assert sorted("Applying" in p.output for p in (waiter, second)) == [False, True]
        assert manage("migrate", "--check", env=env).returncode == 0
    finally:
        holder.close()
