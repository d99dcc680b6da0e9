"""Shared fixtures for the validator tests: evidence tallies printed at the end of the run.

Tests that gather evidence (the JSON Schema Test Suite runner, the differential
tests, the ECMAScript pattern corpus) record counts in the session ``evidence``
fixture; ``pytest_terminal_summary`` prints them after the test results, so a
CI log always says how much was actually checked (and what was skipped, and why).
"""

from __future__ import annotations

from collections import Counter

import pytest

EVIDENCE = pytest.StashKey[dict]()


class Evidence:
    """Named counters plus free-text notes, in the order they were first touched."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter] = {}
        self.notes: dict[str, list[str]] = {}

    def count(self, section: str, name: str, n: int = 1) -> None:
        self.counts.setdefault(section, Counter())[name] += n

    def note(self, section: str, text: str) -> None:
        lines = self.notes.setdefault(section, [])
        if text not in lines:
            lines.append(text)

    def sections(self) -> list[str]:
        return list(dict.fromkeys([*self.counts, *self.notes]))


def _evidence(config: pytest.Config) -> Evidence:
    found = config.stash.get(EVIDENCE, None)
    if found is None:
        found = config.stash[EVIDENCE] = Evidence()
    return found


@pytest.fixture(scope="session")
def evidence(request: pytest.FixtureRequest) -> Evidence:
    return _evidence(request.config)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    found = config.stash.get(EVIDENCE, None)
    if found is None or not found.sections():
        return
    terminalreporter.section("validator evidence")
    for section in found.sections():
        counts = found.counts.get(section)
        if counts:
            terminalreporter.write_line(f"{section}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for text in found.notes.get(section, []):
            terminalreporter.write_line(f"{section}: {text}")
