"""Print what the captured-catalog tests actually checked, after the results."""

from __future__ import annotations

from tests.catalogs.catalog_support import EVIDENCE


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if not EVIDENCE:
        return
    terminalreporter.section("captured catalog evidence")
    for section, counts in EVIDENCE.items():
        terminalreporter.write_line(f"{section}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
