"""Every read and stream against the acknowledged history, through a ``kill -9`` and a restore.

Writers append to three agents (two each), readers read whole timelines over REST and one
live stream per agent follows it, against a real server on this run's database. In the
middle the test takes a data snapshot under load, SIGKILLs the server and starts it again,
then restores the snapshot under load (``manage.py restore`` in a process of its own: the
write fence holds the writers back, every agent gets a new epoch, rows acknowledged after
the snapshot are legitimately gone). tests/support/history_check.py then checks every
recorded operation: no row lost, duplicated, reordered or phantom, and every stream's rows a
run of its epoch's committed history. The second test serves the same workload with a
test-only fault (tests/support/lossy_settings.py drops every 50th acknowledged append's last
row) and asserts the checker reports the lost rows, so the first test can fail.
"""

from __future__ import annotations

import time

import pytest

from tests.process.history_workload import Workload
from tests.process.live_support import ServerProcess
from tests.support import lossy_rows
from tests.support.history_check import LOST, STREAM, Restore, check, summary

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

AGENTS = ["elle-0", "elle-1", "elle-2"]
PHASE_SECONDS = 2


def serve(tmp_path, scratch_db, **env) -> tuple[ServerProcess, str]:
    server = ServerProcess(tmp_path, database=scratch_db(migrated=True), env=env)
    token = server.setup(AGENTS)["token"]
    return server.start(), token


def snapshot(server: ServerProcess, workload: Workload) -> tuple[str, dict[str, str], float, float]:
    """A data snapshot taken under load: its name, the agents' epochs, and when it began and ended."""
    epochs = workload.epochs()
    began = time.monotonic()
    name = server.manage("snapshot").split("Data snapshot ", 1)[1].split()[0]
    return name, epochs, began, time.monotonic()


def restore(server: ServerProcess, workload: Workload, taken: tuple[str, dict[str, str], float, float]) -> None:
    """Restore the snapshot under load and record, per agent, the epoch it began."""
    name, base_epochs, began, ended = taken
    server.manage("restore", "--from", name, timeout=180)
    after = workload.epochs()
    for agent in AGENTS:
        assert after[agent] != base_epochs[agent], "a restore gives every agent a new epoch"
        workload.history.restores.append(Restore(agent, base_epochs[agent], after[agent], began, ended))


def run(server: ServerProcess, token: str) -> Workload:
    """The workload through a snapshot, a kill -9 and restart, and a restore of that snapshot."""
    workload = Workload(server, token, AGENTS).start()
    try:
        workload.run_for(PHASE_SECONDS)
        taken = snapshot(server, workload)
        workload.run_for(PHASE_SECONDS)
        server.kill()
        server.start()
        workload.run_for(PHASE_SECONDS)
        restore(server, workload, taken)
        workload.run_for(PHASE_SECONDS)
    finally:
        workload.finish()
    return workload


def test_every_read_and_stream_matches_the_acknowledged_history_through_a_kill_and_a_restore(tmp_path, scratch_db):
    server, token = serve(tmp_path, scratch_db)
    try:
        workload = run(server, token)
    finally:
        server.stop()
    history = workload.history

    assert workload.unexpected == []
    anomalies = check(history)
    assert anomalies == [], summary(anomalies)
    # The check had something to check: acknowledged appends and reads in both epochs of each
    # agent, the streams' rows, and each stream told of the restore by a reset.
    restored = {restore.epoch for restore in history.restores}
    for epochs in (restored, {restore.base_epoch for restore in history.restores}):
        assert sum(len(a.items) for a in history.appends if a.ok and a.epoch in epochs) >= 100
        assert {read.agent for read in history.reads if read.epoch in epochs} == set(AGENTS)
    assert sum(len(segment.rows) for segment in history.segments) >= 200
    assert {s.agent for s in history.segments if s.reset and s.epoch in restored} == set(AGENTS)
    # The restore rolled back rows acknowledged after the snapshot: the epochs made that no anomaly.
    ended = max(restore.snapshot_completed for restore in history.restores)
    base_epochs = {restore.base_epoch for restore in history.restores}
    assert sum(len(a.items) for a in history.appends if a.ok and a.epoch in base_epochs and a.invoked > ended) >= 50


def test_the_check_reports_rows_a_faulty_server_lost(tmp_path, scratch_db):
    server, token = serve(tmp_path, scratch_db, DJANGO_SETTINGS_MODULE="tests.support.lossy_settings")
    workload = Workload(server, token, AGENTS).start()
    try:
        workload.run_for(PHASE_SECONDS, at_least=300)
    finally:
        workload.finish()
        server.stop()

    assert workload.unexpected == []
    history = workload.history
    anomalies = check(history)
    lost = [anomaly for anomaly in anomalies if anomaly.kind == LOST]
    assert lost, summary(anomalies)
    # The rows the fault dropped (one per 50 appends committed, every append here was answered)
    # are missing from the final reads, and the checker names each of them.
    final = {read.agent: {item for _, item in read.rows} for read in history.reads}  # the last read wins
    acknowledged = [append for append in history.appends if append.ok]
    missing = {item for a in acknowledged for item in a.items if item not in final[a.agent]}
    assert len(missing) == len(acknowledged) // lossy_rows.EVERY > 0
    assert all(any(f"{item}," in anomaly.detail for anomaly in lost) for item in missing), summary(anomalies)
    # Only losses: the fault drops rows, it neither adds nor moves any (a stream could only
    # stall at the missing row, or skip it).
    assert {anomaly.kind for anomaly in anomalies} <= {LOST, STREAM}, summary(anomalies)
