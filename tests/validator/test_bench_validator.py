"""The validator benchmark's dataset mode runs end to end and pairs each round's timings (its figures are read by people)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from scripts import bench_validator as bench

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_validator.py"


def test_paired_turns_time_every_contender_on_a_part_back_to_back_once_per_round() -> None:
    parts, names = ["mixed", "valid", "invalid"], ["ours", "fastjsonschema", "jsonschema"]
    orders = set()
    for r in range(12):
        order = bench._paired_turns(parts, names, r)
        assert sorted(order) == sorted((p, n) for p in parts for n in names)  # each timing once
        for i in range(0, len(order), len(names)):  # a part's timings are adjacent
            assert len({part for part, _ in order[i:i + len(names)]}) == 1
        orders.add(tuple(order))
    assert len(orders) > 1  # shuffled anew, so no contender always follows the same one


def test_paired_ratios_compare_timings_of_the_same_round_not_the_medians() -> None:
    # A load burst in round 2 slows both alike: the per-round ratio stays 2, the ratio of medians does not.
    peer, ours = [2.0, 2.0, 20.0, 2.2], [1.0, 1.0, 10.0, 1.1]
    assert bench.paired_ratios(peer, ours) == pytest.approx({"median": 2.0, "min": 2.0, "max": 2.0})
    assert bench.paired_ratios([3.0, 1.0, 2.0], [1.0, 1.0, 1.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}


def test_dataset_mode_reports_each_part_with_paired_rounds_against_a_peer() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalogs = Path(tmp) / "catalogs"
        catalogs.mkdir()
        for name in ("mcp-server-git.json", "arxiv-mcp-server.json"):
            shutil.copy(ROOT / "fixtures" / "catalogs" / name, catalogs / name)
        raw = Path(tmp) / "figures.json"
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--dataset", "--quick", "--peers", "jsonschema",
             "--catalogs", str(catalogs), "--json", str(raw)],
            capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "verdicts differing from our label: ours 0, jsonschema 0" in done.stdout
        summary = json.loads(raw.read_text())["summary"]
    assert set(summary) == {"mixed", "valid", "invalid"}
    for part, row in summary.items():
        paired = row["paired"]["jsonschema"]
        assert 0 < paired["min"] <= paired["median"] <= paired["max"], part
        assert row["ours"]["median"] > 0 and row["jsonschema"]["median"] > 0
        assert f"paired rounds {paired['median']:.2f}x" in done.stdout
