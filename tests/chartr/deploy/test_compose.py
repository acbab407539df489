"""compose.yaml: chartr with named volumes for /data and /config, PostgreSQL only under its profile,
and the `scale` profile: two instances behind nginx on PostgreSQL and Redis."""

from __future__ import annotations

import re

import yaml

from tests.support.processes import REPO

COMPOSE = REPO / "compose.yaml"


def load() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_chartr_keeps_state_in_two_named_volumes():
    compose = load()
    chartr = compose["services"]["chartr"]
    mounts = dict(volume.split(":", 1)[::-1] for volume in chartr["volumes"])
    assert set(mounts) == {"/data", "/config"}
    assert set(mounts.values()) <= set(compose["volumes"]), "both must be named volumes, not bind mounts"
    assert "profiles" not in chartr
    assert chartr["build"] == "."
    assert "ports" not in chartr, "clients reach chartr through nginx only"


def test_the_single_instance_is_served_through_nginx_on_the_loopback():
    services = load()["services"]
    front = services["front"]
    assert front["image"] == "nginx:stable" and "profiles" not in front
    assert front["ports"] == ["127.0.0.1:8000:80"]
    mounts = {target: source for source, target, _ in (volume.split(":") for volume in front["volumes"])}
    assert mounts["/etc/nginx/conf.d/default.conf"] == "./deploy/nginx/chartr.conf"
    upstream = (REPO / mounts["/etc/nginx/conf.d/upstream.conf"]).read_text()
    assert re.findall(r"^\s*server (\S+);", upstream, re.M) == ["chartr:8000"]
    assert front["depends_on"]["chartr"]["condition"] == "service_healthy"


def test_postgres_is_optional_and_the_documented_url_reaches_it():
    compose = load()
    postgres = compose["services"]["postgres"]
    assert postgres["profiles"] == ["postgres", "scale"]
    assert compose["services"]["chartr"]["depends_on"]["postgres"]["required"] is False
    # Without the profile chartr runs on SQLite in /data; with it, the URL in the header comment.
    database_url = compose["services"]["chartr"]["environment"]["DATABASE_URL"]
    default = re.fullmatch(r"\$\{CHARTR_DATABASE_URL:-(.+)\}", database_url)
    assert default and default[1] == "sqlite:////data/chartr.sqlite3"
    documented = re.search(r"CHARTR_DATABASE_URL=(postgres://\S+)", COMPOSE.read_text())[1]
    user, _, host, port, name = re.fullmatch(r"postgres://(\w+):(\w+)@(\w+):(\d+)/(\w+)", documented).groups()
    env = postgres["environment"]
    assert (user, name, host, port) == (env["POSTGRES_USER"], env["POSTGRES_DB"], "postgres", "5432")
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])


def test_the_snapshots_sidecar_shares_the_volumes_and_snapshots_only_on_change():
    compose = load()
    sidecar, chartr = compose["services"]["snapshots"], compose["services"]["chartr"]
    assert sidecar["profiles"] == ["snapshots"], "off unless asked for"
    assert sidecar["image"] == chartr["image"]
    assert sidecar["volumes"] == chartr["volumes"]
    assert sidecar["environment"]["DATABASE_URL"] == chartr["environment"]["DATABASE_URL"]
    assert "manage snapshot --if-changed" in " ".join(sidecar["command"])


def test_the_scale_profile_runs_two_alike_instances_behind_nginx():
    services = load()["services"]
    instances = [services["chartr-1"], services["chartr-2"]]
    assert instances[0] == instances[1], "the same image, settings and config for both"
    instance = instances[0]
    assert instance["profiles"] == ["scale"] and instance["image"] == "chartr:local"
    # One secret key and config for both; nothing of /data is shared (each keeps the image's own).
    assert [volume.split(":")[1] for volume in instance["volumes"]] == ["/config"]
    env = instance["environment"]
    assert re.fullmatch(r"postgres://chartr:\S+@postgres:5432/chartr", env["DATABASE_URL"])
    assert env["CHARTR_REDIS_URL"].startswith("redis://redis:6379/")
    assert float(env["CHARTR_DRAIN_SECONDS"]) > 0
    assert "/readyz" in instance["healthcheck"]["test"]
    for service in ("postgres", "redis"):
        assert "scale" in services[service]["profiles"]
        assert instance["depends_on"][service]["condition"] == "service_healthy"

    balancer = services["balancer"]
    assert balancer["image"] == "nginx:stable" and balancer["profiles"] == ["scale"]
    mounts = {target: source for source, target, _ in (volume.split(":") for volume in balancer["volumes"])}
    assert mounts["/etc/nginx/conf.d/default.conf"] == "./deploy/nginx/chartr.conf"
    site = (REPO / mounts["/etc/nginx/conf.d/upstream.conf"]).read_text()
    # The upstream names the two services, on the port the image listens on.
    assert re.findall(r"^\s*server (chartr-\d):8000 ", site, re.M) == ["chartr-1", "chartr-2"]
    assert set(balancer["depends_on"]) == {"chartr-1", "chartr-2"}
