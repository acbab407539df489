"""gunicorn.conf.py takes every knob from the environment, with defaults that suit streams."""

from __future__ import annotations

import os
import runpy

import pytest

from tests.support.processes import REPO

KNOBS = (
    "CHARTR_BIND", "CHARTR_WORKERS", "CHARTR_THREADS", "CHARTR_WORKER_CLASS", "CHARTR_TIMEOUT",
    "CHARTR_GRACEFUL_TIMEOUT", "CHARTR_KEEPALIVE", "CHARTR_LOG_LEVEL", "CHARTR_ACCESS_LOG",
    "CHARTR_FORWARDED_ALLOW_IPS", "CHARTR_WORKER_TMP_DIR", "DATABASE_URL", "CHARTR_REDIS_URL", "CHARTR_DRAIN_SECONDS",
    "CHARTR_LIVE_TRANSPORT",
)  # fmt: skip


@pytest.fixture(autouse=True)
def empty_config_dir(monkeypatch, tmp_path):
    # The config's env file writes into os.environ; put it back exactly afterwards.
    saved = dict(os.environ)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield tmp_path / "config" / "chartr"
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def load_config(monkeypatch):
    def load(**env: str) -> dict:
        for name in KNOBS:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(str(REPO / "gunicorn.conf.py"))

    return load


def test_defaults_serve_asgi_on_loopback(load_config):
    config = load_config()
    assert config["bind"] == ["127.0.0.1:8000"]
    assert config["worker_class"] == "chartr.workers.DrainingUvicornWorker"
    assert config["wsgi_app"] == "chartr.asgi:application"
    assert config["workers"] == 1  # embedded SQLite: the in-memory broker is per process
    assert (config["timeout"], config["graceful_timeout"], config["keepalive"]) == (30, 30, 5)
    assert config["loglevel"] == "info" and config["accesslog"] == "-" and config["errorlog"] == "-"
    assert config["control_socket_disable"] is True
    assert config["worker_tmp_dir"] is None


def test_every_knob_comes_from_the_environment(load_config):
    config = load_config(
        CHARTR_BIND="0.0.0.0:9000,unix:/tmp/chartr.sock",
        CHARTR_WORKERS="3",
        CHARTR_THREADS="4",
        CHARTR_TIMEOUT="90",
        CHARTR_GRACEFUL_TIMEOUT="10",
        CHARTR_KEEPALIVE="2",
        CHARTR_LOG_LEVEL="WARNING",
        CHARTR_ACCESS_LOG="0",
        CHARTR_FORWARDED_ALLOW_IPS="10.0.0.2",
        CHARTR_WORKER_TMP_DIR="/dev/shm",
        CHARTR_REDIS_URL="redis://127.0.0.1:6379/0",  # several workers need a transport across them
    )
    assert config["bind"] == ["0.0.0.0:9000", "unix:/tmp/chartr.sock"]
    assert (config["workers"], config["threads"], config["timeout"]) == (3, 4, 90)
    assert (config["graceful_timeout"], config["keepalive"]) == (10, 2)
    assert config["loglevel"] == "warning" and config["accesslog"] is None
    assert config["forwarded_allow_ips"] == "10.0.0.2" and config["worker_tmp_dir"] == "/dev/shm"


def test_more_workers_once_live_updates_fan_out_across_processes(load_config):
    expected = min(2 * (os.cpu_count() or 1), 8)
    assert load_config(DATABASE_URL="postgres://u@db:5432/chartr")["workers"] == expected
    assert load_config(CHARTR_REDIS_URL="redis://127.0.0.1:6379/0")["workers"] == expected
    assert load_config(DATABASE_URL="sqlite:////data/chartr.sqlite3")["workers"] == 1


def test_the_grace_period_outlasts_the_drain_period(load_config):
    assert load_config(CHARTR_DRAIN_SECONDS="10", CHARTR_GRACEFUL_TIMEOUT="30")["graceful_timeout"] == 30
    assert load_config(CHARTR_DRAIN_SECONDS="28.5", CHARTR_GRACEFUL_TIMEOUT="30")["graceful_timeout"] == 34


def test_a_thread_based_worker_class_serves_the_wsgi_application(load_config):
    config = load_config(CHARTR_WORKER_CLASS="gthread", CHARTR_THREADS="8")
    assert config["wsgi_app"] == "chartr.wsgi:application" and config["threads"] == 8


def test_the_config_dir_env_file_is_read_and_the_real_environment_wins(load_config, empty_config_dir):
    empty_config_dir.mkdir(parents=True)
    (empty_config_dir / "chartr.env").write_text(
        "CHARTR_WORKERS=5\nCHARTR_TIMEOUT=120\nCHARTR_REDIS_URL=redis://127.0.0.1:6379/0\n"
    )
    config = load_config(CHARTR_TIMEOUT="45")
    assert (config["workers"], config["timeout"]) == (5, 45)


def test_a_wrong_value_stops_the_config_with_a_message_naming_it(load_config, capsys):
    with pytest.raises(SystemExit) as stopped:
        load_config(CHARTR_WORKERS="0", CHARTR_KEEPALIVE="5s")
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "CHARTR_WORKERS='0': expected an integer from 1 to 64" in err
    assert "CHARTR_KEEPALIVE='5s': expected an integer from 0 to 3600 (seconds)" in err


def test_several_workers_with_the_local_transport_are_refused_with_the_fix(load_config, capsys):
    with pytest.raises(SystemExit):
        load_config(CHARTR_WORKERS="2")
    err = capsys.readouterr().err
    assert "CHARTR_WORKERS=2 with the local live transport" in err
    assert "CHARTR_LIVE_TRANSPORT=redis with CHARTR_REDIS_URL" in err and "CHARTR_WORKERS=1" in err
    with pytest.raises(SystemExit):
        load_config(CHARTR_WORKERS="2", DATABASE_URL="postgres://u@db:5432/chartr", CHARTR_LIVE_TRANSPORT="local")
    assert load_config(CHARTR_WORKERS="2", CHARTR_WORKER_CLASS="gthread")["workers"] == 2  # no live streams under WSGI
    assert load_config(DATABASE_URL="postgres://u@db:5432/chartr", CHARTR_LIVE_TRANSPORT="local")["workers"] == 1
