"""The HTTP benchmark's session mode runs end to end (its figures are read by people, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
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
