"""Appends/s and live delivery latency through nginx, with one chartr instance and then two.

    .venv/bin/python bench/multi_instance.py                     # Redis fan-out, about a minute
    .venv/bin/python bench/multi_instance.py --transport postgres
    .venv/bin/python bench/multi_instance.py --smoke             # seconds; proves the path runs

Needs PostgreSQL (a scratch database on the server of DATABASE_URL, or
127.0.0.1:5432, created and dropped), Debian's nginx, and Redis for the Redis
transport. Each fleet starts N gunicorn instances (one worker each, the
production worker class) on loopback ports, the same database, and nginx in
front of them serving deploy/nginx/chartr.conf (tests/support/balancer.py),
then measures, every request through nginx:

- delivery: S subscribers stream one agent (spread over the instances by
  the balancer); one row is appended at a time, and the time from just before
  the POST to each subscriber's ``committed`` event is taken (each, and the
  last of the S);
- appends: W writer threads append 1-item batches (with item_ids) to agents
  of their own for the given seconds; acknowledged rows per second.

Then it prints the 2-instance figure over the 1-instance one. The client runs
on the same cores as the servers and nginx: on a 2-core machine two
instances show that the deployment is correct, not that it is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.process.live_support import SETUP_SCRIPT, EventReader  # noqa: E402
from tests.support.balancer import Nginx, free_port, nginx_binary  # noqa: E402
from tests.support.processes import (  # noqa: E402
    REDIS_URL,
    ScratchDatabase,
    Server,
    isolated_env,
    postgres_available,
    python,
    redis_available,
)

PROFILES = {
    "default": {"seconds": 8.0, "writers": 4, "subscribers": 20, "deliveries": 40},
    "smoke": {"seconds": 1.0, "writers": 2, "subscribers": 2, "deliveries": 3},
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_instances(count: int, root: Path, database: ScratchDatabase, transport: str) -> list[Server]:
    transport_env = {"CHARTR_LIVE_TRANSPORT": transport}
    if transport == "redis":
        transport_env["CHARTR_REDIS_URL"] = REDIS_URL
    servers = []
    for index in range(count):
        env = isolated_env(
            root / f"i{index}",
            DATABASE_URL=database.url,
            XDG_CONFIG_HOME=str(root / "config"),
            CHARTR_BIND=f"127.0.0.1:{free_port()}",
            CHARTR_WORKERS="1",
            CHARTR_ACCESS_LOG="0",
            CHARTR_LIVE_POLL_SECONDS="30",
            **transport_env,
        )
        command = [sys.executable, "-m", "gunicorn", "--config", "gunicorn.conf.py"]
        servers.append(Server(env, root / f"i{index}.log", command=command, start_timeout=90))
    for server in servers:
        server.launch()
    for server in servers:
        server.wait_ready()
    return servers


def measure_delivery(balancer: Nginx, token: str, agent: str, *, subscribers: int, deliveries: int) -> dict:
    arrivals: list[dict[int, float]] = [{} for _ in range(subscribers)]
    connected = threading.Barrier(subscribers + 1, timeout=60)
    stop = threading.Event()

    def subscribe(index: int) -> None:
        with httpx.Client() as client:
            reader = EventReader(client, balancer.url(f"/api/v1/agents/{agent}/timeline/stream"), token=token)
            reader.stop_when = stop.is_set
            try:
                reader.next()  # the opening snapshot: subscribed
                connected.wait()
                while not stop.is_set():
                    event = reader.next()
                    if event.event == "committed":
                        arrivals[index][event.data["seq"]] = time.perf_counter()
            except (EOFError, httpx.HTTPError):
                pass
            finally:
                reader.close()

    threads = [threading.Thread(target=subscribe, args=(i,), daemon=True) for i in range(subscribers)]
    for thread in threads:
        thread.start()
    connected.wait()
    each, last = [], []
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=20) as client:
        for n in range(deliveries):
            sent = time.perf_counter()
            response = client.post(
                balancer.url(f"/api/v1/agents/{agent}/timeline"),
                json={"items": [{"item": {"type": "user_message", "text": "ping"}, "item_id": f"d{n}"}]},
            )
            response.raise_for_status()
            seq = response.json()["rows"][0]["seq"]
            deadline = time.monotonic() + 20
            while any(seq not in got for got in arrivals) and time.monotonic() < deadline:
                time.sleep(0.001)
            times = [(got[seq] - sent) * 1000 for got in arrivals if seq in got]
            if len(times) < subscribers:
                raise RuntimeError(f"only {len(times)} of {subscribers} subscribers got seq {seq}")
            each.extend(times)
            last.append(max(times))
            time.sleep(0.02)
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    return {
        "each_p50_ms": statistics.median(each),
        "each_p99_ms": percentile(each, 0.99),
        "last_p50_ms": statistics.median(last),
        "last_p99_ms": percentile(last, 0.99),
    }


def measure_appends(balancer: Nginx, token: str, agents: list[str], *, seconds: float) -> dict:
    counts = [0] * len(agents)
    errors = [0] * len(agents)
    start_at = time.monotonic() + 0.2
    end_at = start_at + seconds

    def write(index: int) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=20) as client:
            url = balancer.url(f"/api/v1/agents/{agents[index]}/timeline")
            time.sleep(max(start_at - time.monotonic(), 0))
            n = 0
            while time.monotonic() < end_at:
                item = {"item": {"type": "user_message", "text": "x"}, "item_id": f"a{index}-{n}"}
                n += 1
                try:
                    ok = client.post(url, json={"items": [item]}).status_code in (200, 201)
                except httpx.HTTPError:
                    ok = False
                counts[index] += ok
                errors[index] += not ok

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(agents))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"appends_per_s": sum(counts) / seconds, "append_errors": sum(errors)}


def setup(root: Path, database: ScratchDatabase, agents: list[str]) -> str:
    """Create the agents and a token (one run of the tests' setup script); returns the token."""
    env = isolated_env(root / "setup", DATABASE_URL=database.url, XDG_CONFIG_HOME=str(root / "config"))
    result = python(SETUP_SCRIPT, json.dumps({"agents": agents}), env=env)
    line = next((line for line in result.stdout.splitlines() if line.startswith("SETUP ")), None)
    if line is None:
        raise RuntimeError(f"setup failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(line.split(" ", 1)[1])["token"]


def fleet_agents(count: int, profile: dict) -> tuple[str, list[str]]:
    return f"live-{count}", [f"w{count}-{i}" for i in range(profile["writers"])]


def run_fleet(count: int, root: Path, database: ScratchDatabase, transport: str, profile: dict, token: str) -> dict:
    live_agent, writer_agents = fleet_agents(count, profile)
    servers = start_instances(count, root / f"fleet{count}", database, transport)
    balancer = Nginx(root / f"nginx{count}", [int(s.env["CHARTR_BIND"].rsplit(":", 1)[1]) for s in servers])
    (root / f"nginx{count}").mkdir()
    try:
        balancer.start()
        figures = {"instances": count}
        figures |= measure_delivery(
            balancer, token, live_agent, subscribers=profile["subscribers"], deliveries=profile["deliveries"]
        )
        figures |= measure_appends(balancer, token, writer_agents, seconds=profile["seconds"])
        return figures
    finally:
        balancer.stop()
        for server in servers:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=("redis", "postgres"), default="redis")
    parser.add_argument("--smoke", action="store_true", help="tiny profile: proves the path runs")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    profile = PROFILES["smoke" if args.smoke else "default"]
    if nginx_binary() is None:
        sys.exit("nginx is not installed (apt-get install nginx-light)")
    if not postgres_available():
        sys.exit("PostgreSQL is not reachable")
    if args.transport == "redis" and not redis_available():
        sys.exit(f"Redis is not reachable at {REDIS_URL}")

    root = Path(tempfile.mkdtemp(prefix="chartr-multi-bench-"))
    database = ScratchDatabase("postgresql", root / "db", purpose="bench")
    try:
        database.create().migrate()
        agents = [
            agent for count in (1, 2) for live, writers in [fleet_agents(count, profile)] for agent in [live, *writers]
        ]
        token = setup(root, database, agents)
        fleets = [run_fleet(count, root, database, args.transport, profile, token) for count in (1, 2)]
    finally:
        database.drop()
        shutil.rmtree(root, ignore_errors=True)

    print(f"transport {args.transport}, {os.cpu_count()} CPUs, every request through nginx")
    for r in fleets:
        print(
            f"instances {r['instances']}: appends {r['appends_per_s']:8.1f} rows/s ({r['append_errors']} errors)   "
            f"delivery to {profile['subscribers']} subscribers: each p50 {r['each_p50_ms']:6.1f} ms "
            f"p99 {r['each_p99_ms']:6.1f} ms, last p50 {r['last_p50_ms']:6.1f} ms p99 {r['last_p99_ms']:6.1f} ms"
        )
    one, two = fleets
    ratios = {
        key: two[key] / one[key] if one[key] else float("nan")
        for key in ("appends_per_s", "each_p50_ms", "each_p99_ms", "last_p50_ms", "last_p99_ms")
    }
    print("2 instances / 1: " + ", ".join(f"{key} x{value:.2f}" for key, value in ratios.items()))
    if args.json:
        args.json.write_text(json.dumps({"transport": args.transport, "fleets": fleets, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
