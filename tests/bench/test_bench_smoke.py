"""The timeline benchmark is not a test, but it must keep running end to end.

This runs it in its tiny ``--smoke`` profile (seconds: a few appends and
reads, a real server process) and checks that every case printed a figure
next to its raw baseline. No timing is asserted.

The smoke runs of every bench selected here start together, when the first
test asks (``bench_runs``): each bench works in its own temp dirs, scratch
database and kernel-picked ports, and most of a smoke run waits on its server
processes, so they overlap. Each test then waits for its own run's output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.support.balancer import nginx_binary
from tests.support.processes import postgres_available, redis_available

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
RUN_TIMEOUT = 240


def multi_instance_ready() -> bool:
    return nginx_binary() is not None and postgres_available() and redis_available()


class BenchRun:
    """One bench's ``--smoke`` run in the background, its output in files so nothing blocks on a pipe."""

    def __init__(self, script: str, root: Path, *, json_results: bool = False, extra: tuple[str, ...] = ()):
        root.mkdir(parents=True, exist_ok=True)
        self.results_path = root / "results.json"
        args = [sys.executable, script, "--smoke", *extra]
        args += ["--json", str(self.results_path)] if json_results else []
        self.out, self.err = open(root / "stdout", "w+"), open(root / "stderr", "w+")
        self.popen = subprocess.Popen(args, cwd=REPO_ROOT, stdout=self.out, stderr=self.err, text=True)

    def result(self) -> subprocess.CompletedProcess:
        try:
            self.popen.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self.out.seek(0)
        self.err.seek(0)
        return subprocess.CompletedProcess(self.popen.args, self.popen.returncode, self.out.read(), self.err.read())

    def close(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self.out.close()
        self.err.close()


#: test name -> (bench script, whether it writes --json results[, its other arguments])
BENCHES = {
    "test_bench_smoke_prints_every_case_next_to_its_baseline": ("bench/timeline_bench.py", True),
    "test_multi_instance_bench_smoke_prints_both_fleets_and_their_ratio": ("bench/multi_instance.py", True),
    "test_streams_bench_smoke_prints_threads_rss_and_delivery": ("bench/streams.py", False),
    # The timeline bench's API lines go through httpx, the concurrency bench's through the raw socket client.
    "test_concurrency_bench_smoke_prints_rate_latency_and_server_cpu": (
        "bench/concurrency.py",
        False,
        ("--client", "raw"),
    ),
    "test_peers_bench_smoke_prints_a_cost_per_peer_or_skips_it": ("bench/peers.py", False),
    "test_api_overhead_bench_smoke_prints_server_and_service_cpu": ("bench/api_overhead.py", False),
    "test_claude_store_bench_smoke_prints_append_and_load_next_to_raw": ("bench/claude_store_bench.py", True),
    # The checkout against itself: both sides run, whatever the figures.
    "test_compare_trees_bench_smoke_prints_both_trees_and_their_change": (
        "bench/compare_trees.py",
        False,
        ("--base", str(REPO_ROOT)),
    ),
}


@pytest.fixture(scope="module")
def bench_runs(request, tmp_path_factory):
    """The smoke runs of the benches whose tests are selected, all started at once: test name -> BenchRun."""
    selected = {
        item.name
        for item in request.session.items
        if item.module is request.module and not item.get_closest_marker("skip")  # own_databases on PostgreSQL
    }
    root = tmp_path_factory.mktemp("bench-smoke")
    runs = {}
    try:
        for name, (script, json_results, *extra) in BENCHES.items():
            if name not in selected or ("multi_instance" in script and not multi_instance_ready()):
                continue
            runs[name] = BenchRun(
                script, root / Path(script).stem, json_results=json_results, extra=extra[0] if extra else ()
            )
        yield runs
    finally:
        for run in runs.values():
            run.close()


@pytest.mark.process
def test_bench_smoke_prints_every_case_next_to_its_baseline(bench_runs):
    run = bench_runs["test_bench_smoke_prints_every_case_next_to_its_baseline"]
    completed = run.result()
    results_path = run.results_path
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
@pytest.mark.own_databases
def test_multi_instance_bench_smoke_prints_both_fleets_and_their_ratio(bench_runs):
    if not multi_instance_ready():
        skip_or_fail("the multi-instance bench needs nginx, PostgreSQL and Redis")
    run = bench_runs["test_multi_instance_bench_smoke_prints_both_fleets_and_their_ratio"]
    completed = run.result()
    results_path = run.results_path
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for count in (1, 2):
        assert re.search(rf"instances {count}: appends +{FIGURE} rows/s \(0 errors\)", completed.stdout)
    assert "2 instances / 1: appends_per_s x" in completed.stdout
    results = json.loads(results_path.read_text())
    assert [r["instances"] for r in results["fleets"]] == [1, 2]


def test_streams_bench_smoke_prints_threads_rss_and_delivery(bench_runs):
    completed = bench_runs["test_streams_bench_smoke_prints_threads_rss_and_delivery"].result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for phase in ("idle", "open", "closed"):
        assert re.search(rf"^worker {phase} +threads +\d+ +rss +{FIGURE} MiB$", output, re.M), output
    assert re.search(r"^threads per open stream +[\d.]+ +\(grew by -?\d+ for 5\)$", output, re.M), output
    assert re.search(rf"^delivery to the last of 5 +p50 {FIGURE} ms +p99 {FIGURE} ms", output, re.M), output


@pytest.mark.process
def test_concurrency_bench_smoke_prints_rate_latency_and_server_cpu(bench_runs):
    completed = bench_runs["test_concurrency_bench_smoke_prints_rate_latency_and_server_cpu"].result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    assert re.search(r"^chartr concurrency benchmark: .* client=raw ", output, re.M), output
    for clients in (1, 2):
        for mode in ("separate", "shared"):
            line = (
                rf"^ +{clients} clients {mode} +{FIGURE} rows/s +p50 +{FIGURE} ms +p99 +{FIGURE} ms +"
                rf"server CPU +{FIGURE} ms/request"
            )
            assert re.search(line, output, re.M), f"no figure for {clients} {mode}:\n{output}"


@pytest.mark.process
def test_peers_bench_smoke_prints_a_cost_per_peer_or_skips_it(bench_runs):
    completed = bench_runs["test_peers_bench_smoke_prints_a_cost_per_peer_or_skips_it"].result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for peer in ("eventsourcing", "langgraph-sqlite"):
        if re.search(rf"^{peer} +skipped: ", output, re.M):
            continue
        for case in ("append service CPU/append @100", "read newest 100 p50 @100"):
            line = rf"^{re.escape(case)} +chartr +{FIGURE} ms +{peer} +{FIGURE} ms +cost x{FIGURE} \(spread x{FIGURE}-x{FIGURE}\)$"
            assert re.search(line, output, re.M), f"no {case!r} for {peer}:\n{output}"


@pytest.mark.process
def test_api_overhead_bench_smoke_prints_server_and_service_cpu(bench_runs):
    completed = bench_runs["test_api_overhead_bench_smoke_prints_server_and_service_cpu"].result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for case in ("append 1 item", "read 100 rows"):
        line = (
            rf"^{case} +server CPU/request +{FIGURE} ms +service CPU/call +{FIGURE} ms +"
            rf"cost x{FIGURE} \(spread x{FIGURE}-x{FIGURE}\)$"
        )
        assert re.search(line, output, re.M), f"no figure for {case!r}:\n{output}"


@pytest.mark.process
def test_claude_store_bench_smoke_prints_append_and_load_next_to_raw(bench_runs):
    run = bench_runs["test_claude_store_bench_smoke_prints_append_and_load_next_to_raw"]
    completed = run.result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for case in ("mirror append (store)", "timeline api append (same)"):
        assert re.search(rf"^{re.escape(case)} +{RATE_LINE}", output, re.M), f"no figure for {case!r}:\n{output}"
    assert re.search(rf"^mirror load 300 entries +{LATENCY_LINE}$", output, re.M), output
    results = json.loads(run.results_path.read_text())
    assert [r["case"] for r in results["results"]] == [
        "mirror append (store)",
        "timeline api append (same)",
        "mirror load 300 entries",
    ]


@pytest.mark.process
def test_compare_trees_bench_smoke_prints_both_trees_and_their_change(bench_runs):
    completed = bench_runs["test_compare_trees_bench_smoke_prints_both_trees_and_their_change"].result()
    output = completed.stdout
    assert completed.returncode == 0, f"bench failed:\n{output}\n{completed.stderr}"
    for case in ("append 1 item", "read newest 100"):
        for side in ("base", "head"):
            line = (
                rf"^{case} +{side} +server CPU +{FIGURE} ms +wall +{FIGURE} ms +"
                rf"cost x{FIGURE} of raw \(spread x{FIGURE}-x{FIGURE}\)$"
            )
            assert re.search(line, output, re.M), f"no {side} figure for {case!r}:\n{output}"
        change = rf"^{case} +head/base: server CPU [+-]\d+%, wall [+-]\d+%, cost [+-]\d+%$"
        assert re.search(change, output, re.M), f"no change for {case!r}:\n{output}"
