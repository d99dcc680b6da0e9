"""Published MCP servers for the tests: the capture manifest's launch of one, installed into .cache/ on first use."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts import capture_catalog as capture


def skip(reason: str) -> None:
    """Skip, saying why on stderr too (a skip must be visible in the run's output)."""
    print(f"SKIPPED real-server test: {reason}", file=sys.stderr)
    pytest.skip(reason)


def launch(name: str, workdir: Path) -> Any:
    """The manifest's launch of `name` in `workdir`, installing it into .cache/ first if needed."""
    entry = capture.server_entry(name)
    if entry["registry"] == "npm" and shutil.which("node") is None:
        skip("node is not installed")
    if not capture.is_installed(entry) and entry["registry"] == "npm" and shutil.which("npm") is None:
        skip("npm is not installed")
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return capture.launch_spec(name, workdir, install=True)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        skip(f"could not install {entry['package']}@{entry['version']} (registry unreachable?): {exc}")
