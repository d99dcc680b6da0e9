"""The README's two quick-start commands stay true: CI runs the same test command, and the
main-job command runs the demo that tests/proxy/test_readme_demo.py checks."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.*?)\n```", section, re.S)


def test_quick_start_has_exactly_two_commands():
    install_and_run, run_tests = _quick_start_commands()
    assert "pip install -e '.[test]'" in install_and_run and "bash scripts/demo.sh" in install_and_run
    assert run_tests == ".venv/bin/python -m pytest"


def test_ci_runs_the_readme_test_command_verbatim():
    _, run_tests = _quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert run_tests in ci, ".ci/run must run the README's test command as written"
    assert any("pip install" in line and "-e '.[test]'" in line for line in ci), "CI installs from the project's files"
