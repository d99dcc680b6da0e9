"""The HTTP benchmark's session and A/B modes run end to end (their figures are read by people, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_open_sessions_mode_opens_lists_and_closes_sessions_through_the_gate() -> None:
    catalog = ROOT / "fixtures" / "catalogs" / "mcp-server-git.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_proxy_http.py"), "--open-sessions", "10", "--json",
         "--catalog", str(catalog)],
        capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert set(report) == {"direct json", "gate json -> http json"}
    for row in report.values():
        # every session was opened, listed (the script checks each listing) and closed
        assert row["sessions"] == 10 and row["median_ms"] > 0 and row["cpu_ms_per_session"] > 0


def test_baseline_python_runs_the_baseline_gate_under_the_named_interpreter() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    worktree = Path(tempfile.gettempdir()) / f"mcp-schema-gate-bench-{commit[:12]}"  # as the script names it
    made_here = not worktree.exists()
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "bench_proxy_http.py"), "--baseline-ref", "HEAD",
             "--baseline-python", sys.executable, "--rounds", "1", "--concurrency", "1", "--duration", "0.3",
             "--warmup", "0.1", "--json"],
            capture_output=True, text=True, timeout=300, cwd=ROOT)
    finally:
        if made_here and worktree.exists():  # leave the clone's worktree list as it was
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["sides"] == ["this tree", "HEAD on --baseline-python"]
    version = ".".join(map(str, sys.version_info[:3]))
    for side in report["sides"]:
        # each side names its interpreter, and how it carries libpython, as read from the running process
        assert report["interpreters"][side].startswith(f"{sys.executable}: {version} with ")
        for traffic in ("session c=1", "sessionless c=1"):
            (run,) = report["results"][side][traffic]
            assert run["calls"] > 0 and run["cpu_us_per_call"] > 0


def test_floor_mode_loads_the_gate_a_byte_relay_and_the_server_in_turns() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_proxy_http.py"), "--floor", "--rounds", "2",
         "--concurrency", "1", "--duration", "0.3", "--warmup", "0.1"],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    # the load generator checks every reply (its id, a result that is not an error), so the
    # relay forwarded sessions and sessionless calls alike; each side's latency over the server is printed
    for traffic in ("session c=1", "sessionless c=1"):
        for side in ("this tree", "relay"):
            assert f"{traffic:22}{side:>12} adds " in done.stdout, done.stdout
        assert f"{traffic:22}{'direct json':>12}" in done.stdout


def test_floor_mode_reports_calls_and_cpu_for_each_side_and_refuses_a_baseline() -> None:
    script = [sys.executable, str(ROOT / "scripts" / "bench_proxy_http.py")]
    done = subprocess.run([*script, "--floor", "--rounds", "1", "--concurrency", "1", "--duration", "0.3",
                           "--warmup", "0.1", "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["floor"] is True and report["sides"] == ["this tree", "relay", "direct json"]
    for side in report["sides"]:
        for traffic in ("session c=1", "sessionless c=1"):
            (run,) = report["results"][side][traffic]
            assert run["calls"] > 0 and run["cpu_us_per_call"] > 0
            assert run["calls_per_worker"] == [run["calls"], run["calls"]]  # one worker made every call
    refused = subprocess.run([*script, "--floor", "--baseline-ref", "HEAD"], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert refused.returncode == 2 and "--floor compares this tree's gate with a byte relay" in refused.stderr
