"""The timeline benchmark is not a test, but it must keep running end to end.

This runs it in its tiny ``--smoke`` profile (seconds: a few appends and
reads, a real server process) and checks that every case printed a figure
next to its raw baseline. No timing is asserted.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIGURE = r"[\d,.]+"
RATE_LINE = rf"chartr +{FIGURE} rows/s +raw +{FIGURE} rows/s +cost x{FIGURE}"
LATENCY_LINE = (
    rf"chartr p50 +{FIGURE} ms p99 +{FIGURE} ms +raw p50 +{FIGURE} ms p99 +{FIGURE} ms +cost x{FIGURE} \(p50\)"
)
RATE_CASES = ["append service 1 item/call", "append api 1 item/call", "append api 100 items/call"]
LATENCY_CASES = [
    f"read {path} {direction} @{size}"
    for path in ("selector", "api")
    for size in ("1k", "3k")
    for direction in ("tail", "before", "after")
]
DELIVERY_CASES = ["delivery 3 subscribers (each)", "delivery 3 subscribers (last)"]


@pytest.mark.process
def test_bench_smoke_prints_every_case_next_to_its_baseline(tmp_path):
    results_path = tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, "bench/timeline_bench.py", "--smoke", "--json", str(results_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"

    for case in RATE_CASES:
        assert re.search(rf"^{re.escape(case)} +{RATE_LINE}$", output, re.M), f"no figure for {case!r}:\n{output}"
    for case in LATENCY_CASES:
        assert re.search(rf"^{re.escape(case)} +{LATENCY_LINE}$", output, re.M), f"no figure for {case!r}:\n{output}"
    for direction in ("tail", "before", "after"):
        assert re.search(rf"^ +plan selector {direction} @3k: \S", output, re.M), f"no {direction} plan:\n{output}"
    delivery_skipped = re.search(r"^delivery 3 subscribers +skipped: stream endpoint not available$", output, re.M)
    if not delivery_skipped:
        for case in DELIVERY_CASES:
            assert re.search(rf"^{re.escape(case)} +{LATENCY_LINE}", output, re.M), f"no figure for {case!r}:\n{output}"

    results = json.loads(results_path.read_text())
    measured = [r["case"] for r in results["results"]]
    expected = RATE_CASES[:1] + LATENCY_CASES[:6] + RATE_CASES[1:] + LATENCY_CASES[6:]
    if not delivery_skipped:
        expected += DELIVERY_CASES
    assert measured == expected
    for result in results["results"]:
        assert result["cost"] > 0, result


@pytest.mark.process
def test_multi_instance_bench_smoke_prints_both_rounds_and_their_ratio(tmp_path):
    from tests.conftest import skip_or_fail
    from tests.support.balancer import nginx_binary
    from tests.support.processes import postgres_available, redis_available

    if nginx_binary() is None or not postgres_available() or not redis_available():
        skip_or_fail("the multi-instance bench needs nginx, PostgreSQL and Redis")
    results_path = tmp_path / "multi.json"
    completed = subprocess.run(
        [sys.executable, "bench/multi_instance.py", "--smoke", "--json", str(results_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for count in (1, 2):
        assert re.search(rf"instances {count}: appends +{FIGURE} rows/s \(0 errors\)", completed.stdout)
    assert "2 instances / 1: appends_per_s x" in completed.stdout
    results = json.loads(results_path.read_text())
    assert [r["instances"] for r in results["rounds"]] == [1, 2]


def test_streams_bench_smoke_prints_threads_rss_and_delivery():
    completed = subprocess.run(
        [sys.executable, "bench/streams.py", "--smoke"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=240
    )
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for phase in ("idle", "open", "closed"):
        assert re.search(rf"^worker {phase} +threads +\d+ +rss +{FIGURE} MiB$", output, re.M), output
    assert re.search(r"^threads per open stream +[\d.]+ +\(grew by -?\d+ for 5\)$", output, re.M), output
    assert re.search(rf"^delivery to the last of 5 +p50 {FIGURE} ms +p99 {FIGURE} ms", output, re.M), output


@pytest.mark.process
def test_concurrency_bench_smoke_prints_rate_latency_and_server_cpu():
    completed = subprocess.run(
        [sys.executable, "bench/concurrency.py", "--smoke"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=240
    )
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for clients in (1, 2):
        for mode in ("separate", "shared"):
            line = (
                rf"^ +{clients} clients {mode} +{FIGURE} rows/s +p50 +{FIGURE} ms +p99 +{FIGURE} ms +"
                rf"server CPU +{FIGURE} ms/request"
            )
            assert re.search(line, output, re.M), f"no figure for {clients} {mode}:\n{output}"


@pytest.mark.process
def test_peers_bench_smoke_prints_a_cost_per_peer_or_skips_it():
    completed = subprocess.run(
        [sys.executable, "bench/peers.py", "--smoke"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=240
    )
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for peer in ("eventsourcing", "langgraph-sqlite"):
        if re.search(rf"^{peer} +skipped: ", output, re.M):
            continue
        for case in ("append service CPU/append @100", "read newest 100 p50 @100"):
            line = rf"^{re.escape(case)} +chartr +{FIGURE} ms +{peer} +{FIGURE} ms +cost x{FIGURE} \(spread x{FIGURE}-x{FIGURE}\)$"
            assert re.search(line, output, re.M), f"no {case!r} for {peer}:\n{output}"


@pytest.mark.process
def test_api_overhead_bench_smoke_prints_server_and_service_cpu():
    completed = subprocess.run(
        [sys.executable, "bench/api_overhead.py", "--smoke"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=240
    )
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for case in ("append 1 item", "read 100 rows"):
        line = (
            rf"^{case} +server CPU/request +{FIGURE} ms +service CPU/call +{FIGURE} ms +"
            rf"cost x{FIGURE} \(spread x{FIGURE}-x{FIGURE}\)$"
        )
        assert re.search(line, output, re.M), f"no figure for {case!r}:\n{output}"
